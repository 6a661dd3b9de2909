"""App config for council_app."""

from django.apps import AppConfig


class CouncilConfig(AppConfig):
    name = "council_app"
