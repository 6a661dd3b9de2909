"""A pinned recipe: a checkpoint's recipe with its overrides written in, which trains the stages it records again."""

from __future__ import annotations

import tomllib

import pytest

from eqlm.recipe import Recipe, RecipeError, load_recipe, recipe_names
from eqlm.recipe_writing import dumps, pinned_recipe


def provenance_of(recipe: str, stage: str, overrides: list[str]) -> dict:
    """What the trainer records about the recipe of a stage it trained."""
    resolved = load_recipe(recipe).resolve(stage, overrides)
    return {"recipe": recipe, "stage": stage, "overrides": overrides, "recipe_hash": resolved.recipe_hash}


def read_back(raw: dict) -> Recipe:
    return Recipe("pinned", None, tomllib.loads(dumps(raw)))


def test_every_recipe_file_reads_back_equal_from_the_toml_written_for_it():
    for name in recipe_names():
        raw = load_recipe(name).raw
        assert tomllib.loads(dumps(raw)) == raw, name
    odd = {"title": 'a "quoted" \\ line\n', "t": {"odd key": [1, 2.5e-05, True, "x"], "empty": {}}}
    assert tomllib.loads(dumps(odd)) == odd


def test_an_experiment_arms_stage_is_pinned_with_its_overrides_written_in():
    provenance = provenance_of("depth-random", "random", ["steps=3000", "seed=42"])
    pinned = read_back(pinned_recipe("eqlm-demo", provenance, "eqlm-demo: pinned", "why"))
    assert pinned.stage_names == ["random"] and pinned.title == "eqlm-demo: pinned"
    stage = pinned.resolve()  # no overrides: the file itself trains the arm's stage
    assert (stage.steps, stage.seed) == (3000, 42)
    assert stage.recipe_hash == provenance["recipe_hash"]


def test_a_chain_is_pinned_whole_and_every_stage_takes_the_overrides():
    source = load_recipe("eqlm-demo-anytime")
    overrides = ["seed=7", "schedule.lr=2e-4"]
    pinned = read_back(pinned_recipe("x", provenance_of("eqlm-demo-anytime", "early-gain", overrides), "t", "d"))
    assert pinned.stage_names == source.chain("early-gain") == ["phantom", "deep", "residual", "early-gain"]
    for name in pinned.stage_names:
        assert pinned.resolve(name).recipe_hash == source.resolve(name, overrides).recipe_hash, name


def test_an_override_of_a_whole_table_is_written_out_in_full():
    overrides = ["terms={final_ce = {weight = 1.0}}"]  # replaces the terms: merged, the defaults' terms would stay
    provenance = provenance_of("eqlm-demo-anytime", "phantom", overrides)
    pinned = read_back(pinned_recipe("x", provenance, "t", "d"))
    assert list(pinned.resolve().data["terms"]) == ["final_ce"]
    assert pinned.resolve().recipe_hash == provenance["recipe_hash"]


def test_a_checkpoint_whose_recipe_changed_since_or_that_records_none_is_refused():
    provenance = provenance_of("depth-random", "random", ["steps=3000"])
    with pytest.raises(RecipeError, match="the recipe changed since"):
        pinned_recipe("x", {**provenance, "recipe_hash": "0" * 16}, "t", "d")
    with pytest.raises(RecipeError, match="records no recipe"):
        pinned_recipe("x", {"steps": 10, "train_settings": {}}, "t", "d")
