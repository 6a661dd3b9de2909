"""App config for models_app: the registry of bundled and uploaded models."""

from django.apps import AppConfig


class ModelsAppConfig(AppConfig):
    name = "models_app"
    verbose_name = "Model registry"
