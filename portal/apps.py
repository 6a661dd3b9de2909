"""App config for the project's own wiring (health, seed command, shared job model)."""

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
