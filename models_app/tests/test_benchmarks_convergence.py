"""/benchmarks/ shows the portal's own models' quality and convergence, computed from the evaluation's rows, and
judges each model by the depth-curve experiment's criterion."""

import json
from pathlib import Path

import pytest
from django.conf import settings

from benchmarks_app.declared import COMPARISONS
from benchmarks_app.models import Comparison
from benchmarks_app.tables import build_table
from inference.tests.test_demo_convergence import evaluate_tiny
from results.records import ingest_records


def local_table() -> dict:
    Comparison.objects.get_or_create(**next(c for c in COMPARISONS if c["slug"] == "local-convergence"))
    return build_table(Comparison.objects.get(slug="local-convergence"), use_cache=False)


def cells_by_row(table: dict) -> dict:
    return {row["id"]: [cell["text"] for cell in row["cells"]] for row in table["rows"]}


@pytest.mark.django_db
def test_the_convergence_rows_are_a_table_and_plot_on_the_benchmarks_page(client, tmp_path):
    from models_app.convergence_figures import stored_figures

    evaluate_tiny(tmp_path, "tiny-bench")
    table = local_table()
    rows = cells_by_row(table)
    figures = stored_figures("tiny-bench")
    picard = figures["solvers"]["picard"]
    assert rows["tiny-bench:picard:d4"][:5] == [
        "tiny-bench",
        "picard",
        "fixed 4",
        "4",
        f"{picard['heldout_bits_per_byte'][3]:.4f}",
    ]
    assert "tiny-bench:anderson:d1" in rows and "tiny-bench:picard:d5" not in rows  # the ladder 1, 2, 4, ... only
    adaptive = rows["tiny-bench:picard:tol0.02"]
    point = next(p for p in figures["adaptive"] if p["solver"] == "picard" and p["tol"] == 0.02)
    assert (
        adaptive[3] == f"{point['mean_iterations']:.2f}"
        and adaptive[5] == f"{point['fixed_bits_per_byte_at_mean_depth']:.4f}"
    )
    noise = figures["starts"]["noise"]
    assert table["columns"][-2:] == ["AA cosine with the zero start", "greedy agreement with the zero start"]
    assert rows["tiny-bench:picard:noise:d6"][2] == "fixed 6, N(0, 1) start"  # the AA depth, though not on the ladder
    assert rows["tiny-bench:picard:noise:d6"][-2:] == [
        f"{noise['aa_cosine']:.4f}",
        f"{100 * noise['greedy_agreement']:.1f}%",
    ]
    assert rows["tiny-bench:picard:noise:d4"][-2:] == ["", ""] and "tiny-bench:picard:warm:d6" in rows
    assert all(len(cells) == len(table["columns"]) for cells in rows.values())
    assert table["plot"]["series"]["tiny-bench · picard"]["x"] == [1, 2, 3, 4, 5, 6]
    page = client.get("/benchmarks/local-convergence/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "tiny-bench" in html and "adaptive tol 0.02" in html and "bench-plot-data" in html
    assert "AA cosine with the zero start" in html
    assert "This portal&#x27;s own models" in client.get("/benchmarks/").content.decode()


def synthetic_records(slug: str, curve: dict[int, float], aa: float, agreement: float, warm: float) -> list[dict]:
    base = {"run": f"local:{slug}:000000000000:convergence-heldout-24w-picard", "experiment": "local", "arm": slug}
    base |= {"seed": 0, "n": 6120}
    records = [
        {**base, "metric": "heldout_bits_per_byte", "value": v, "condition": {"depth": d, "solver": "picard"}}
        for d, v in curve.items()
    ]
    deepest = max(curve)
    for start, metric, value in (
        ("noise", "aa_cosine", aa),
        ("noise", "greedy_agreement", agreement),
        ("warm", "aa_cosine", 0.9),
        ("warm", "greedy_agreement", warm),
    ):
        condition = {"depth": deepest, "solver": "picard", "start": start}
        records.append({**base, "metric": metric, "value": value, "condition": condition})
    return records


@pytest.mark.django_db
def test_the_table_goes_to_depth_128_and_judges_each_model_by_the_depth_curve_targets():
    flat = {d: 2.30 + (0.05 if d == 12 else 0.0) - (0.005 if d == 32 else 0.0) for d in range(1, 129)}
    flat |= {1: 9.0, 2: 5.0, 3: 3.0, 4: 2.34}
    drifting = {d: 2.20 + 0.002 * d for d in range(1, 129)} | {1: 9.0}
    ingest_records(synthetic_records("flat", flat, aa=0.995, agreement=0.992, warm=0.95), source_name="t")
    ingest_records(synthetic_records("drifting", drifting, aa=0.20, agreement=0.095, warm=0.107), source_name="t")
    table = local_table()
    rows = cells_by_row(table)
    assert rows["flat:picard:d128"][4] == "2.3000" and "flat:picard:d96" in rows and "flat:picard:d100" not in rows
    assert rows["flat:picard:noise:d128"][4:] == ["", "", "", "", "", "0.9950", "99.2%"]  # no noise curve stored
    assert rows["flat:picard:warm:d128"][-1] == "95.0%" and "flat:picard:noise:d64" not in rows
    notes = {note.split(":")[0]: note for note in table["notes"]}
    flat_note = notes["flat"]
    assert "best depth 32: 2.2950 bits/byte" in flat_note and "4 of 7 depth-curve targets validated" in flat_note
    # depth 12's +0.055 comes before the best depth: it counts for fast settling, not for overthinking
    assert "no overthinking (from the best depth to 128, at most 0.01 bits/byte above the best): +0.005, validated" in (
        flat_note
    )
    assert "fast settling (depth 12 within 0.03 bits/byte of the best): +0.055, missed" in flat_note
    assert "AA cosine between the zero and N(0, 1) starts at least 0.99): 0.9950, validated" in flat_note
    assert "greedy agreement between the zero and N(0, 1) starts at least 99%): 99.2%, validated" in flat_note
    assert "warm start (greedy agreement with the zero start at least 99%): 95.0%, missed" in flat_note
    assert "the other starts against zero at depth 128" in flat_note
    drifting_note = notes["drifting"]
    assert drifting_note.startswith("drifting: 2 of 7 depth-curve targets validated (6,120 held-out positions")
    assert "fast settling (depth 12 within 0.03 bits/byte of the best): +0.020, validated" in drifting_note
    assert "+0.252, missed" in drifting_note and "0.2000, missed" in drifting_note and "9.5%, missed" in drifting_note
    assert not any("stable" in n or "converged (" in n for n in table["notes"])  # the old verdicts are gone


@pytest.mark.django_db
def test_a_model_measured_only_to_depth_64_is_pending_on_the_targets_that_need_128():
    curve = dict.fromkeys(range(1, 65), 2.3)
    ingest_records(synthetic_records("short", curve, aa=0.999, agreement=1.0, warm=1.0), source_name="t")
    (note,) = local_table()["notes"]
    assert "no overthinking" in note and "pending (" in note and "no row yet at depth 128" in note
    assert "AA cosine between the zero and N(0, 1) starts at least 0.99): 0.9990, validated" in note


def test_the_targets_are_the_depth_curve_experiments_criterion_for_one_arm():
    from benchmarks_app.tables.convergence import depth_targets
    from experiments_app.criterion import validate

    def unlabelled(node):
        if isinstance(node, dict):
            return {k: unlabelled(v) for k, v in node.items() if k != "label"}
        return [unlabelled(v) for v in node] if isinstance(node, list) else node

    experiments = json.loads((Path(settings.BASE_DIR) / "fixtures" / "experiments.json").read_text())["experiments"]
    registered = next(e for e in experiments if e["slug"] == "depth-curve")["criterion"]
    for arm_targets in registered["of"]:
        arm = arm_targets["of"][0]["of"]["arm"]
        assert unlabelled(validate(arm_targets)) == unlabelled(validate(depth_targets(arm)))


def test_the_description_migration_writes_the_declared_text():
    from importlib import import_module

    migration = import_module("benchmarks_app.migrations.0006_local_convergence_description")
    declared = next(c for c in COMPARISONS if c["slug"] == "local-convergence")
    assert declared["description"] == migration.NEW and "stable" in migration.OLD
