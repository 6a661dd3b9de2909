"""App config for experiments_app: pre-registered experiments, their training runs, their computed verdicts."""

from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "experiments_app"
    verbose_name = "Experiments"

    def ready(self):
        from . import checks  # noqa: F401  (registers the system checks)
