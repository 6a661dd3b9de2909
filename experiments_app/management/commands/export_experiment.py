"""`manage.py export_experiment SLUG`: put an experiment and its result rows into fixtures/experiments.json."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from experiments_app.models import Experiment
from experiments_app.seed import FIXTURE, FORMAT, REGISTERED_TEXTS, fixture_entry, registered_texts


class Command(BaseCommand):
    help = "Write an experiment's registration and rows into the experiments fixture (replacing its entry)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--fixture", default=str(FIXTURE))

    def handle(self, *args, slug: str, fixture: str, **options):
        experiment = Experiment.objects.filter(slug=slug).first()
        if experiment is None:
            raise CommandError(f"no experiment {slug!r}")
        if experiment.summary and registered_texts().get(slug) != experiment.hypothesis:
            raise CommandError(
                f"{slug}'s hypothesis is reworded: add its registered text, word for word, to "
                f"{REGISTERED_TEXTS.name}'s "
                f'"Registered hypotheses" section as "### {slug} (registered)" and a fenced text block, then export'
            )
        path = Path(fixture)
        data = json.loads(path.read_text()) if path.exists() else {"format": FORMAT, "version": 2, "experiments": []}
        entry = fixture_entry(experiment)
        items = data["experiments"]
        existing = [i for i, e in enumerate(items) if e["slug"] == slug]
        if existing:  # an export again keeps its place (its successors already come after it)
            items[existing[0]] = entry
        else:  # predecessors first, so the seed registers a version after the one it links
            order = {e["slug"]: i for i, e in enumerate(items)}
            items.insert(order[entry["predecessor"]] + 1 if entry.get("predecessor") in order else len(items), entry)
        data["experiments"] = items
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
        self.stdout.write(f"{slug}: {len(entry['records'])} rows written to {path}")
