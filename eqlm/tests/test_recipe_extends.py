"""A recipe that `extends` another reads as that recipe with its own tables merged in: the recipes that once copied
another's stages resolve to exactly the stages, and hashes, they resolved to when they were copies."""

from __future__ import annotations

import hashlib
import json

import pytest

from eqlm.recipe import Recipe, RecipeError, load_recipe, recipe_names
from eqlm.recipe_writing import extending_recipe

# Every recipe's stages in chain-file order, each with its recipe_hash (what a run's identity covers) and a digest of
# the whole resolved stage (its note too), as the recipe files resolved before depth-tighten and eqlm-demo extended
# depth-settle and depth-tighten instead of copying their stages.
BEFORE = {
    "depth-anytime": {"anytime": ("9d6ed6321da3f2a3", "16c4f011705a4832")},
    "depth-random": {"random": ("735c1e5726009024", "6a7a7fc780ee4d7b")},
    "depth-settle": {
        "random": ("0ffa56eeae742273", "a399d061455b65ac"),
        "deep": ("ab0f1052bd81fe16", "f3d6c660d3c906ce"),
    },
    "depth-tighten": {
        "random": ("0ffa56eeae742273", "a399d061455b65ac"),
        "deep": ("ab0f1052bd81fe16", "f3d6c660d3c906ce"),
        "tighten": ("f3e9019b829fdceb", "e099582eaff73e01"),
    },
    "eqlm-code": {"equilibrium": ("cd40656c63b03516", "16f20995c2508358")},
    "eqlm-demo": {
        "random": ("1e3c474d0af5d5e1", "fcf288d9e0170030"),
        "deep": ("762f115b48e81655", "a8d1038fdb2a9a86"),
        "tighten": ("849be69dc42403ea", "ad095cf3e08f80dd"),
    },
    "eqlm-demo-anytime": {
        "phantom": ("ae8e33a21431a1a1", "94781f7683ac3238"),
        "deep": ("62a797fe9bf263ea", "cceba51e48f1664e"),
        "residual": ("c16766e6b0018273", "0a1a9650701fb156"),
        "early-gain": ("5014cba54c4df821", "4f6a8829882395ca"),
        "teach": ("c11488c4379dd4e8", "5f5369230efb724e"),
        "flat": ("12f0cad534fc9e1c", "74823181bb404e37"),
    },
    "eqlm-demo-unrolled": {"unrolled": ("1e655f25c31ad779", "f9987aa84a95f018")},
    "explicit-demo": {"explicit": ("208d76e333b60ed1", "9c50ef2b623a46df")},
}


def stage_digest(recipe: Recipe, stage: str) -> str:
    blob = json.dumps(recipe.resolve(stage).to_dict(), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def test_every_recipe_resolves_to_the_same_stages_and_hashes_as_before_it_extended_another():
    assert set(BEFORE) <= set(recipe_names())
    for name, stages in BEFORE.items():
        recipe = load_recipe(name)
        assert recipe.stage_names == list(stages), name
        for stage, (recipe_hash, whole) in stages.items():
            assert recipe.resolve(stage).recipe_hash == recipe_hash, f"{name} stage {stage}"
            assert stage_digest(recipe, stage) == whole, f"{name} stage {stage}"


def test_the_recipes_that_copied_stages_now_extend_the_recipe_they_copied():
    assert load_recipe("depth-tighten").extends == "depth-settle"
    assert load_recipe("eqlm-demo").extends == "depth-tighten"
    assert load_recipe("depth-settle").extends is None


def test_an_extending_file_keeps_the_base_stages_in_order_overrides_keys_and_adds_stages(tmp_path):
    (tmp_path / "base.toml").write_text(
        'title = "base"\n[stages.a]\nsteps = 5\nseed = 1\nterms.final_ce = {}\n'
        '[stages.b]\nfrom = "a"\nsteps = 6\nterms.final_ce = {}\n'
    )
    (tmp_path / "top.toml").write_text(
        'extends = "base.toml"\ntitle = "top"\n[defaults]\nbatch_size = 4\n'
        '[stages.a]\nseed = 2\n[stages.c]\nfrom = "b"\nsteps = 7\nterms.final_ce = {}\n'
    )
    top = load_recipe(tmp_path / "top.toml")
    assert (top.title, top.stage_names) == ("top", ["a", "b", "c"])
    assert top.resolve("a").data["seed"] == 2 and top.resolve("a").data["steps"] == 5
    assert top.resolve("b").data["batch_size"] == 4 and top.chain("c") == ["a", "b", "c"]


def test_a_recipe_that_extends_itself_in_a_loop_or_a_missing_recipe_is_refused(tmp_path):
    (tmp_path / "a.toml").write_text('extends = "b.toml"\n[stages.x]\nsteps = 1\nterms.final_ce = {}\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n')
    with pytest.raises(RecipeError, match="extends loops"):
        load_recipe(tmp_path / "a.toml")
    (tmp_path / "c.toml").write_text('extends = "no-such-recipe"\n')
    with pytest.raises(RecipeError, match="no recipe 'no-such-recipe'"):
        load_recipe(tmp_path / "c.toml")
    (tmp_path / "d.toml").write_text("extends = 3\n")
    with pytest.raises(RecipeError, match="extends names a recipe"):
        load_recipe(tmp_path / "d.toml")


def served_provenance() -> dict:
    overrides = ["model.norm=sandwich", "model.recall=concat", "seed=42"]
    resolved = load_recipe("depth-tighten").resolve("tighten", overrides)
    return {"recipe": "depth-tighten", "stage": "tighten", "overrides": overrides, "recipe_hash": resolved.recipe_hash}


def test_a_checkpoints_recipe_is_written_as_extends_with_its_overrides_where_that_trains_the_same_stages():
    raw = extending_recipe("eqlm-demo", served_provenance(), "t", "d")
    assert raw == {
        "extends": "depth-tighten",
        "title": "t",
        "description": "d",
        "defaults": {"model": {"norm": "sandwich", "recall": "concat"}, "seed": 42},
    }


def test_an_override_a_stage_sets_itself_is_written_into_each_stage_and_a_partial_chain_is_pinned_whole():
    provenance = {**served_provenance(), "overrides": ["seed=7"]}
    provenance["recipe_hash"] = load_recipe("depth-tighten").resolve("tighten", ["seed=7"]).recipe_hash
    raw = extending_recipe("x", provenance, "t", "d")
    assert raw["extends"] == "depth-tighten" and "defaults" not in raw  # each stage sets its seed: [defaults] loses
    assert raw["stages"] == {stage: {"seed": 7} for stage in ("random", "deep", "tighten")}
    deep = {**provenance, "stage": "deep", "recipe_hash": None}
    assert "extends" not in extending_recipe("x", deep, "t", "d")  # stage tighten would follow: the chain is pinned
