"""Pages of the equilibrium lab."""

from django.urls import path

from . import views

app_name = "lab"
urlpatterns = [
    path("", views.index, name="index"),
    path("jobs/<int:pk>/", views.job_detail, name="job"),
]
