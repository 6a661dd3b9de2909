"""`manage.py load_findings [--refresh]`: load the findings fixture; --refresh overwrites rows edited in the admin."""

from pathlib import Path

from django.core.management.base import BaseCommand

from findings_app.services import FIXTURE_PATH, import_findings, read_fixture


class Command(BaseCommand):
    help = "Load the findings record from the fixture (missing findings only, unless --refresh)."

    def add_arguments(self, parser):
        parser.add_argument("--fixture", type=Path, default=FIXTURE_PATH, help="YAML file (default: %(default)s)")
        parser.add_argument(
            "--refresh", action="store_true", help="Overwrite findings and notes already in the database."
        )

    def handle(self, *args, **options):
        summary = import_findings(read_fixture(options["fixture"]), refresh=options["refresh"])
        self.stdout.write(", ".join(f"{key}: {value}" for key, value in summary.items()))
