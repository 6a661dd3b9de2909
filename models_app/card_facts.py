"""Write each bundled model's card facts (models/<id>/facts.json): its training facts from its checkpoints'
provenance, its evaluation figures from what was measured on the served checkpoint (the export's metrics file and
the stored convergence rows, fixtures/local_results.json).

For `manage.py write_card_facts`, `manage.py export_onnx` and the tests: it reads checkpoints, so it imports torch
(inside its functions). The web process never imports it; it reads the written JSON (`BundledModel.facts`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.conf import settings

from eqlm.model_files import CANDIDATES

from .bundled import BundledModel, bundled_models
from .local_results import FIXTURE, stored_entry


def candidate_checkpoints() -> list[Path]:
    """Earlier stages' checkpoints kept beside the served ones (MODELS_DIR/<id>/candidates/*.pt), by file name."""
    return sorted(Path(settings.MODELS_DIR).glob(f"*/{CANDIDATES}/*.pt"), key=lambda path: path.name)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def facts_for(model: BundledModel, checkpoint: Path | None = None) -> dict:
    """The facts of one bundled model, regenerated from its checkpoint (default: the bundled one), the kept
    candidates (which may record its earlier stages), its recipe file (models/<id>/recipe.toml, when there is one),
    its metrics file and its stored convergence rows."""
    from eqlm.card_evaluation import build_evaluation
    from eqlm.card_facts import build_facts, read_record
    from eqlm.recipe import RecipeError, load_recipe, recipe_names

    root = Path(settings.BASE_DIR)
    served = read_record(checkpoint or model.checkpoint, root)
    others = [read_record(path, root) for path in candidate_checkpoints()]
    recipe, recipe_file = None, ""
    if model.id in recipe_names():
        try:
            recipe = load_recipe(model.id)
        except RecipeError:
            recipe = None
        else:
            recipe_file = str(recipe.path.resolve().relative_to(root.resolve()))
    facts = build_facts(model.id, served, recipe, others, recipe_file)
    facts["evaluation"].update(
        build_evaluation(
            served["sha256"],
            int(served["config"].get("max_positions") or 0),
            model.metrics(),
            _relative(model.metrics_path, root),
            stored_entry(model.id),
            _relative(FIXTURE, root),
        )
    )
    return facts


def render(facts: dict) -> str:
    return json.dumps(facts, indent=1) + "\n"


def write_facts(model: BundledModel, checkpoint: Path | None = None) -> Path:
    """Write through a temporary file and a rename, so that a page never reads half a file."""
    partial = model.facts_path.with_name(f"{model.facts_path.name}.partial")
    partial.write_text(render(facts_for(model, checkpoint)))
    os.replace(partial, model.facts_path)
    return model.facts_path


def write_bundled_facts(ids: list[str] | None = None) -> list[Path]:
    """Write the facts of every bundled model with a checkpoint (or of `ids`); the paths written."""
    return [
        write_facts(model)
        for model in bundled_models()
        if (ids is None or model.id in ids) and model.checkpoint.exists()
    ]
