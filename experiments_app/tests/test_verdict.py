"""The verdict is computed from the rows on every request: pending while rows are missing, then validated or missed."""

import pytest
from django.test import Client

from .factories import DEPTHS, tiny_experiment, write_rows

pytestmark = pytest.mark.django_db


def verdict() -> str:
    return Client().get("/api/experiments/tiny/").json()["verdict"]


def test_the_verdict_moves_from_pending_to_validated_as_rows_arrive():
    experiment = tiny_experiment()
    assert verdict() == "pending"
    write_rows(experiment, "base", 1, {1: 3.0, 2: 2.8, 4: 2.6})
    write_rows(experiment, "fast", 1, {1: 2.9, 2: 2.7, 4: 2.5})
    assert verdict() == "pending"  # seed 2 has no rows yet
    write_rows(experiment, "base", 2, {1: 3.1, 2: 2.9, 4: 2.7})
    write_rows(experiment, "fast", 2, {1: 3.0, 2: 2.8, 4: 2.6})
    body = Client().get("/api/experiments/tiny/").json()
    assert body["verdict"] == "validated"
    outcome = body["outcome"]
    assert outcome["label"] == "no worse" and set(outcome["per_seed"]) == {"1", "2"}
    assert outcome["interval"][1] == pytest.approx(2.6 / 2.7)  # with two seeds the bootstrap ends at the extremes


def test_the_verdict_is_formally_missed_when_the_rows_say_so():
    experiment = tiny_experiment()
    for seed in (1, 2):
        write_rows(experiment, "base", seed, {4: 2.0})
        write_rows(experiment, "fast", seed, {4: 2.5})
    assert verdict() == "missed"
    page = Client().get("/benchmarks/experiments/tiny/").content.decode()
    assert "formally missed" in page


def test_the_json_holds_arms_seeds_criterion_and_per_arm_figures():
    experiment = tiny_experiment()
    for seed in (1, 2):
        write_rows(experiment, "base", seed, {d: 3.0 - 0.1 * d + 0.01 * seed for d in DEPTHS})
        write_rows(experiment, "base", seed, dict.fromkeys(DEPTHS, 3.5), start="noise")
    body = Client().get("/api/experiments/tiny/").json()
    assert [a["label"] for a in body["arms"]] == ["base", "fast"] and body["seeds"] == [1, 2]
    assert body["criterion"]["op"] == "ratio" and len(body["registration_hash"]) == 64
    base = body["figures"][0]
    assert [(s["metric"], s["start"]) for s in base["series"]] == [
        ("heldout_bits_per_byte", "noise"),
        ("heldout_bits_per_byte", "zero"),
    ]
    zero = base["series"][1]["rows"]
    assert [r["depth"] for r in zero] == DEPTHS
    assert zero[0]["per_seed"] == {"1": pytest.approx(2.91), "2": pytest.approx(2.92)}
    assert zero[0]["mean"] == pytest.approx(2.915) and zero[0]["ci_low"] == pytest.approx(2.91)
    assert body["figures"][1]["series"] == []
    listing = Client().get("/api/experiments/").json()
    assert listing["results"][0]["slug"] == "tiny" and listing["results"][0]["verdict"] == "pending"


def test_the_page_shows_the_registration_then_the_arms_then_the_verdict():
    experiment = tiny_experiment()
    write_rows(experiment, "base", 1, dict.fromkeys(DEPTHS, 3.0))
    page = Client().get("/benchmarks/experiments/tiny/").content.decode()
    registered = page.index("Pre-registered")
    assert experiment.registration_hash in page and experiment.hypothesis in page
    assert registered < page.index("Arms: the metric by depth") < page.index("Verdict:")
    assert 'id="experiment-plot"' in page
    assert ">Range of 2 seeds</th>" not in page  # one seed so far: its value, no interval
    write_rows(experiment, "base", 2, dict.fromkeys(DEPTHS, 3.1))
    # Two seeds: the bootstrap's 95% interval is their min–max, so it is headed as the range it is.
    assert ">Range of 2 seeds</th>" in Client().get("/benchmarks/experiments/tiny/").content.decode()
    listing = Client().get("/benchmarks/experiments/").content.decode()
    assert "/benchmarks/experiments/tiny/" in listing and "pending" in listing


def test_notes_added_after_launch_show_apart_from_the_registered_text():
    experiment = tiny_experiment()
    page = Client().get("/benchmarks/experiments/tiny/").content.decode()
    assert "Notes since registration" not in page
    experiment.notes = "Seed 2 stopped at step 3 to free the cores."
    experiment.save(update_fields=["notes"])
    page = Client().get("/benchmarks/experiments/tiny/").content.decode()
    assert "Notes since registration" in page and "Seed 2 stopped at step 3" in page
    assert page.index("Notes since registration") > page.index("Success criterion")
