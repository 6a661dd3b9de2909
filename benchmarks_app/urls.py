"""Pages of the benchmark tables."""

from django.urls import path

from portal.views import section_pending

app_name = "benchmarks"
urlpatterns = [path("", section_pending, {"section": "benchmarks", "title": "Benchmarks"}, name="index")]
