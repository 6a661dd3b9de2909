"""Card facts: a checkpoint is placed in its recipe's chain by what it records, and the totals count only that."""

from __future__ import annotations

import pytest

from eqlm.card_facts import agrees, build_facts, objective_text, recorded_stage, stage_of
from eqlm.recipe import load_recipe

KJV_SHA = "b5c4940bcfeee072c0935b5200d0f9d88a00a0199cb0961d16133458fcdfae5d"
# What the loop before recipes recorded for eqlm-demo-anytime's third stage (candidates/eqlm-demo-anytime-res.pt)
RESIDUAL_STAGE_SETTINGS = {
    "seed": 0,
    "batch_size": 8,
    "seq_len": 256,
    "lr": 0.0001,
    "min_lr_ratio": 0.1,
    "warmup_steps": 20,
    "weight_decay": 0.05,
    "steps": 1000,
    "residual_weight": 100.0,
    "threads": 1,
    "eval_bytes": 32768,
    "objective": "equilibrium",
    "anytime_depths": [4, 8],
    "solve_depth_min": 12,
    "solve_depth_max": 24,
    "grad_iters": 4,
    "jacobian_weight": 1.0,
    "jacobian_eps": 0.05,
    "jacobian_target": 0.1,
    "penalty_warmup_steps": 20,
    "random_init_prob": 0.0,
    "warm_init_prob": 0.0,
    "settled_weight": 0.0,
    "slow_mode_weight": 0.0,
    "corpus": "kjv",
}
CONFIG = {"train_depths": [4, 8, 12]}


def record(name: str, steps: int = 1000, seconds: float = 100.0, init: str | None = None, **settings) -> dict:
    provenance = {
        "steps": steps,
        "tokens": steps * 2048,
        "train_seconds": seconds,
        "corpus": "King James Bible",
        "corpus_sha256": KJV_SHA,
        "train_settings": {**RESIDUAL_STAGE_SETTINGS, **settings},
        "init_checkpoint_sha256": init,
    }
    return {"file": f"{name}.pt", "sha256": name * 8, "config": CONFIG, "provenance": provenance}


@pytest.fixture(scope="module")
def demo_recipe():
    return load_recipe("eqlm-demo-anytime")


def test_a_checkpoint_from_before_recipes_is_placed_by_the_settings_it_records(demo_recipe):
    chain = demo_recipe.chain()
    assert stage_of(record("a"), demo_recipe, chain) == "residual"
    early = record("b", early_gain_weight=0.01, early_gain_iters=[1, 2, 3], early_gain_target=9.0)
    assert stage_of(early, demo_recipe, chain) == "early-gain"


def test_a_checkpoint_that_agrees_with_no_stage_is_placed_nowhere(demo_recipe):
    # the seventh-stage candidate: the last stage's terms, but 1,000 steps where the recipe plans 2,000
    other = record("c", anytime_depths=[4, 8, 12, 16], solve_depth_min=24, solve_depth_max=40, implicit_iters=32)
    assert stage_of(other, demo_recipe, demo_recipe.chain()) is None
    assert stage_of(record("d", lr=0.003), demo_recipe, demo_recipe.chain()) is None


def test_a_key_the_old_settings_do_not_record_is_not_compared(demo_recipe):
    settings = {k: v for k, v in RESIDUAL_STAGE_SETTINGS.items() if k != "penalty_warmup_steps"}
    rebuilt = recorded_stage({"steps": 1000, "train_settings": settings}, CONFIG)
    assert "penalty_warmup_steps" not in rebuilt["schedule"]
    assert agrees(rebuilt, demo_recipe.resolve("residual").hashed())


def test_a_recipe_checkpoint_is_placed_by_its_recorded_stage_and_says_when_the_recipe_changed(demo_recipe):
    stage = demo_recipe.resolve("deep")
    provenance = {"recipe": "eqlm-demo-anytime", "stage": "deep", "resolved_stage": stage.to_dict(), "steps": 1500}
    current = {"file": "deep.pt", "sha256": "d" * 64, "config": CONFIG}
    served = {**current, "provenance": {**provenance, "recipe_hash": stage.recipe_hash}}
    facts = build_facts("eqlm-demo-anytime", served, demo_recipe, [])
    deep = next(s for s in facts["stages"] if s["name"] == "deep")
    assert facts["served"]["stage"] == "deep" and deep["recorded"]["recipe_changed"] is False
    served["provenance"]["recipe_hash"] = "0" * 16
    deep = next(s for s in build_facts("eqlm-demo-anytime", served, demo_recipe, [])["stages"] if s["name"] == "deep")
    assert deep["recorded"]["recipe_changed"] is True


def test_totals_add_up_the_recorded_stages_and_name_the_others(demo_recipe):
    residual = record("r", seconds=862.7)
    early = record("e", seconds=475.6, init=residual["sha256"], early_gain_weight=0.01)
    facts = build_facts("eqlm-demo-anytime", early, demo_recipe, [residual])
    totals = facts["totals"]
    assert [s["name"] for s in facts["stages"]] == demo_recipe.chain()
    assert totals["stages"] == 6 and totals["recorded_stages"] == 2
    assert totals["unrecorded"] == ["phantom", "deep", "teach", "flat"]
    assert (totals["recorded_steps"], totals["bytes_seen"], totals["seconds"]) == (2000, 4_096_000, 1338.3)
    assert totals["planned_steps"] == sum(demo_recipe.resolve(n).steps for n in demo_recipe.chain())
    stages = {s["name"]: s for s in facts["stages"]}
    assert stages["early-gain"]["recorded"]["continues"] == "residual"
    assert stages["deep"]["recorded"] is None and stages["deep"]["planned_bytes"] == 1500 * 8 * 256


def test_two_checkpoints_of_one_stage_are_refused(demo_recipe):
    served = record("s", anytime_depths=[4, 8, 12, 16])  # no stage: only the candidates are placed
    with pytest.raises(ValueError, match="both record stage residual"):
        build_facts("eqlm-demo-anytime", served, demo_recipe, [record("a"), record("b")])


def test_the_objective_names_each_term_with_the_parameters_recorded():
    text = objective_text(recorded_stage({"steps": 1000, "train_settings": RESIDUAL_STAGE_SETTINGS}, CONFIG))
    assert text.startswith("equilibrium: a solve of 12-24 iterations, the last 4 with gradient;")
    assert "cross-entropy at depths 4, 8;" in text and "residual penalty (weight 100)" in text
    assert "Jacobian gain penalty hinged at 0.1 (weight 1)" in text and "lr 0.0001, warmup 20 steps" in text
    unrolled = recorded_stage({"steps": 10, "train_settings": {"lr": 0.003, "residual_weight": 0.1}}, CONFIG)
    assert objective_text(unrolled).startswith("unrolled: gradients through every iterate from zero")
    assert "cross-entropy at depths 4, 8, 12;" in objective_text(unrolled)


def test_a_stage_trained_with_overrides_plans_what_they_resolve_to():
    """An experiment's arm trains a recipe's stage with overrides (steps=3000): its plan and its recipe hash are the
    overridden stage's, so the card neither plans the recipe's own steps nor calls the recipe changed."""
    recipe = load_recipe("explicit-demo")
    stage = recipe.resolve("explicit", ["steps=3000"])
    provenance = {
        "recipe": "explicit-demo", "stage": "explicit", "overrides": ["steps=3000"], "resolved_stage": stage.to_dict(),
        "recipe_hash": stage.recipe_hash, "steps": 3000, "tokens": 3000 * 8 * 256, "planned_steps": 3000,
    }  # fmt: skip
    served = {"file": "explicit-demo.pt", "sha256": "e" * 64, "model_class": "ExplicitLM", "config": CONFIG}
    facts = build_facts("explicit-demo", {**served, "provenance": provenance}, recipe, [])
    (only,) = facts["stages"]
    assert only["planned_steps"] == 3000 and only["overrides"] == ["steps=3000"]
    assert only["recorded"]["recipe_changed"] is False and facts["totals"]["planned_steps"] == 3000


def test_a_promoted_checkpoint_is_placed_where_its_pinned_recipe_resolves_to_the_stage_it_records():
    from eqlm.recipe import Recipe
    from eqlm.recipe_writing import pinned_recipe

    source = load_recipe("depth-random")
    stage = source.resolve("random", ["steps=3000", "seed=42"])
    provenance = {"recipe": "depth-random", "stage": "random", "overrides": ["steps=3000", "seed=42"]}
    provenance |= {"resolved_stage": stage.to_dict(), "recipe_hash": stage.recipe_hash, "steps": 3000}
    promoted = {"file": "eqlm-demo.pt", "sha256": "f" * 64, "config": CONFIG, "provenance": provenance}
    pinned = Recipe("eqlm-demo", source.path, pinned_recipe("eqlm-demo", provenance, "t", "d"))
    assert stage_of(promoted, pinned, pinned.chain()) == "random"
    facts = build_facts("eqlm-demo", promoted, pinned, [])
    served = facts["stages"][-1]
    assert facts["served"]["stage"] == "random" and served["recorded"]["recipe_changed"] is False
    assert served["planned_steps"] == 3000 and served["overrides"] == ["steps=3000", "seed=42"]
    unpinned = Recipe("eqlm-demo", source.path, source.raw)  # 20,000 steps: not what the checkpoint trained
    assert stage_of(promoted, unpinned, unpinned.chain()) is None
