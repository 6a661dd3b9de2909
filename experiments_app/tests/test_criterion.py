"""The criterion's operators and the verdict they give on rows, without a database."""

import pytest

from experiments_app.criterion import CriterionError, Row, arms_named, describe, evaluate, validate

SEEDS = [42, 43, 44]


def bpb(arm: str, seed: int, curve: dict[int, float], start: str = "zero") -> list[Row]:
    return [
        Row("exp", arm, seed, "heldout_bits_per_byte", {"depth": d, "start": start, "seed": seed}, v)
        for d, v in curve.items()
    ]


def verdict(criterion: dict, rows: list[Row], seeds=SEEDS, depths=(4, 8, 16)):
    return evaluate(validate(criterion, ["A", "B"]), rows, seeds, "exp", depths)


RATIO = {
    "op": "ratio",
    "of": {"arm": "A", "metric": "heldout_bits_per_byte", "where": {"depth": 8, "start": "zero"}},
    "over": {"arm": "B", "metric": "heldout_bits_per_byte", "where": {"depth": 8, "start": "zero"}},
    "stat": "ci_low",
    "cmp": ">=",
    "value": 0.95,
}


def test_a_ratio_with_three_seeds_is_judged_by_its_bootstrap_interval_which_is_the_min_max():
    rows = []
    for seed, (a, b) in zip(SEEDS, [(1.9, 2.0), (2.0, 2.0), (2.1, 2.0)], strict=True):
        rows += bpb("A", seed, {8: a}) + bpb("B", seed, {8: b})
    outcome = verdict(RATIO, rows)
    assert outcome.status == "validated"
    assert outcome.interval == pytest.approx((0.95, 1.05))
    assert outcome.figure == pytest.approx(0.95)
    assert verdict({**RATIO, "value": 0.96}, rows).status == "missed"


def test_a_missing_row_leaves_the_condition_pending_and_names_it():
    rows = bpb("A", 42, {8: 2.0}) + bpb("B", 42, {8: 2.0}) + bpb("A", 43, {8: 2.0})
    outcome = verdict(RATIO, rows)
    assert outcome.status == "pending" and "seed 43" in outcome.note


def test_an_absolute_difference_compares_the_mean_gap():
    rows = []
    for seed in SEEDS:
        rows += bpb("A", seed, {8: 2.005}) + bpb("B", seed, {8: 2.0})
    node = {
        "op": "difference",
        "of": RATIO["of"],
        "minus": RATIO["over"],
        "abs": True,
        "cmp": "<=",
        "value": 0.01,
    }
    assert verdict(node, rows).status == "validated"
    assert verdict({**node, "value": 0.001}, rows).status == "missed"


def test_an_absolute_difference_bounds_every_seeds_gap_whichever_way_it_goes():
    gaps = {42: 0.003, 43: -0.015, 44: 0.009}  # exp31's adaptive - uniform BLiMP per seed
    rows = []
    for seed, gap in gaps.items():
        rows += bpb("A", seed, {8: 2.0 + gap}) + bpb("B", seed, {8: 2.0})
    node = {"op": "difference", "of": RATIO["of"], "minus": RATIO["over"], "abs": True, "stat": "max"}
    outcome = verdict({**node, "cmp": "<=", "value": 0.01}, rows)
    assert outcome.status == "missed"
    assert outcome.figure == pytest.approx(0.015)
    assert verdict({**node, "cmp": "<=", "value": 0.02}, rows).status == "validated"


def test_curve_measures_read_the_value_at_a_depth_and_the_excess_past_the_best_depth():
    rows = []
    for seed in SEEDS:
        rows += bpb("A", seed, {4: 2.5, 8: 2.2, 16: 2.23})
    sel = {"arm": "A", "metric": "heldout_bits_per_byte", "where": {"start": "zero"}}
    excess = {"op": "curve", "of": sel, "measure": "excess", "to_depth": 16, "cmp": "<=", "value": 0.01}
    assert verdict(excess, rows).status == "missed"
    assert verdict(excess, rows).figure == pytest.approx(0.03)
    assert verdict({**excess, "value": 0.05}, rows).status == "validated"
    at = {"op": "curve", "of": sel, "measure": "at", "depth": 4, "cmp": "<=", "value": 2.35}
    assert verdict(at, rows).status == "missed"
    gap = {"op": "curve", "of": sel, "measure": "gap_at", "depth": 16, "cmp": "<=", "value": 0.031}
    assert verdict(gap, rows).status == "validated"
    best = {"op": "curve", "of": sel, "measure": "best", "cmp": "<=", "value": 2.2}
    assert verdict(best, rows).status == "validated"


def test_a_curve_missing_one_evaluated_depth_is_pending():
    rows = bpb("A", 42, {4: 2.5, 16: 2.23})
    sel = {"arm": "A", "metric": "heldout_bits_per_byte", "where": {"start": "zero"}}
    node = {"op": "curve", "of": sel, "measure": "excess", "cmp": "<=", "value": 0.01}
    outcome = verdict(node, rows, seeds=[42])
    assert outcome.status == "pending" and "depth 8" in outcome.note


def test_a_threshold_on_any_stored_row_reads_another_experiments_rows_too():
    rows = [Row("bench", "eqlm-demo", 42, "tokens_per_second", {"depth": 64}, 1500.0)]
    node = {
        "op": "value",
        "of": {"experiment": "bench", "arm": "eqlm-demo", "metric": "tokens_per_second", "where": {"depth": 64}},
        "cmp": ">=",
        "value": 1000,
    }
    assert verdict(node, rows, seeds=[42]).status == "validated"


def test_every_seed_needs_each_seed_to_hold_and_and_is_missed_as_soon_as_one_part_is():
    rows = []
    for seed, value in zip(SEEDS, [2.0, 2.1, 2.4], strict=True):
        rows += bpb("A", seed, {8: value})
    each = {
        "op": "every_seed",
        "of": {"op": "value", "of": {"arm": "A", "metric": "heldout_bits_per_byte", "where": {"depth": 8}}}
        | {"cmp": "<=", "value": 2.2},
    }
    outcome = verdict(each, rows)
    assert outcome.status == "missed"
    assert [p.status for p in outcome.parts] == ["validated", "validated", "missed"]
    assert [p.label for p in outcome.parts] == ["seed 42", "seed 43", "seed 44"]
    pending = {"op": "value", "of": {"arm": "B", "metric": "x", "where": {}}, "cmp": ">", "value": 0}
    both = {"op": "all", "of": [each, pending]}
    assert verdict(both, rows).status == "missed"  # one part missed decides it, the other is still pending
    either = {"op": "any", "of": [each, pending]}
    assert verdict(either, rows).status == "pending"


@pytest.mark.parametrize(
    ("criterion", "path"),
    [
        ({"op": "ratio"}, "of"),
        ({**RATIO, "cmp": "=="}, "cmp"),
        ({**RATIO, "over": {**RATIO["over"], "arm": "C"}}, "over.arm"),
        ({"op": "all", "of": [{**RATIO, "stat": "median"}]}, "of[0].stat"),
        ({**RATIO, "extra": 1}, "extra"),
        ({"op": "curve", "of": RATIO["of"], "measure": "excess", "cmp": "<", "value": 1}, "of.where"),
        ({"op": "curve", "of": RATIO["over"] | {"where": {}}, "measure": "at", "cmp": "<", "value": 1}, "depth"),
        ({"op": "nand"}, "op"),
    ],
)
def test_a_malformed_criterion_is_refused_naming_the_key(criterion, path):
    with pytest.raises(CriterionError) as caught:
        validate(criterion, ["A", "B"])
    assert caught.value.path == path


def test_descriptions_and_arms_named_read_the_tree():
    node = validate({"op": "all", "of": [RATIO]}, ["A", "B"])
    assert arms_named(node) == {"A", "B"}
    assert "lower bound >= 0.95" in describe(node["of"][0])


def test_a_depth_range_past_the_limit_is_refused_without_building_it():
    from experiments_app.spec import SpecError, normalize_evaluation

    assert normalize_evaluation({"depths": "1-4"})["depths"] == [1, 2, 3, 4]
    with pytest.raises(SpecError) as caught:
        normalize_evaluation({"depths": "1-1000000000000"})
    assert caught.value.field == "evaluation.depths"


def test_the_evaluation_names_the_starts_that_path_independence_solves():
    from eqlm.path_independence import STARTS
    from experiments_app.spec import STARTS as DECLARED
    from experiments_app.spec import SpecError, normalize_evaluation

    assert DECLARED == STARTS
    with pytest.raises(SpecError, match="zero"):
        normalize_evaluation({"starts": ["warm"]})
    with pytest.raises(SpecError, match="compare"):
        normalize_evaluation({"starts": ["noise"], "metrics": ["aa_cosine"]})


def test_blimp_and_a_tuned_halting_mean_are_opt_in_and_checked():
    from experiments_app.spec import EVALUATION_DEFAULTS, SpecError, normalize_evaluation

    plain = normalize_evaluation({})
    assert "blimp_pairs" not in plain and "halting_mean" not in plain  # earlier registrations hash as before
    assert plain == EVALUATION_DEFAULTS
    assert normalize_evaluation({"metrics": ["blimp_accuracy"]})["blimp_pairs"] == 50
    assert normalize_evaluation({"budgets": [64], "halting_mean": 12})["halting_mean"] == 12.0
    with pytest.raises(SpecError) as caught:
        normalize_evaluation({"halting_mean": 12})
    assert caught.value.field == "evaluation.halting_mean"
    with pytest.raises(SpecError) as caught:
        normalize_evaluation({"budgets": [8], "halting_mean": 12})
    assert caught.value.field == "evaluation.halting_mean"
    with pytest.raises(SpecError) as caught:
        normalize_evaluation({"metrics": ["blimp_accuracy"], "blimp_pairs": 0})
    assert caught.value.field == "evaluation.blimp_pairs"
