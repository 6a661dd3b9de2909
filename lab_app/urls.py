"""Pages of the equilibrium lab."""

from django.urls import path

from portal.views import section_pending

app_name = "lab"
urlpatterns = [path("", section_pending, {"section": "lab", "title": "Equilibrium lab"}, name="index")]
