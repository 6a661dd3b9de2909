"""Recipe files: every bundled model has one, pinned recipes match their checkpoints, bad keys are refused by name."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from eqlm.recipe import RecipeError, load_recipe, recipe_names  # noqa: E402

from .tiny_training import ROOT, tiny_recipe  # noqa: E402


def test_every_bundled_model_has_a_recipe_file_whose_stages_resolve():
    bundled = {p.parent.name for p in (ROOT / "models").glob("*/checkpoint.pt")}
    assert bundled <= set(recipe_names())
    for name in recipe_names():
        recipe = load_recipe(name)
        assert recipe.chain()[-1] == recipe.stage_names[-1]
        assert len(recipe.resolve().recipe_hash) == 16


def test_depth_settles_first_stage_is_depth_curve_v4s_tail_stage():
    """eqlm/recipes/depth-settle.toml writes out the stage of depth-curve-v4's tail arm, the served model before
    depth-curve-v6 (not extended: four keys differ): depth-random with the tail arm's overrides. It must stay that
    stage (the same hash, which a run's identity covers), so its deep stage continues that recipe."""
    tail = ["steps=14000", "batch_size=32", "solve.depth.sigma=1.0", "solve.depth.max=128"]
    settle = load_recipe("depth-settle")
    assert settle.resolve("random").recipe_hash == load_recipe("depth-random").resolve(overrides=tail).recipe_hash
    assert settle.chain("deep") == ["random", "deep"]


def test_depth_tightens_first_two_stages_are_depth_settles_so_its_runs_reuse_them():
    """depth-curve-v7's recipe continues depth-curve-v6's: with the same overrides and seed, its stages random and deep
    hash as depth-settle's do, so the trainer finds a finished depth-settle run's stages done and trains only the
    third stage, which adds the slow-mode penalty."""
    arm = ["model.norm=sandwich", "model.recall=concat", "seed=42"]
    settle, tighten = load_recipe("depth-settle"), load_recipe("depth-tighten")
    assert tighten.chain() == ["random", "deep", "tighten"]
    for stage in ("random", "deep"):
        assert tighten.resolve(stage, arm).recipe_hash == settle.resolve(stage, arm).recipe_hash
    last = tighten.resolve("tighten", arm).data
    assert last["terms"]["slow_mode"]["target"] == 0.64
    assert last["solve"] == settle.resolve("deep", arm).data["solve"]


def test_the_served_recipe_trains_again_the_stage_the_served_checkpoint_records():
    """models/eqlm-demo/recipe.toml is written by `make promote-demo`: the served checkpoint's recipe with its overrides
    written in, so `make train-demo` (the recipe's last stage, no overrides) trains the same stage again."""
    provenance = torch.load(ROOT / "models" / "eqlm-demo" / "checkpoint.pt", weights_only=True)["provenance"]
    recipe = load_recipe("eqlm-demo")
    assert recipe.stage_names[-1] == provenance["stage"]
    assert recipe.resolve().recipe_hash == provenance["recipe_hash"]
    # every stage of its chain is the recorded recipe's stage with the recorded overrides (arm settings and seed)
    source = load_recipe(provenance["recipe"])
    assert recipe.chain() == source.chain(provenance["stage"])
    for stage in recipe.chain():
        assert recipe.resolve(stage).recipe_hash == source.resolve(stage, provenance["overrides"]).recipe_hash


def test_the_six_stage_recipe_records_what_its_checkpoint_was_trained_with():
    provenance = torch.load(ROOT / "models" / "eqlm-demo-anytime" / "checkpoint.pt", weights_only=True)["provenance"]
    old = provenance["train_settings"]  # recorded by the loop before recipes, still loadable
    stage = load_recipe("eqlm-demo-anytime").resolve().data
    assert stage["steps"] == old["steps"] and stage["schedule"]["lr"] == old["lr"]
    assert stage["terms"]["anytime_ce"]["depths"] == old["anytime_depths"]
    assert (stage["solve"]["depth"]["min"], stage["solve"]["depth"]["max"]) == (
        old["solve_depth_min"],
        old["solve_depth_max"],
    )
    assert stage["terms"]["early_gain"]["weight"] == old["early_gain_weight"]
    assert stage["solve"]["implicit_iters"] == old["implicit_iters"]


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("schedule.lrr=1e-3", "schedule.lrr"),
        ("schedule.lr='fast'", "schedule.lr"),
        ("steps=true", "steps"),
        ("terms.jacobian.taget=0.1", "terms.jacobian.taget"),
        ("terms.nonsense.weight=1", "terms.nonsense"),
        ("solve.depth.sampler='gaussian'", "solve.depth.sampler"),
        ("solve.start.noise=1.5", "solve.start.noise"),
    ],
)
def test_a_bad_key_or_a_wrong_type_is_refused_naming_the_key(tmp_path, override, named):
    with pytest.raises(RecipeError, match=named.replace(".", r"\.")):
        tiny_recipe(tmp_path).resolve("first", [override])


def test_a_bad_recipe_file_is_refused_when_read_naming_the_stage_and_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[stages.only]\nsteps = 10\nterms.final_ce = { weight = "heavy" }\n')
    with pytest.raises(RecipeError, match=r"stage only: terms\.final_ce\.weight"):
        load_recipe(path)
    path.write_text("[stages.only]\nterms.final_ce = {}\n")
    with pytest.raises(RecipeError, match="missing key steps"):
        load_recipe(path)
    path.write_text(
        '[stages.a]\nsteps = 1\nfrom = "b"\nterms.final_ce = {}\n[stages.b]\nsteps = 1\nterms.final_ce = {}\n'
    )
    with pytest.raises(RecipeError, match="does not come before"):
        load_recipe(path)
    with pytest.raises(RecipeError, match="no recipe 'nope'"):
        load_recipe("nope")
