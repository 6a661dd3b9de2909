"""JSON API routes of the model registry (mounted under /api/): the models, their imports and evaluations."""

from django.urls import path

from . import api

app_name = "models-api"
urlpatterns = [
    path("models/", api.ModelListView.as_view(), name="models-api"),
    path("models/imports/<int:pk>/", api.ModelImportDetailView.as_view(), name="import-api"),
    path("models/evaluations/<int:pk>/", api.EvaluationDetailView.as_view(), name="evaluation-api"),
    path("models/<slug:slug>/evaluations/", api.QueueEvaluationView.as_view(), name="queue-evaluation-api"),
]
