"""Promoting a checkpoint to eqlm-demo: the checkpoint copied, its recipe pinned, its card written, and the export
and the convergence rows made by the commands that make them; a checkpoint that cannot be served so is refused.

The export and the evaluation are recorded here, not run: their own tests run them (test_export_demo_files,
test_demo_convergence), and the committed eqlm-demo is what a real promotion wrote."""

import io
import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from eqlm.checkpoint import save_checkpoint
from eqlm.recipe import load_recipe, recipe_file
from eqlm.testing import tiny_explicit_model, tiny_model
from models_app import promote
from models_app.tests.test_card_evaluation import EVALUATION_FIGURE
from models_app.tests.test_card_facts import TRAINING_FIGURE

pytestmark = pytest.mark.django_db
OVERRIDES = ["steps=3000", "seed=42"]


def arm_provenance(recipe: str = "depth-random", stage: str = "random") -> dict:
    resolved = load_recipe(recipe).resolve(stage, OVERRIDES)
    return {
        "recipe": recipe,
        "stage": stage,
        "overrides": OVERRIDES,
        "resolved_stage": resolved.to_dict(),
        "recipe_hash": resolved.recipe_hash,
        "steps": 3000,
    }


@pytest.fixture
def place(tmp_path, settings, monkeypatch):
    """Every path a promotion writes under tmp_path (the recipes folder holds depth-random.toml, the models folder
    the promoted model's); the commands it runs are recorded in `calls`."""
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    shutil.copy(recipe_file("depth-random"), recipes / "depth-random.toml")
    monkeypatch.setattr("eqlm.recipe.RECIPES_DIR", recipes)
    monkeypatch.setattr("eqlm.recipe.MODELS_ROOT", tmp_path / "models")
    settings.MODELS_DIR = tmp_path / "models"
    calls = []
    monkeypatch.setattr(promote, "call_command", lambda name, **options: calls.append((name, options)))
    return {"root": tmp_path, "recipes": recipes, "calls": calls}


def test_promotion_copies_the_checkpoint_pins_its_recipe_writes_its_card_then_exports_and_evaluates(place):
    arm = save_checkpoint(tiny_model(seed=1), place["root"] / "runs" / "latest.pt", arm_provenance())
    call_command("promote_demo", str(arm), stdout=io.StringIO())

    served = place["root"] / "models" / "eqlm-demo" / "checkpoint.pt"
    assert served.read_bytes() == arm.read_bytes()
    pinned = load_recipe("eqlm-demo")
    assert pinned.stage_names == ["random"] and pinned.title.startswith("eqlm-demo: ")
    assert pinned.resolve().recipe_hash == arm_provenance()["recipe_hash"]  # `make train-demo` trains it again
    assert pinned.raw["stages"]["random"]["note"] == "the served eqlm-demo"
    card = json.loads((place["root"] / "models" / "eqlm-demo" / "card.json").read_text())
    assert card["model_id"] == "eqlm-demo" and card["name"] == "EqLM demo, depth-random recipe (KJV, byte-level)"
    for key in ("summary", "shows", "halting_and_warm_start"):
        assert EVALUATION_FIGURE.search(card[key]) is None and TRAINING_FIGURE.search(card[key]) is None, key
    assert "{best.export}" in card["shows"] and "{eqlm-demo-anytime:best.export}" in card["shows"]
    assert [(name, options.get("model_id") or options.get("model")) for name, options in place["calls"]] == [
        ("export_onnx", "eqlm-demo"),
        ("evaluate_convergence", "eqlm-demo"),
    ]
    evaluation = place["calls"][1][1]
    assert evaluation["windows"] == promote.CONVERGENCE_WINDOWS and evaluation["write_fixture"] is True


def test_a_hand_written_card_is_served_under_the_default_id(place):
    arm = save_checkpoint(tiny_model(seed=1), place["root"] / "latest.pt", arm_provenance())
    hand = place["root"] / "card.json"
    hand.write_text(json.dumps({"model_id": "depth-random", "name": "The winner", "summary": "Chosen."}))
    call_command("promote_demo", str(arm), "--card", str(hand), stdout=io.StringIO())
    card = json.loads((place["root"] / "models" / "eqlm-demo" / "card.json").read_text())
    assert card == {"model_id": "eqlm-demo", "name": "The winner", "summary": "Chosen."}


@pytest.mark.parametrize(
    ("model", "provenance", "refusal"),
    [
        (tiny_explicit_model, arm_provenance(), "is an ExplicitLM"),
        (tiny_model, {"steps": 10, "train_settings": {}}, "records no recipe"),
        (tiny_model, {**arm_provenance(), "recipe_hash": "0" * 16}, "the recipe changed since"),
    ],
)
def test_a_checkpoint_that_cannot_be_served_as_the_default_is_refused_before_anything_is_written(
    place, model, provenance, refusal
):
    arm = save_checkpoint(model(seed=1), place["root"] / "latest.pt", provenance)
    with pytest.raises(CommandError, match=refusal):
        call_command("promote_demo", str(arm))
    assert not (place["root"] / "models").exists() and not (place["recipes"] / "eqlm-demo.toml").exists()
    assert place["calls"] == []
    with pytest.raises(CommandError, match="no checkpoint at"):
        call_command("promote_demo", str(place["root"] / "missing.pt"))


def test_promotion_waits_for_the_migration_that_moves_the_model_holding_the_id(place, monkeypatch):
    arm = save_checkpoint(tiny_model(seed=1), place["root"] / "latest.pt", arm_provenance())
    monkeypatch.setattr(promote, "unapplied_migrations", lambda: ["inference.0008_demo_model_becomes_anytime"])
    with pytest.raises(CommandError, match="run manage.py migrate first"):
        call_command("promote_demo", str(arm))
    assert place["calls"] == [] and not (place["root"] / "models").exists()
