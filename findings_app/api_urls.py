"""JSON API routes for findings_app (mounted under /api/)."""

from django.urls import path

from . import api

app_name = "findings-api"
urlpatterns = [
    path("findings/", api.FindingListView.as_view(), name="list"),
    path("findings/<str:code>/", api.FindingDetailView.as_view(), name="detail"),
]
