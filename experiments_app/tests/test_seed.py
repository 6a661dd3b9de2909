"""Bundled experiments come with their rows: the seed registers them once and ingests their rows idempotently."""

import json

import pytest

from experiments_app.models import Experiment
from experiments_app.seed import FORMAT, load_fixture
from experiments_app.services import verdict

from .factories import tiny_spec

pytestmark = pytest.mark.django_db


def record(arm: str, seed: int, value: float) -> dict:
    return {
        "run": f"experiment:bundled:{arm}:seed{seed}",
        "experiment": "bundled",
        "arm": arm,
        "seed": seed,
        "metric": "heldout_bits_per_byte",
        "value": value,
        "condition": {"depth": 4, "start": "zero", "seed": seed},
    }


def test_a_bundled_experiment_is_seeded_once_with_its_rows_and_shows_its_verdict(tmp_path):
    spec = tiny_spec("bundled") | {
        "registered_at": "2026-12-01T10:00:00+00:00",
        "launched_at": "2026-12-01T11:00:00+00:00",
    }
    spec["records"] = [record(arm, seed, 2.0) for arm in ("base", "fast") for seed in (1, 2)]
    path = tmp_path / "experiments.json"
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "experiments": [spec]}))
    assert load_fixture(path) == (1, 4)
    assert load_fixture(path) == (0, 0)
    experiment = Experiment.objects.get(slug="bundled")
    assert experiment.is_frozen and experiment.registered_at.isoformat() == "2026-12-01T10:00:00+00:00"
    assert verdict(experiment).status == "validated"


def test_the_committed_fixture_loads():
    assert load_fixture()[0] == Experiment.objects.count()


def test_an_exported_experiment_seeds_into_another_database_as_it_was(tmp_path):
    from django.core.management import call_command

    from .factories import tiny_experiment, write_rows

    experiment = tiny_experiment("exported")
    write_rows(experiment, "base", 1, {4: 2.5})
    fixture = tmp_path / "experiments.json"
    call_command("export_experiment", "exported", fixture=str(fixture))
    registered = experiment.registration_hash
    Experiment.objects.all().delete()
    from results.models import ResultRow, Run

    Run.objects.all().delete()
    assert load_fixture(fixture) == (1, 1)
    again = Experiment.objects.get(slug="exported")
    assert again.registration_hash == registered and again.arms == experiment.arms
    assert ResultRow.objects.get(experiment="exported").value == 2.5


def test_exporting_a_version_again_keeps_it_before_its_successor(tmp_path):
    from django.core.management import call_command

    from .factories import tiny_experiment, write_rows

    first = tiny_experiment("first")
    second = tiny_experiment("second")
    Experiment.objects.filter(pk=second.pk).update(predecessor=first)
    fixture = tmp_path / "experiments.json"
    call_command("export_experiment", "first", fixture=str(fixture))
    call_command("export_experiment", "second", fixture=str(fixture))
    write_rows(first, "base", 1, {4: 2.5})
    call_command("export_experiment", "first", fixture=str(fixture))
    entries = json.loads(fixture.read_text())["experiments"]
    assert [e["slug"] for e in entries] == ["first", "second"]
    assert len(entries[0]["records"]) == 1
