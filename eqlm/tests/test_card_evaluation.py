"""Card evaluation: figures come from the metrics file and the stored rows of the served checkpoint, and prose only
names them."""

from __future__ import annotations

import pytest

from eqlm.card_evaluation import CARD_TOL, build_evaluation, read_local, split_prose

SHA = "ab" * 32
COLUMNS = ["metric", "value", "unit", "n", "condition"]


def entry(sha: str = SHA, windows: int = 2) -> dict:
    """Stored rows of a model measured at depths 4, 8 and 64 on `windows` windows of 256 bytes."""
    n = 255 * windows
    rows = []
    for solver, bpb, converged in (
        ("picard", {4: 2.5, 8: 2.2, 64: 2.4}, {4: 0.0, 8: 0.1, 64: 0.9}),
        ("anderson", {4: 4.0, 8: 3.0, 64: 3.5}, {4: 0.0, 8: 0.0, 64: 0.5}),
    ):
        for depth in bpb:
            rows.append(["heldout_bits_per_byte", bpb[depth], "bits/byte", n, {"depth": depth, "solver": solver}])
            for tol, share in ((CARD_TOL, converged[depth]), (0.001, 0.0)):
                rows.append(
                    ["converged_fraction", share, "fraction", n, {"depth": depth, "solver": solver, "tol": tol}]
                )
        for metric, value in (("mean_iterations", 20.0), ("heldout_bits_per_byte", bpb[64] - 0.1)):
            rows.append([metric, value, "x", n, {"cap": 64, "solver": solver, "tol": CARD_TOL}])
    return {
        "run": f"local:m:{sha[:12]}:convergence-heldout-{windows}w-picard+anderson",
        "columns": COLUMNS,
        "rows": rows,
    }


METRICS = {
    "checkpoint_sha256": SHA,
    "measured_with": "onnxruntime",
    "held_out": {"bytes": 1000},
    "held_out_bits_per_byte": {"1": 9.0, "4": 2.3, "8": 2.1, "12": 2.2},
    "warm_start_decoding": {"iteration_change": -0.05, "greedy_token_agreement": 0.16, "cap": 32},
}


def evaluation(metrics: dict = METRICS, stored: dict | None = None) -> dict:
    return build_evaluation(SHA, 256, metrics, "m.metrics.json", entry() if stored is None else stored, "rows.json")


def test_stored_rows_are_read_by_solver_depth_and_tolerance():
    local = read_local(entry())
    assert list(local["by_depth"]) == ["picard", "anderson"]
    assert local["by_depth"]["picard"][8] == {"bits_per_byte": 2.2, "converged": {CARD_TOL: 0.1, 0.001: 0.0}}
    halting = local["halting"][0]
    assert (halting["solver"], halting["tol"], halting["cap"], halting["mean_iterations"]) == (
        "picard",
        CARD_TOL,
        64,
        20,
    )
    assert halting["bits_per_byte"] == pytest.approx(2.3)
    assert local["positions"] == 510


def test_the_table_has_a_row_per_series_and_a_gap_where_a_series_was_not_measured():
    table = evaluation()["by_depth"]
    assert table["depths"] == [4, 8, 12, 64]
    rows = {row["key"]: row["values"] for row in table["rows"]}
    assert list(rows) == [
        "export.bits_per_byte",
        "picard.bits_per_byte",
        "picard.converged",
        "anderson.bits_per_byte",
        "anderson.converged",
    ]
    assert rows["export.bits_per_byte"] == [2.3, 2.1, 2.2, None]
    assert rows["picard.converged"] == [0.0, 0.1, None, 0.9]
    assert "2 held-out windows" in table["rows"][1]["label"]


def test_named_figures_are_read_or_derived_from_the_sources():
    figures = evaluation()["figures"]
    text = {name: f["text"] for name, f in figures.items()}
    assert text["bpb.export@1"] == "9.000" and text["best.export"] == "2.100" and text["best_depth.export"] == "8"
    assert text["drift.export"] == "+0.100" and text["deepest.export"] == "12"  # to the deepest exported depth
    assert text["converged.picard@64"] == "90.0%" and text["drift.picard"] == "+0.200"
    assert text["halting.picard.iterations"] == "20.0" and text["halting.picard.gain"] == "0.100"
    assert text["halting.cap"] == "64" and text["tol"] == "0.01"
    assert text["warm.iterations_saved"] == "5.0%" and text["warm.agreement"] == "16.0%" and text["warm.cap"] == "32"
    assert {f["source"] for name, f in figures.items() if name.startswith("bpb.export")} == {"export"}


def test_a_source_measured_on_another_checkpoint_is_left_out_and_says_so():
    other = evaluation({**METRICS, "checkpoint_sha256": "cd" * 32}, entry(sha="ef" * 32))
    assert other["sources"]["export"]["left_out"] == other["sources"]["local"]["left_out"]
    assert "another checkpoint" in other["sources"]["export"]["left_out"]
    assert other["by_depth"] == {"depths": [], "rows": []} and other["figures"] == {} and other["halting"] == []


def test_a_model_with_no_measurements_has_no_figures():
    nothing = build_evaluation(SHA, 256, {}, "m.metrics.json", None, "rows.json")
    assert nothing["sources"] == {"export": None, "local": None} and nothing["figures"] == {}


def test_prose_is_cut_into_text_and_figure_references():
    parts = split_prose("drifts {drift.picard} by {deepest.picard}, against {eqlm-demo-unrolled:drift.picard}.")
    assert parts == [
        "drifts ",
        (None, "drift.picard"),
        " by ",
        (None, "deepest.picard"),
        ", against ",
        ("eqlm-demo-unrolled", "drift.picard"),
        ".",
    ]
    assert split_prose("no figures {here") == ["no figures {here"]
