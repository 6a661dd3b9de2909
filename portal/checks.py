"""System checks that keep a production deployment honest."""

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=False)
def eager_tasks_need_debug(app_configs, **kwargs):
    """Eager tasks run inside the web request: acceptable on a laptop, never in production."""
    if settings.CELERY_TASK_ALWAYS_EAGER and not settings.DEBUG:
        return [
            Error(
                "Celery tasks run eagerly while DEBUG is off.",
                hint="Set CELERY_BROKER_URL (e.g. redis://127.0.0.1:6379/0) and run `make worker`, "
                "or set DEBUG=1 for a local run.",
                id="portal.E001",
            )
        ]
    return []
