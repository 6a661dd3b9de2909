"""The Celery app: JSON only, late acks, time limits, a `default` and a `gpu` queue, a sweeper for lost jobs."""

import base64
import json
import os

from celery import Celery, Task
from kombu import Queue
from kombu.exceptions import OperationalError as BrokerError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# The job row each task works on (its first argument is the row's id), so a job the broker refused ends failed.
JOB_ROWS = {
    "benchmarks_app.tasks.ingest_upload": "benchmarks_app.SourceFile",
    "lab_app.tasks.run_lab_job": "lab_app.LabRun",
    "inference.tasks.evaluate": "inference.EvaluationRun",  # every kind (BLiMP, convergence)
}
QUEUE_DOWN = "The job queue (Redis) was unavailable, so this job was never started. Please submit it again."


class QueueUnavailable(Exception):
    """The broker refused a message; the job row (if any) was marked failed. Answered as a 503."""


CRASHED = (
    "The job stopped with an unexpected error ({name}); nothing it was writing was kept. The details are in the "
    "worker's log; please submit it again or report it."
)


class PortalTask(Task):
    def fail_job_row(self, args, message: str, statuses: tuple[str, ...]) -> None:
        """End this task's job row (its id is the first argument) failed, if it is still in one of `statuses`."""
        label = JOB_ROWS.get(self.name)
        if not label or not args:
            return
        from django.apps import apps

        row = apps.get_model(label).objects.filter(pk=args[0]).first()
        if row is not None and row.status in statuses:
            row.mark_failed(message)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """A task that raised must not leave its row `running` (or `queued`) forever: the row ends failed."""
        from billiard.exceptions import WorkerLostError

        if not isinstance(exc, WorkerLostError):  # a lost worker's message is redelivered
            self.fail_job_row(args, CRASHED.format(name=type(exc).__name__), ("queued", "running"))

    def apply_async(self, args=None, kwargs=None, **options):
        try:
            return super().apply_async(args, kwargs, **options)
        except BrokerError as exc:
            self.fail_job_row(args, QUEUE_DOWN, ("queued",))
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


@app.on_after_configure.connect
def schedule_the_sweeper(sender, **_) -> None:
    """Beat embedded in the worker (`celery worker -B`, see `make worker`) sweeps for jobs the broker lost."""
    from django.conf import settings

    period = settings.JOB_SWEEP_SECONDS
    # Expiring after one period keeps sweeps from piling up behind long jobs: the next one is already due.
    sender.conf.beat_schedule = {
        **(sender.conf.beat_schedule or {}),
        "sweep-lost-jobs": {"task": "portal.sweep_lost_jobs", "schedule": period, "options": {"expires": period}},
    }


@app.task(name="portal.sweep_lost_jobs", ignore_result=True, soft_time_limit=60, time_limit=90)
def sweep_lost_jobs() -> dict:
    """Re-send (or, past the limit, fail) jobs queued for over JOB_STALE_SECONDS whose message Redis lost."""
    from django.conf import settings

    from .jobs import requeue_lost_jobs

    return requeue_lost_jobs(settings.JOB_STALE_SECONDS).as_dict()


def messages_in_broker() -> set[tuple[str, object]] | None:
    """(task name, first argument) of every message Redis holds: waiting in a queue, or taken by a worker and not
    yet acknowledged (kombu keeps those in its `unacked` hash until the ack). None when there is no Redis to read.
    """
    broker = str(app.conf.broker_url or "")
    if app.conf.task_always_eager or not broker.startswith(("redis://", "rediss://")):
        return None
    import redis
    from kombu.transport.redis import PRIORITY_STEPS, Channel

    keys = [f"{q.name}{Channel.sep}{step}" if step else q.name for q in app.conf.task_queues for step in PRIORITY_STEPS]
    try:
        client = redis.Redis.from_url(broker, socket_timeout=5, socket_connect_timeout=5)
        with client.pipeline(transaction=True) as pipe:  # one snapshot: a message moves from a queue to unacked
            for key in keys:
                pipe.lrange(key, 0, -1)
            *queued, unacked = pipe.hvals(Channel.unacked_key).execute()
        raw = [item for items in queued for item in items]
    except redis.RedisError as exc:
        raise QueueUnavailable(f"Redis could not be read ({type(exc).__name__}: {exc}).") from exc
    found = set()
    for item, taken in [(item, False) for item in raw] + [(item, True) for item in unacked]:
        try:
            payload = json.loads(item)[0] if taken else json.loads(item)  # unacked: [message, exchange, key]
            body = payload["body"]
            if payload.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args = json.loads(body)[0]
            found.add((payload["headers"]["task"], args[0] if args else None))
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # not a Celery task message of ours
    return found


def override_conf(**options) -> dict:
    """Change Celery options at run time (tests switch eager mode off); returns the previous values.

    The app reads Django settings under the CELERY_ namespace, where the namespaced key wins, so
    overrides must be written under that key too.
    """
    previous = {key: app.conf[key] for key in options}
    app.conf.update({f"CELERY_{key.upper()}": value for key, value in options.items()})
    return previous
