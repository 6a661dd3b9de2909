"""Project-level tasks: a trivial round trip used by health checks and the live-worker tests."""

from celery import shared_task


@shared_task(name="portal.tasks.echo")
def echo(value):
    """Return the value unchanged (proves a worker received, ran and answered)."""
    return {"echo": value}
