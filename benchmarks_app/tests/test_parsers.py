"""Parsers for the programme's formats: content detection, run ids and seeds from paths, pointers to each value."""

import json

import pytest

from benchmarks_app.parsers import IngestError, detect_format, parse_bytes, run_id_from_hint

from .factories import harness_b_bytes


def read(shared_dir, rel: str) -> bytes:
    return (shared_dir / "anchor-results" / rel).read_bytes()


@pytest.mark.parametrize(
    ("rel", "fmt"),
    [
        ("exp05_full_v4/results.json", "harness_a"),
        ("exp13_seed43/results.json", "harness_b"),
        ("exp13_seed43/budget_sweep.json", "budget_sweep"),
        ("scale/exp31/exp31_seed44.json", "exp31_depth"),
        ("scale/exp31_compute_audit.json", "compute_audit"),
        ("scale/exp32/seed43.json", "harness_b"),
        ("web-data/ladder_exp40.json", "ladder"),
    ],
)
def test_each_programme_file_is_detected_by_content(shared_dir, rel, fmt):
    assert detect_format(read(shared_dir, rel).decode(), "unnamed") == fmt


def test_harness_a_takes_seed_and_recipe_from_the_sibling_config(shared_dir):
    parsed = parse_bytes(
        read(shared_dir, "exp05_full_v4/results.json"),
        path_hint="exp05_full_v4/results.json",
        companion=read(shared_dir, "exp05_full_v4/config.yaml"),
    )
    blimp = {r["arm"]: r for r in parsed.records if r["metric"] == "blimp_accuracy"}
    assert blimp["A3"]["seed"] == 42 and blimp["A3"]["seed_inferred"] is False
    assert blimp["A3"]["run"] == "exp05_full_v4" and blimp["A3"]["experiment"] == "exp05_full_v4"
    assert blimp["A2"]["recipe"]["lambda_aux"] == 0.01
    assert blimp["A1"]["pointer"] == "/arms/A1/blimp_accuracy" and blimp["A1"]["n"] == 1000
    final = next(r for r in parsed.records if r["metric"] == "final_loss" and r["arm"] == "A1")
    assert final["value"] == pytest.approx(3.7533, abs=1e-4) and final["pointer"] == "/arms/A1/loss_curve/199/loss"


def test_harness_a_without_config_or_seed_in_the_path_is_refused(shared_dir):
    with pytest.raises(IngestError, match="config.yaml"):
        parse_bytes(read(shared_dir, "exp05_full_v4/results.json"), path_hint="exp05_full_v4/results.json")


def test_harness_b_takes_the_experiment_from_the_path_not_its_harness_field():
    parsed = parse_bytes(harness_b_bytes(), path_hint="scale/exp32/seed42.json")
    assert {r["experiment"] for r in parsed.records} == {"exp32"}
    assert {r["run"] for r in parsed.records} == {"scale/exp32/seed42"}


def test_exp31_seed_comes_from_the_checkpoint_name(shared_dir):
    parsed = parse_bytes(
        read(shared_dir, "scale/exp31_adaptive_depth.json"), path_hint="scale/exp31_adaptive_depth.json"
    )
    assert {r["seed"] for r in parsed.records} == {42} and not any(r["seed_inferred"] for r in parsed.records)
    multiples = {r["condition"]["tolerance_multiple"] for r in parsed.records if r.get("condition")}
    assert multiples == {2, 4, 8}


def test_budget_sweep_rows_carry_the_budget_as_their_condition(shared_dir):
    parsed = parse_bytes(read(shared_dir, "exp13_seed44/budget_sweep.json"), path_hint="exp13_seed44/budget_sweep.json")
    assert sorted((r["condition"]["budget"], r["value"]) for r in parsed.records) == [
        (4, 0.587),
        (8, 0.655),
        (12, 0.672),
    ]
    assert {r["arm"] for r in parsed.records} == {"B1"} and {r["seed"] for r in parsed.records} == {44}


def test_lm_eval_style_results_become_per_task_rows():
    data = json.dumps({"model": "tiny", "seed": 1, "tasks": {"piqa": {"acc": 0.55, "acc_norm": 0.56, "n": 1838}}})
    parsed = parse_bytes(data.encode(), path_hint="lmeval/tiny.json")
    assert parsed.format == "lm_eval"
    assert {(r["metric"], r["condition"]["task"], r["value"]) for r in parsed.records} == {
        ("task_accuracy", "piqa", 0.55),
        ("task_accuracy_norm", "piqa", 0.56),
    }


def test_generic_jsonl_is_understood_and_bad_lines_are_named():
    good = '{"run": "r", "experiment": "e", "arm": "a", "metric": "m", "value": 1}\n' * 2
    assert parse_bytes(good.encode(), name="rows.jsonl").format == "generic_jsonl"
    bad = good + '{"run": "r", "experiment": "e", "arm": "a", "metric": "m", "value": 1, "colour": "red"}\n'
    with pytest.raises(IngestError) as info:
        parse_bytes(bad.encode(), name="rows.jsonl")
    assert info.value.errors[0]["line"] == 3


@pytest.mark.parametrize(
    ("hint", "run_id"),
    [
        ("exp10_5090/exp10_seed42/results.json", "exp10_5090/exp10_seed42"),
        ("/home/me/game-llm/results/exp13_seed43/budget_sweep.json", "exp13_seed43"),
        ("scale/exp32/seed44.json", "scale/exp32/seed44"),
    ],
)
def test_run_ids_are_derived_from_the_path(hint, run_id):
    assert run_id_from_hint(hint) == run_id
