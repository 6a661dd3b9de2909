"""The Celery app: JSON only, late acks, time limits, a `default` and a `gpu` queue."""

import os

from celery import Celery, Task
from kombu import Queue
from kombu.exceptions import OperationalError as BrokerError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# The job row each task works on (its first argument is the row's id), so a job the broker refused ends failed.
JOB_ROWS = {
    "benchmarks_app.tasks.ingest_upload": "benchmarks_app.SourceFile",
    "lab_app.tasks.run_lab_job": "lab_app.LabRun",
    "inference.tasks.evaluate_blimp": "inference.EvaluationRun",
}
QUEUE_DOWN = "The job queue (Redis) was unavailable, so this job was never started. Please submit it again."


class QueueUnavailable(Exception):
    """The broker refused a message; the job row (if any) was marked failed. Answered as a 503."""


class PortalTask(Task):
    def apply_async(self, args=None, kwargs=None, **options):
        try:
            return super().apply_async(args, kwargs, **options)
        except BrokerError as exc:
            label = JOB_ROWS.get(self.name)
            if label and args:
                from django.apps import apps

                row = apps.get_model(label).objects.filter(pk=args[0]).first()
                if row is not None and row.status == "queued":
                    row.mark_failed(QUEUE_DOWN)
            raise QueueUnavailable(QUEUE_DOWN) from exc


app = Celery("portal", task_cls=PortalTask)
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
