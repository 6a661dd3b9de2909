"""The Celery app: JSON only, late acks, time limits, a `default` and a `gpu` queue."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="default",
    task_queues=(Queue("default"), Queue("gpu")),
    task_routes={"inference.tasks.*": {"queue": "gpu"}},
    task_track_started=True,
    result_expires=3600,
    broker_connection_retry_on_startup=True,
    broker_transport_options={"visibility_timeout": 3600},
)
app.autodiscover_tasks()


def override_conf(**options) -> dict:
    """Change Celery options at run time (tests switch eager mode off); returns the previous values.

    The app reads Django settings under the CELERY_ namespace, where the namespaced key wins, so
    overrides must be written under that key too.
    """
    previous = {key: app.conf[key] for key in options}
    app.conf.update({f"CELERY_{key.upper()}": value for key, value in options.items()})
    return previous
