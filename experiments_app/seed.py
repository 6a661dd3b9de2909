"""`manage.py seed` for experiments: the bundled experiments and their result rows (fixtures/experiments.json).

Format: {"format": "eqlm-portal-experiments", "version": 1, "experiments": [{slug, title, hypothesis, arms,
seeds, evaluation, criterion, registered_at, predecessor, launched_at, records: [generic long-format records]}]},
in predecessor order. An experiment that exists is left as it is (its registration never changes); its records
are ingested idempotently, so `make run` shows bundled results with no training step.
"""

import json
from pathlib import Path

from django.conf import settings
from django.utils.dateparse import parse_datetime

from results.models import ResultRow
from results.records import ingest_records

from .models import Experiment
from .services import register_experiment

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "experiments.json"
FORMAT = "eqlm-portal-experiments"


def load_fixture(path: Path = FIXTURE) -> tuple[int, int]:
    """(new experiments, new result rows)."""
    if not path.exists():
        return 0, 0
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not an {FORMAT} fixture")
    created = rows = 0
    for item in data["experiments"]:
        if not Experiment.objects.filter(slug=item["slug"]).exists():
            spec = {k: v for k, v in item.items() if k not in ("records", "launched_at", "summary")}
            if spec.get("registered_at"):
                spec["registered_at"] = parse_datetime(spec["registered_at"])
            experiment = register_experiment(spec, check_files=False)
            if item.get("launched_at"):
                Experiment.objects.filter(pk=experiment.pk).update(launched_at=parse_datetime(item["launched_at"]))
            created += 1
        else:  # a bundled experiment's reader text follows the fixture; its registration never changes
            Experiment.objects.filter(slug=item["slug"]).update(notes=item.get("notes", ""))
        Experiment.objects.filter(slug=item["slug"]).update(summary=item.get("summary", ""))
        if item.get("records"):
            rows += ingest_records(item["records"], source_name=f"fixtures/experiments.json#{item['slug']}")
    return created, rows


def fixture_entry(experiment: Experiment) -> dict:
    """An experiment as the fixture holds it: its registration and its rows as generic records (with their run's
    provenance), for `manage.py export_experiment`."""
    rows = ResultRow.objects.filter(experiment=experiment.slug, step__isnull=True).select_related("arm", "arm__run")
    records = [
        {
            "run": r.arm.run.run_id,
            "experiment": r.experiment,
            "arm": r.arm_label,
            "seed": r.seed,
            "metric": r.metric,
            "value": r.value,
            "unit": r.unit,
            "n": r.n,
            "condition": r.condition,
            "config_hash": r.arm.run.config_hash,
            "git_commit": r.arm.run.git_commit,
            "model_family": r.arm.model_family,
            "recipe": r.arm.recipe,
        }
        for r in rows.order_by("arm_label", "seed", "metric", "condition_key")
    ]
    return {
        "slug": experiment.slug,
        "title": experiment.title,
        "hypothesis": experiment.hypothesis,
        "arms": [{k: v for k, v in arm.items() if k != "hash"} for arm in experiment.arms],
        "seeds": experiment.seeds,
        "evaluation": experiment.evaluation,
        "criterion": experiment.criterion,
        "registered_at": experiment.registered_at.isoformat(),
        "launched_at": experiment.launched_at.isoformat() if experiment.launched_at else None,
        "predecessor": experiment.predecessor.slug if experiment.predecessor_id else None,
        "notes": experiment.notes,
        "summary": experiment.summary,
        "records": [{k: v for k, v in rec.items() if v not in (None, "", {})} for rec in records],
    }


def seed() -> str:
    created, rows = load_fixture()
    return f"{created} new experiments, {rows} new result rows"
