"""JSON API routes for benchmarks_app (mounted under /api/)."""

from django.urls import path

from . import api

app_name = "benchmarks-api"
urlpatterns = [
    path("benchmarks/uploads/", api.UploadListView.as_view(), name="uploads"),
    path("benchmarks/uploads/<int:pk>/", api.UploadDetailView.as_view(), name="upload"),
    path("benchmarks/tables/", api.TableListView.as_view(), name="tables"),
    path("benchmarks/tables/<slug:slug>/", api.TableDetailView.as_view(), name="table"),
    path("benchmarks/compare", api.CompareView.as_view(), name="compare"),
    path("benchmarks/compare/", api.CompareView.as_view(schema=None)),  # an alias: documented once, without /
    path("results/", api.ResultListView.as_view(), name="results"),
]
