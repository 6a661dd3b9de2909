"""Pages of the findings record."""

from django.urls import path

from portal.views import section_pending

app_name = "findings"
urlpatterns = [path("", section_pending, {"section": "findings", "title": "Findings"}, name="index")]
