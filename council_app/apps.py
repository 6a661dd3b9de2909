"""App config for council_app."""

from django.apps import AppConfig


class CouncilConfig(AppConfig):
    name = "council_app"
    verbose_name = "Council"

    def ready(self):
        from . import signals

        signals.connect()
