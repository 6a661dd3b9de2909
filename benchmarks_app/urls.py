"""Pages of the benchmark tables."""

from django.urls import path, re_path

from . import views

app_name = "benchmarks"
urlpatterns = [
    path("", views.index, name="index"),
    path("runs/", views.runs, name="runs"),
    path("runs/<path:run_id>/", views.run_detail, name="run"),
    path("compare/", views.compare_page, name="compare"),
    path("uploads/", views.uploads, name="uploads"),
    re_path(r"^(?P<slug>[-a-z0-9_]+)/download\.(?P<ext>csv|json)$", views.download, name="download"),
    path("<slug:slug>/rows.csv", views.rows_download, name="rows"),
    path("<slug:slug>/", views.detail, name="detail"),
]
