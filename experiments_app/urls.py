"""Pages of the experiments (mounted at /benchmarks/experiments/)."""

from django.urls import path

from . import views

app_name = "experiments"
urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:slug>/", views.detail, name="detail"),
]
