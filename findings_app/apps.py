"""App config for findings_app."""

from django.apps import AppConfig


class FindingsConfig(AppConfig):
    name = "findings_app"
    verbose_name = "Findings"
