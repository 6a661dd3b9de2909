"""`manage.py seed`: load every app's reference data idempotently (safe to run again and again)."""

from importlib import import_module, util

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Load the reference data (findings, result rows, council record, model cards) idempotently."

    def add_arguments(self, parser):
        parser.add_argument("apps", nargs="*", help="Only seed these apps (default: all of SEED_APPS).")

    def handle(self, *args, **options):
        wanted = options["apps"] or settings.SEED_APPS
        for app in settings.SEED_APPS:
            if app not in wanted or util.find_spec(f"{app}.seed") is None:
                continue
            module = import_module(f"{app}.seed")
            summary = module.seed()
            self.stdout.write(f"{app}: {summary}")
