"""Project-level tasks: the lost-job sweeper, and a trivial round trip used by health checks and worker tests."""

from celery import shared_task

from .jobs import requeue_lost_jobs


@shared_task(name="portal.tasks.echo")
def echo(value):
    """Return the value unchanged (proves a worker received, ran and answered)."""
    return {"echo": value}


@shared_task(name="portal.sweep_lost_jobs", ignore_result=True, soft_time_limit=60, time_limit=90)
def sweep_lost_jobs() -> dict:
    """Re-send (or, past the limit, fail) jobs queued for over JOB_STALE_SECONDS whose message Redis lost."""
    from django.conf import settings

    return requeue_lost_jobs(settings.JOB_STALE_SECONDS).as_dict()
