"""fixtures/local_results.json: the committed models' convergence rows, written from stored rows and loaded by seed."""

import json

import pytest

from inference.tests.test_demo_convergence import evaluate_tiny
from models_app.local_results import FIXTURE, load_fixture, records, write_fixture
from results.models import ResultRow


@pytest.mark.django_db
def test_the_fixture_round_trips_a_models_rows(tmp_path):
    from models_app.convergence_figures import stored_figures

    evaluate_tiny(tmp_path, "tiny-fixture")
    before = stored_figures("tiny-fixture")
    path, count = write_fixture("tiny-fixture", tmp_path / "local.json")
    assert count == ResultRow.objects.filter(arm_label="tiny-fixture").count() == 189
    entry = json.loads(path.read_text())["models"]["tiny-fixture"]
    assert all("depth" not in row[4] for row in entry["rows"])  # rows by depth are stored as series
    noise = next(s for s in entry["series"] if s[0] == "heldout_bits_per_byte" and s[3].get("start") == "noise")
    assert noise[3] == {"solver": "picard", "start": "noise"} and noise[4] == [1, 2, 4, 6]
    ResultRow.objects.filter(arm_label="tiny-fixture").delete()
    assert stored_figures("tiny-fixture") == {}
    assert load_fixture(path) == 189
    assert load_fixture(path) == 0  # idempotent
    assert stored_figures("tiny-fixture") == before


@pytest.mark.django_db
def test_seed_loads_the_committed_models_rows():
    from django.core.management import call_command

    if not FIXTURE.exists():
        pytest.skip("no committed fixtures/local_results.json")
    models = json.loads(FIXTURE.read_text())["models"]
    call_command("seed", "benchmarks_app", "models_app")
    from models_app.convergence_figures import stored_figures

    for slug, entry in models.items():
        assert ResultRow.objects.filter(experiment="local", arm_label=slug).count() == len(records(entry))
        assert stored_figures(slug)["positions"] > 0  # the rows belong to the registered checkpoint
