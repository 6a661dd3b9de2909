"""Re-send the task of job rows left `queued` by a broker that lost their message; fail them past a limit.

A Redis without persistence forgets every queued message when it restarts, while the rows stay `queued`.
Only rows whose message is really gone are re-sent (a long backlog is not a loss), and each row at most
MAX_REQUEUES times, so a job that keeps vanishing ends `failed` with a message instead of waiting forever.
The tasks take the row's id and leave a finished row alone, so a message sent twice does no harm. Each row
holds the id of the message last sent for it (`Job.task_id`), which is what the sweeper looks for in Redis; a row
queued before task ids were stored has none and counts as lost (re-sending it is harmless).
"""

from dataclasses import dataclass, field
from datetime import timedelta

from django.apps import apps
from django.db.models import F
from django.utils import timezone

from .celery import JOB_ROWS, send_by_name, task_ids_in_broker
from .models import JobStatus

MAX_REQUEUES = 3
LOST = (
    "The job queue (Redis) lost this job: it was sent again {count} times and no worker ever started it, "
    "so it was stopped. Please resubmit it."
)


@dataclass
class Sweep:
    resent: list[str] = field(default_factory=list)  # "lab_app.LabRun#5"
    failed: list[str] = field(default_factory=list)
    waiting: int = 0  # queued past the threshold, but their message is still in Redis (a backlog)

    def as_dict(self) -> dict:
        return {"resent": self.resent, "failed": self.failed, "waiting": self.waiting}

    def summary(self) -> str:
        return (
            f"{len(self.resent)} re-sent, {len(self.failed)} failed past {MAX_REQUEUES} re-sends, "
            f"{self.waiting} still waiting in the queue."
        )


def requeue_lost_jobs(older_than_s: float) -> Sweep:
    """Re-send each job row queued for over `older_than_s` seconds whose message the broker no longer holds.

    A row is claimed with a conditional UPDATE before its message goes out, so two sweeps at once never both
    send it. Raises QueueUnavailable when Redis cannot be read (nothing is changed then).
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    in_broker = task_ids_in_broker()  # None: no broker to ask (eager mode), so every stale row counts as lost
    sweep = Sweep()
    for label in dict.fromkeys(JOB_ROWS.values()):
        model = apps.get_model(label)
        task_name = next(name for name, row_label in JOB_ROWS.items() if row_label == label)
        for pk, count, task_id in model.objects.queued_before(cutoff).values_list("pk", "requeue_count", "task_id"):
            if in_broker is not None and task_id and task_id in in_broker:
                sweep.waiting += 1
                continue
            unchanged = model.objects.filter(pk=pk, status=JobStatus.QUEUED, requeue_count=count)
            now = timezone.now()
            if count >= MAX_REQUEUES:
                if unchanged.update(status=JobStatus.FAILED, error=LOST.format(count=count), finished_at=now):
                    sweep.failed.append(f"{label}#{pk}")
            elif unchanged.update(requeue_count=F("requeue_count") + 1, requeued_at=now):
                # QueueUnavailable here means Redis went away again: the row was marked failed, stop sweeping.
                send_by_name(task_name, pk)
                sweep.resent.append(f"{label}#{pk}")
    return sweep
