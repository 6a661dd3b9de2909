"""App config for results."""

from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "results"
    verbose_name = "Results"

    def ready(self):
        from . import signals  # noqa: F401
