"""App config for lab_app."""

from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab_app"
    verbose_name = "Equilibrium lab"
