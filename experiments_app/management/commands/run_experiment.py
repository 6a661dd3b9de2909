"""`manage.py run_experiment SLUG`: launch a registered experiment (one training run per arm and seed)."""

from django.core.management.base import BaseCommand, CommandError

from experiments_app import services
from experiments_app.models import Experiment


class Command(BaseCommand):
    help = "Launch an experiment: freeze it and queue one training run per arm and seed (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("slug")

    def handle(self, *args, slug: str, **options):
        experiment = Experiment.objects.filter(slug=slug).first()
        if experiment is None:
            raise CommandError(f"no experiment {slug!r}")
        runs, queued = services.launch(experiment)
        self.stdout.write(f"{slug}: {queued} runs queued, {len(runs)} in all")
        for run in experiment.runs.all():
            self.stdout.write(f"  {run.arm_label} seed {run.seed}: {run.status} {run.progress_message}")
