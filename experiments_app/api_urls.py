"""JSON API routes for experiments_app (mounted under /api/)."""

from django.urls import path

from . import api

app_name = "experiments-api"
urlpatterns = [
    path("experiments/", api.ExperimentListView.as_view(), name="list"),
    path("experiments/<slug:slug>/", api.ExperimentDetailView.as_view(), name="detail"),
    path("experiments/<slug:slug>/registration/", api.ExperimentRegistrationView.as_view(), name="registration"),
    path("experiments/<slug:slug>/runs/", api.ExperimentRunsView.as_view(), name="runs"),
    path("experiments/<slug:slug>/runs/cancel/", api.ExperimentCancelView.as_view(), name="cancel"),
]
