"""App config for benchmarks_app."""

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "benchmarks_app"
