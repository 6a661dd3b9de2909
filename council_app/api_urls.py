"""JSON API routes for council_app (mounted under /api/)."""

from django.urls import path

from . import api

urlpatterns = [
    path("council/", api.CouncilSummaryView.as_view(), name="council-api-summary"),
    path("council/questions/", api.CouncilQuestionsView.as_view(), name="council-api-questions"),
]
