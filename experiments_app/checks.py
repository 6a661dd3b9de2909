"""System checks for the experiments' training slices."""

from django.conf import settings
from django.core.checks import Error, register

SOFT_LIMIT = 600  # experiments_app.tasks.OPTIONS


@register()
def training_slices_fit_their_limits(app_configs, **kwargs):
    """A lease must lapse before Redis redelivers a dead worker's slice (else the redelivered slice finds it held),
    and a slice must end within its task's soft time limit."""
    errors = []
    lease = settings.EXPERIMENT_LEASE_SECONDS
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    if lease >= visibility:
        errors.append(
            Error(
                f"EXPERIMENT_LEASE_SECONDS ({lease}) is not below CELERY_VISIBILITY_TIMEOUT ({visibility}).",
                hint="A redelivered training slice would find its dead worker's lease still held.",
                id="experiments.E001",
            )
        )
    if settings.EXPERIMENT_SLICE_SECONDS >= SOFT_LIMIT:
        errors.append(
            Error(
                f"EXPERIMENT_SLICE_SECONDS ({settings.EXPERIMENT_SLICE_SECONDS}) reaches the slice task's soft time "
                f"limit ({SOFT_LIMIT} s).",
                hint="Keep it about 3 minutes below, for loading the corpus and a stage's closing evaluation.",
                id="experiments.E002",
            )
        )
    return errors
