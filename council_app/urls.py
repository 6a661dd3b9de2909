"""Pages of the council record."""

from django.urls import path

from portal.views import section_pending

app_name = "council"
urlpatterns = [path("", section_pending, {"section": "council", "title": "Council"}, name="index")]
