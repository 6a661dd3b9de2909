"""JSON API routes for inference (mounted under /api/): the model registry and its evaluations."""

from django.urls import path

from . import registry_api

app_name = "inference-api"
urlpatterns = [
    path("models/", registry_api.ModelListView.as_view(), name="models-api"),
    path("models/evaluations/<int:pk>/", registry_api.EvaluationDetailView.as_view(), name="evaluation-api"),
]
