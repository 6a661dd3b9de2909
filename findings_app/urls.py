"""Pages of the findings record: the timeline and one permalink per finding (/findings/F24/)."""

from django.urls import path

from . import views

app_name = "findings"
urlpatterns = [
    path("", views.index, name="index"),
    path("<str:code>/", views.detail, name="detail"),
    path("<str:code>/figures.csv", views.figures_csv, name="figures-csv"),
]
