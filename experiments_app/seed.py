"""`manage.py seed` for experiments: the bundled experiments and their result rows (fixtures/experiments.json).

Format: {"format": "eqlm-portal-experiments", "version": 2, "experiments": [{slug, title, hypothesis, arms,
seeds, evaluation, criterion, registered_at, predecessor, launched_at, notes, amended_at, registration:
{registration_hash, hypothesis}, records: [generic long-format records]}]}, in predecessor order. `hypothesis` is
the reader's wording; where it was reworded after registration, `amended_at` dates the rewording
(experiments_app.amendments) and the registered text, word for word, is the working history's: CHANGELOG.md's
"Registered hypotheses" section (REGISTERED_TEXTS), one fenced block per slug. The registered text must hash to
`registration.registration_hash`, or the seed refuses it.

An experiment that exists keeps its registration (it never changes); its notes and reader's wording follow the
fixture, and its records are ingested idempotently, so `make run` shows bundled results with no training step.
"""

import json
import re
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils.dateparse import parse_datetime

from results.models import ResultRow
from results.records import ingest_records

from . import amendments
from .models import Experiment
from .services import register_experiment

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "experiments.json"
FORMAT = "eqlm-portal-experiments"
REGISTERED_TEXTS = Path(settings.BASE_DIR) / "CHANGELOG.md"
_REGISTERED = re.compile(r"^### (?P<slug>[\w-]+) \(registered\)\n.*?^```text\n(?P<text>.*?)\n```$", re.S | re.M)


def registered_texts(path: Path = REGISTERED_TEXTS) -> dict[str, str]:
    """{slug: the hypothesis as registered} for the experiments whose reader's wording is an amendment."""
    return {m["slug"]: m["text"] for m in _REGISTERED.finditer(path.read_text())} if path.exists() else {}


def load_fixture(path: Path = FIXTURE) -> tuple[int, int]:
    """(new experiments, new result rows)."""
    if not path.exists():
        return 0, 0
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not an {FORMAT} fixture")
    created = rows = 0
    registered = registered_texts()
    for item in data["experiments"]:
        registration = dict(item.get("registration") or {})
        if item.get("amended_at"):
            if item["slug"] not in registered:
                raise ValueError(f"{item['slug']}: no registered text in {REGISTERED_TEXTS.name}")
            registration["hypothesis"] = registered[item["slug"]]
        experiment = Experiment.objects.filter(slug=item["slug"]).first()
        if experiment is None:
            experiment = _register(item, registration)
            created += 1
        else:  # a bundled experiment's reader text follows the fixture; its registration never changes
            Experiment.objects.filter(pk=experiment.pk).update(notes=item.get("notes", ""))
        amended_at = parse_datetime(item["amended_at"]) if item.get("amended_at") else None
        amendments.amend(experiment, item["hypothesis"] if "hypothesis" in registration else "", at=amended_at)
        if item.get("records"):
            rows += ingest_records(item["records"], source_name=f"fixtures/experiments.json#{item['slug']}")
    return created, rows


def _register(item: dict, registration: dict) -> Experiment:
    skip = ("records", "launched_at", "amended_at", "registration", "summary")
    spec = {k: v for k, v in item.items() if k not in skip}
    spec["hypothesis"] = registration.get("hypothesis", item["hypothesis"])
    if spec.get("registered_at"):
        spec["registered_at"] = parse_datetime(spec["registered_at"])
    with transaction.atomic():
        experiment = register_experiment(spec, check_files=False)
        expected = registration.get("registration_hash")
        if expected and expected != experiment.registration_hash:
            found = experiment.registration_hash
            raise ValueError(f"{item['slug']}: the registered text hashes to {found}, not the recorded {expected}")
        if item.get("launched_at"):
            Experiment.objects.filter(pk=experiment.pk).update(launched_at=parse_datetime(item["launched_at"]))
    return experiment


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
    registration = {"registration_hash": experiment.registration_hash}  # a reworded one's text: REGISTERED_TEXTS
    return {
        "slug": experiment.slug,
        "title": experiment.title,
        "hypothesis": amendments.reader_hypothesis(experiment),
        "arms": [{k: v for k, v in arm.items() if k != "hash"} for arm in experiment.arms],
        "seeds": experiment.seeds,
        "evaluation": experiment.evaluation,
        "criterion": experiment.criterion,
        "registered_at": experiment.registered_at.isoformat(),
        "launched_at": experiment.launched_at.isoformat() if experiment.launched_at else None,
        "predecessor": experiment.predecessor.slug if experiment.predecessor_id else None,
        "notes": experiment.notes,
        "amended_at": experiment.amended_at.isoformat() if experiment.amended_at else None,
        "registration": registration,
        "records": [{k: v for k, v in rec.items() if v not in (None, "", {})} for rec in records],
    }


def seed() -> str:
    created, rows = load_fixture()
    return f"{created} new experiments, {rows} new result rows"
