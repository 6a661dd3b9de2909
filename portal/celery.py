"""The Celery app: JSON only, late acks, time limits, `default`, `gpu` and `train` queues, a sweeper for lost jobs."""

import json
import os

from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery.utils import uuid
from kombu import Queue
from kombu.exceptions import OperationalError as BrokerError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

QUEUE_DOWN = "The job queue (Redis) was unavailable, so this job was never started. Please submit it again."


class QueueUnavailable(Exception):
    """The broker refused a message; the job row (if any) was marked failed. Answered as a 503."""


CRASHED = (
    "The job stopped with an unexpected error ({name}); nothing it was writing was kept. The details are in the "
    "worker's log; please submit it again or report it."
)
TIMED_OUT = "The job exceeded its time limit of {limit:g} s and was stopped."

# The job row each task works on (its first argument is the row's id): PortalTask stores the message's id on it
# and fails it when the task fails; the sweeper re-sends the rows whose message the broker lost.
JOB_ROWS = {
    "benchmarks_app.tasks.ingest_upload": "results.SourceFile",
    "lab_app.tasks.run_lab_job": "lab_app.LabRun",
    "models_app.tasks.evaluate": "models_app.EvaluationRun",  # every kind (BLiMP, convergence)
    "models_app.tasks.import_model": "models_app.ModelImport",
    # the names these tasks had in the inference app, for messages queued before (models_app/tasks.py)
    "inference.tasks.evaluate": "models_app.EvaluationRun",
    "inference.tasks.evaluate_blimp": "models_app.EvaluationRun",
    "inference.tasks.import_model": "models_app.ModelImport",
    "experiments_app.tasks.train_slice": "experiments_app.TrainingRun",  # re-sent with the id alone: its next slice
}


class PortalTask(Task):
    """The base of every task: it owns job-row bookkeeping, so tasks only take an id and call a service.

    Before a message goes out its id is stored on the job row (the sweeper looks for that id in the broker);
    a refused message fails the row; a task that raises (a crash, its soft time limit) ends its row failed.
    """

    show_error_text = False  # staff-only jobs (evaluations) put the exception's text on their row

    def job_rows(self, args):
        """The queryset of this task's job row (its id is the first argument), or None for a task without one."""
        label = JOB_ROWS.get(self.name)
        if not label or not args:
            return None
        from django.apps import apps

        return apps.get_model(label).objects.filter(pk=args[0])

    def fail_job_row(self, args, message: str, statuses: tuple[str, ...]) -> None:
        """End this task's job row failed, if it is still in one of `statuses`."""
        rows = self.job_rows(args)
        row = rows.first() if rows is not None else None
        if row is not None and row.status in statuses:
            row.mark_failed(message)

    def failure_message(self, exc) -> str:
        if isinstance(exc, SoftTimeLimitExceeded | TimeLimitExceeded):
            return TIMED_OUT.format(limit=self.soft_time_limit or self.app.conf.task_soft_time_limit or 0)
        if self.show_error_text:
            return f"{type(exc).__name__}: {exc}"[:2000]
        return CRASHED.format(name=type(exc).__name__)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """A task that raised must not leave its row `running` (or `queued`) forever: the row ends failed."""
        from billiard.exceptions import WorkerLostError

        if not isinstance(exc, WorkerLostError):  # a lost worker's message is redelivered
            self.fail_job_row(args, self.failure_message(exc), ("queued", "running"))

    def apply_async(self, args=None, kwargs=None, task_id=None, **options):
        task_id = task_id or uuid()
        rows = self.job_rows(args)
        if rows is not None:
            rows.update(task_id=task_id)
        try:
            return super().apply_async(args, kwargs, task_id=task_id, **options)
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
    # `train` has its own worker (niced, one thread, see `make worker`), so training never starves the others.
    task_queues=(Queue("default"), Queue("gpu"), Queue("train")),
    task_routes={
        "models_app.tasks.*": {"queue": "gpu"},
        "inference.tasks.*": {"queue": "gpu"},  # the registry's tasks under their old names (models_app/tasks.py)
        "experiments_app.tasks.*": {"queue": "train"},
    },
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


def send_by_name(task_name: str, *args):
    """Queue the task registered under `task_name` (its dotted path) with `args`, as a message addressed by name.

    A service that queues its own job uses this instead of importing the tasks module that imports it, so the two
    never import each other. With a broker the message goes out; in eager mode the task runs here, as always.
    """
    from django.utils.module_loading import import_string

    return import_string(task_name).apply_async(args=list(args))


def task_ids_in_broker() -> set[str] | None:
    """The id of every message Redis holds: waiting in a queue, or taken by a worker and not yet acknowledged
    (kombu keeps those in its `unacked` hash until the ack). None when there is no Redis to read.

    Only each message's headers are read (the id is there); its body, the task's arguments, is never decoded.
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
    except redis.RedisError as exc:
        raise QueueUnavailable(f"Redis could not be read ({type(exc).__name__}: {exc}).") from exc
    found = set()
    for item, taken in [(item, False) for items in queued for item in items] + [(item, True) for item in unacked]:
        try:
            message = json.loads(item)
            found.add((message[0] if taken else message)["headers"]["id"])  # unacked: [message, exchange, key]
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # not a Celery task message
    return found


def override_conf(**options) -> dict:
    """Change Celery options at run time (tests switch eager mode off); returns the previous values.

    The app reads Django settings under the CELERY_ namespace, where the namespaced key wins, so
    overrides must be written under that key too.
    """
    previous = {key: app.conf[key] for key in options}
    app.conf.update({f"CELERY_{key.upper()}": value for key, value in options.items()})
    return previous
