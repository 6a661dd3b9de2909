"""Where a bundled model's files live: one folder `models/<id>/` each, and the paths they had before it."""

from __future__ import annotations

import re
from pathlib import Path

from .limits import DEFAULT_MODEL_ID

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS_ROOT = REPO_ROOT / "models"  # the committed folders (the portal's settings.MODELS_DIR defaults to it)
RECIPES_DIR = REPO_ROOT / "eqlm" / "recipes"  # the experiments' recipes; a bundled model's own is in its folder

CHECKPOINT = "checkpoint.pt"
RECIPE = "recipe.toml"
CARD = "card.json"
FACTS = "facts.json"
METRICS = "metrics.json"
HELDOUT_SLICE = "heldout_slice.txt"
ONNX = "onnx"
CANDIDATES = "candidates"  # earlier stages' checkpoints kept beside a served one
# the committed 4 KB KJV held-out slice (the default model's): what evaluations read when no corpus is dumped
KJV_SLICE = MODELS_ROOT / DEFAULT_MODEL_ID / HELDOUT_SLICE

# Before one folder per model: inference/demo/<id>.pt (.metrics.json, ...; the default eqlm-demo's metrics and slice
# without its id), inference/demo/candidates/<file>, static/models/<id>/ and eqlm/recipes/<id>.toml.
_OLD_DEFAULT = "eqlm-demo"
_OLD_FILES = {".pt": CHECKPOINT, ".card.json": CARD, ".facts.json": FACTS, ".metrics.json": METRICS,
              ".heldout_slice.txt": HELDOUT_SLICE}  # fmt: skip
_OLD_DEFAULT_FILES = {"metrics.json": METRICS, "heldout_slice.txt": HELDOUT_SLICE}


def recipe_file(name: str, models_root: Path = MODELS_ROOT, recipes_dir: Path = RECIPES_DIR) -> Path:
    """Where the recipe called `name` is: a bundled model's own (models/<name>/recipe.toml), else eqlm/recipes/."""
    own = models_root / name / RECIPE
    return own if own.is_file() else recipes_dir / f"{name}.toml"


def _new_relative(old: str) -> str | None:
    """The repository-relative path that replaced an old one (None for a path that did not move)."""
    parts = old.split("/")
    if parts[:2] == ["static", "models"] and len(parts) >= 3:
        return "/".join(["models", parts[2], ONNX, *parts[3:]])
    if parts[:2] == ["inference", "demo"] and len(parts) == 4 and parts[2] == CANDIDATES:
        model_id = re.sub(r"-(deep|early|res|stage\d+)\.pt$", "", parts[3])
        return f"models/{model_id}/{CANDIDATES}/{parts[3]}"
    if parts[:2] == ["inference", "demo"] and len(parts) == 3:
        name = parts[2]
        if name in _OLD_DEFAULT_FILES:
            return f"models/{_OLD_DEFAULT}/{_OLD_DEFAULT_FILES[name]}"
        for suffix, new in _OLD_FILES.items():
            if name.endswith(suffix) and name != suffix:
                return f"models/{name.removesuffix(suffix)}/{new}"
    if parts[:2] == ["eqlm", "recipes"] and len(parts) == 3 and (MODELS_ROOT / parts[2].removesuffix(".toml")).is_dir():
        return f"models/{parts[2].removesuffix('.toml')}/{RECIPE}"
    return None


def current_path(path: str | Path, root: Path = REPO_ROOT) -> Path:
    """A file named by a stored row or a recipe, where it is now: a path from before `models/<id>/` (such as
    inference/demo/eqlm-demo-unrolled.pt) maps to its new place when the old one is gone; any other path is kept.
    A relative path is relative to `root` (the repository)."""
    path = Path(path)
    full = path if path.is_absolute() else root / path
    if full.exists():
        return full
    try:
        relative = full.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return full
    new = _new_relative(relative)
    return Path(root) / new if new else full
