"""Shared model pieces: every long job (ingest, evaluation, solver job) is a row with a status."""

from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JobQuerySet(models.QuerySet):
    def queued_before(self, cutoff):
        """Rows still queued since before `cutoff`, counting from their last re-send (else their creation)."""
        return (
            self.filter(status=JobStatus.QUEUED)
            .alias(queued_at=Coalesce("requeued_at", "created_at"))
            .filter(queued_at__lt=cutoff)
        )


class Job(models.Model):
    """Abstract base for job rows: status, progress (0..1), a message, error text, timestamps."""

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # How often the sweeper (portal/jobs.py) re-sent this job's message because the broker had lost it.
    requeue_count = models.PositiveSmallIntegerField(default=0, editable=False)
    requeued_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The Celery id of the message last sent for this row (PortalTask.apply_async stores it before sending).
    task_id = models.CharField(max_length=64, blank=True, editable=False)

    objects = JobQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)

    def mark_running(self) -> None:
        self.status, self.started_at, self.error = JobStatus.RUNNING, timezone.now(), ""
        self.save(update_fields=["status", "started_at", "error"])

    def report_progress(self, fraction: float, message: str = "") -> None:
        self.progress = max(0.0, min(1.0, float(fraction)))
        self.progress_message = message[:200]
        type(self).objects.filter(pk=self.pk).update(progress=self.progress, progress_message=self.progress_message)

    def mark_done(self) -> None:
        # The last step's message ("solving") is no longer true once the job is done.
        self.status, self.progress, self.finished_at = JobStatus.DONE, 1.0, timezone.now()
        self.progress_message = ""
        self.save(update_fields=["status", "progress", "progress_message", "finished_at"])

    def mark_failed(self, message: str) -> None:
        self.status, self.error, self.finished_at = JobStatus.FAILED, message, timezone.now()
        self.save(update_fields=["status", "error", "finished_at"])
