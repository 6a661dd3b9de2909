"""App config for benchmarks_app."""

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "benchmarks_app"
    verbose_name = "Benchmarks"

    def ready(self):
        from . import signals  # noqa: F401
