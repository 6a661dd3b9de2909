"""Pages of the depth-dial demo and the models registry (mounted at the site root)."""

from django.urls import path

from portal.views import section_pending

app_name = "inference"
urlpatterns = [
    path("demo/", section_pending, {"section": "demo", "title": "Depth dial"}, name="demo"),
    path("models/", section_pending, {"section": "models", "title": "Models"}, name="models"),
]
