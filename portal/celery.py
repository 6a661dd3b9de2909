"""The Celery app: JSON only, late acks, time limits, `default`, `gpu` and `train` queues, a sweeper for lost jobs."""

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


class PortalTask(Task):
    """The base of every task: it owns job-row bookkeeping, so tasks only take an id and call a service.

    Before a message goes out its id is stored on the job row (the sweeper looks for that id in the broker);
    a refused message fails the row; a task that raises (a crash, its soft time limit) ends its row failed.
    """

    show_error_text = False  # staff-only jobs (evaluations) put the exception's text on their row

    def job_rows(self, args):
        """The queryset of this task's job row (its id is the first argument), or None for a task without one."""
        from .jobs import JOB_ROWS

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
    task_routes={"inference.tasks.*": {"queue": "gpu"}, "experiments_app.tasks.*": {"queue": "train"}},
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


def override_conf(**options) -> dict:
    """Change Celery options at run time (tests switch eager mode off); returns the previous values.

    The app reads Django settings under the CELERY_ namespace, where the namespaced key wins, so
    overrides must be written under that key too.
    """
    previous = {key: app.conf[key] for key in options}
    app.conf.update({f"CELERY_{key.upper()}": value for key, value in options.items()})
    return previous
