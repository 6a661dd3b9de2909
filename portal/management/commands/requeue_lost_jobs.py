"""`manage.py requeue_lost_jobs [--older-than N]`: the worker's sweep for jobs Redis lost, run by hand."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.celery import QueueUnavailable
from portal.jobs import requeue_lost_jobs


class Command(BaseCommand):
    help = (
        "Re-send the task of every job queued for over N seconds whose message Redis no longer holds "
        "(a restart without persistence); fail jobs already re-sent too often."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=float,
            default=None,
            metavar="N",
            help="Seconds a job must have been queued (default: JOB_STALE_SECONDS).",
        )

    def handle(self, *args, **options):
        older_than = options["older_than"]
        try:
            sweep = requeue_lost_jobs(settings.JOB_STALE_SECONDS if older_than is None else older_than)
        except QueueUnavailable as exc:
            raise CommandError(str(exc))
        for row in sweep.resent:
            self.stdout.write(f"re-sent {row}")
        for row in sweep.failed:
            self.stdout.write(f"failed {row}")
        self.stdout.write(sweep.summary())
