"""App config for the project's own wiring (health, seed command, shared job model)."""

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self) -> None:
        from . import checks, throttle  # noqa: F401  (registers system checks and login signal receivers)
