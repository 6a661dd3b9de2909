"""Promote a trained checkpoint to the default model `eqlm-demo`: every file a served model needs, from the
commands that already make them.

For `manage.py promote_demo` (`make promote-demo CKPT=...`): write one folder, `MODELS_DIR/eqlm-demo/`. Copy the
checkpoint to its checkpoint.pt, pin its recipe (recipe.toml: the recipe it records with its overrides written in,
so `make train-demo` trains it again), write its card (a given one, or prose that only names generated figures), then
`export_onnx` (the onnx/ folder, the metrics file, the held-out slice and the facts) and `evaluate_convergence
--write-fixture` (its rows in fixtures/local_results.json, the facts again). Nothing here measures: it runs the
commands that do.

It reads checkpoints (torch, imported inside its functions); the web process never imports it.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from eqlm.limits import DEFAULT_MODEL_ID

CONVERGENCE_WINDOWS = 24  # as the other bundled models' stored rows (convergence-heldout-24w)
CORPUS_LABELS = {"kjv": "KJV", "code": "Python source"}


class PromotionError(ValueError):
    """A checkpoint that cannot be promoted, with why."""


def recipe_path() -> Path:
    from models_app.bundled import bundled_model

    return bundled_model(DEFAULT_MODEL_ID).recipe_path


def read_promotable(checkpoint: Path) -> dict:
    """The checkpoint's dict, refused (PromotionError) when it is not an EqLM trained from a recipe file."""
    from eqlm.checkpoint import CheckpointError, read_checkpoint

    if not checkpoint.is_file():
        raise PromotionError(f"no checkpoint at {checkpoint}")
    try:
        data = read_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise PromotionError(f"{checkpoint}: {exc}") from None
    if data["model_class"] != "EqLM":
        raise PromotionError(
            f"{checkpoint} is an {data['model_class']}: the default model is the council's member and takes every "
            "control, so it is an EqLM"
        )
    return data


def pinned_recipe_text(provenance: dict, source: str) -> str:
    """models/eqlm-demo/recipe.toml for a checkpoint: `extends` its recipe with its overrides written in (or, where
    that cannot say it, its recipe's stage chain written out with them)."""
    from eqlm.recipe import RecipeError, load_recipe, recipe_label
    from eqlm.recipe_writing import dumps, extending_recipe

    if not provenance.get("recipe") or not provenance.get("stage"):
        raise PromotionError("the checkpoint records no recipe and stage (trained before recipes?): nothing to pin")
    try:
        recipe = load_recipe(provenance["recipe"])
    except RecipeError as exc:
        raise PromotionError(f"the checkpoint's recipe: {exc}") from None
    overrides = ", ".join(provenance.get("overrides") or []) or "no overrides"
    title = f"{DEFAULT_MODEL_ID}: {recipe.title.split(': ', 1)[-1]} ({recipe.name}, {overrides})"
    description = (
        f"The served default, promoted by `make promote-demo` from {source}: stage {provenance['stage']} of "
        f"{recipe_label(recipe.name)} with {overrides} written in, so `make train-demo` trains it again."
    )
    try:
        raw = extending_recipe(DEFAULT_MODEL_ID, provenance, title, description)
    except RecipeError as exc:
        raise PromotionError(str(exc)) from None
    raw.setdefault("stages", {}).setdefault(provenance["stage"], {})["note"] = f"the served {DEFAULT_MODEL_ID}"
    return dumps(raw)


def generated_card(provenance: dict) -> dict:
    """A card whose prose names the generated figures and types none (models_app/bundled.py): what the recipe is, what
    the measurements say, beside the model it replaced. Hand-written prose replaces it with --card."""
    from eqlm.recipe import recipe_label

    recipe = provenance.get("recipe") or "its"
    stage = (provenance.get("resolved_stage") or {}).get("corpus") or {}
    corpus = CORPUS_LABELS.get(stage.get("name"), Path(stage.get("file") or "text").name)
    return {
        "model_id": DEFAULT_MODEL_ID,
        "name": f"EqLM demo, {recipe} recipe ({corpus}, byte-level)",
        "summary": (
            f"The served default, chosen by the experiments and promoted with make promote-demo: an EqLM trained by "
            f"{recipe_label(recipe)}, stage {provenance.get('stage')}, with the overrides its checkpoint records "
            f"(models/{DEFAULT_MODEL_ID}/recipe.toml writes them in, so make train-demo trains it again). "
            "Its training facts below are generated from the checkpoint's provenance. "
            "Until it was promoted, eqlm-demo named the six-stage equilibrium model, now eqlm-demo-anytime."
        ),
        "shows": (
            "On the whole held-out slice it is best at depth {best_depth.export} ({best.export} bits/byte); at depth "
            "4 it is {bpb.export@4}, at 12 {bpb.export@12} and at 64 {bpb.export@64}; by its deepest measured depth "
            "it drifts {drift.export} from its best depth. On held-out windows {converged.picard@32} of positions "
            "settle below a relative residual of {tol} by depth 32 and {converged.picard@64} by 64. The six-stage "
            "model it replaced, eqlm-demo-anytime, is best at {eqlm-demo-anytime:best.export} bits/byte and gives "
            "{eqlm-demo-anytime:bpb.export@12} at depth 12."
        ),
        "halting_and_warm_start": (
            "Adaptive Picard halting at tol {tol} (cap {halting.cap}) stops after {halting.picard.iterations} "
            "iterations per position on held-out windows, at {halting.picard.bpb} bits/byte: {halting.picard.gain} "
            "better than fixed depth {halting.cap} (negative: worse). Whether a start from N(0, 1) or a warm start "
            "reaches the state the zero start reaches, with the AA score and the greedy agreement of each, is on "
            "/benchmarks/local-convergence/; bench/decode.py measures what halting and warm start do to tokens/s."
        ),
    }


def unapplied_migrations() -> list[str]:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def promote(
    checkpoint: Path,
    card: Path | None = None,
    windows: int = CONVERGENCE_WINDOWS,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Install `checkpoint` as the default model and regenerate its files; the paths written (to commit)."""
    from models_app.bundled import bundled_model
    from models_app.local_results import FIXTURE

    started = time.monotonic()
    checkpoint = Path(checkpoint).resolve()
    data = read_promotable(checkpoint)
    pending = unapplied_migrations()
    if pending:  # 0008 must move the model that holds the id first, or its rows would follow the new checkpoint
        raise PromotionError(f"unapplied migrations ({', '.join(pending)}): run manage.py migrate first")
    provenance = data["provenance"]
    try:
        source = str(checkpoint.relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        source = checkpoint.name
    recipe_text = pinned_recipe_text(provenance, source)
    card_data = json.loads(Path(card).read_text()) if card else generated_card(provenance)
    card_data["model_id"] = DEFAULT_MODEL_ID

    model = bundled_model(DEFAULT_MODEL_ID)
    model.checkpoint.parent.mkdir(parents=True, exist_ok=True)  # the model's one folder
    if checkpoint != model.checkpoint.resolve():
        shutil.copyfile(checkpoint, model.checkpoint)
    recipe_path().write_text(recipe_text)
    model.card_path.write_text(json.dumps(card_data, indent=2, ensure_ascii=False) + "\n")
    log(f"copied {source} to {model.checkpoint}; wrote {recipe_path()} and {model.card_path}")

    call_command("export_onnx", model_id=DEFAULT_MODEL_ID, stdout=_Writer(log))
    log(f"exported and measured ({time.monotonic() - started:.0f} s so far)")
    call_command(
        "evaluate_convergence", model=DEFAULT_MODEL_ID, windows=windows, write_fixture=True, stdout=_Writer(log)
    )
    log(f"promoted {source} as {DEFAULT_MODEL_ID} in {time.monotonic() - started:.0f} s")
    return [
        model.checkpoint,
        recipe_path(),
        model.card_path,
        model.facts_path,
        model.metrics_path,
        model.slice_path,
        model.onnx_dir,
        FIXTURE,
    ]


class _Writer:
    """A command's stdout that goes to `log`, a line at a time."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log

    def write(self, text: str) -> None:
        if text.strip():
            self.log(text.rstrip("\n"))

    def flush(self) -> None:
        pass
