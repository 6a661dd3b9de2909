"""JSON API routes for lab_app (mounted under /api/)."""

from django.urls import path

from . import api

urlpatterns = [
    path("lab/solve", api.SolveView.as_view(), name="lab-solve"),
    path("lab/jobs/", api.JobListView.as_view(), name="lab-jobs"),
    path("lab/jobs/<int:pk>/", api.JobDetailView.as_view(), name="lab-job-detail"),
]
