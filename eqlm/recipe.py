"""Training recipes as TOML files: a model config, a corpus, stages with a schedule, a solve and loss terms.

A recipe file (``eqlm/recipes/<name>.toml``, read with the stdlib ``tomllib``) holds::

    extends = "depth-settle"           # optional: another recipe (a name, or a .toml path beside this file)
    title = "..."                      # one line
    description = "..."                # one or two sentences for the model card
    [model]                            # EqLMConfig fields, plus class = "EqLM" | "ExplicitLM"
    [corpus]                           # name = "kjv" | "code", or file = "path/to/text" (relative to the repository)
    [defaults]                         # stage keys shared by every stage (a stage's own keys win)
    [stages.<name>]                    # in chain order; from = "<earlier stage>" starts from its checkpoint
    steps = 1000                       # required: the schedule is planned over it
    [stages.<name>.schedule]           # lr, warmup, cosine floor, weight decay, penalty ramp
    [stages.<name>.solve]              # how the state the terms see is produced (see SOLVE below)
    [stages.<name>.terms.<term>]       # the loss terms, each with its weight and parameters (eqlm/terms.py)

A recipe that ``extends`` another is read as that recipe (itself read the same way) with this file's tables merged
in, key by key: its stages keep their order, a stage named again takes this file's keys over the base's, and new
stages follow. So a recipe that continues another's stages names it instead of copying them, and each stage resolves,
and hashes, exactly as if it had been copied.

``Recipe.resolve(stage, overrides)`` gives a ``Stage``: every key filled from its default, checked against the schema
(an unknown key or a wrong type is refused with a ``RecipeError`` naming the key), and content-hashed. Overrides are
``key=value`` strings with dotted keys into the stage (``schedule.lr=1e-3``, ``terms.jacobian.weight=0``,
``model.d_model=20``) and TOML values. Writing recipes (TOML text, the recipe a promoted checkpoint gets) is
``eqlm.recipe_writing``. No Django imports here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import model_files
from .model_files import RECIPE, current_path
from .schema import (
    BOOL,
    FLOAT,
    INT,
    LIST,
    OPT_STR,
    REQUIRED,
    STR,
    Key,
    RecipeError,
    check_table,
    depth_list,
    fraction,
    non_negative,
    one_of,
    positive,
)
from .terms import check_terms_against_solve, validate_terms

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"  # experiment arms; a bundled model's is models/<id>/
REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS_ROOT = REPO_ROOT / "models"
MODEL = {
    "class": Key(STR, "EqLM", one_of("EqLM", "ExplicitLM")),
    "vocab_size": Key(INT, 256, positive),
    "d_model": Key(INT, 64, positive),
    "n_heads": Key(INT, 4, positive),
    "d_mlp": Key(INT, 256, positive),
    "max_positions": Key(INT, 256, positive),
    "default_depth": Key(INT, 8, positive),
    "train_depths": Key(LIST, [4, 8, 12], depth_list),
    "n_layers": Key(INT, 1, positive),
    "ln_eps": Key(FLOAT, 1e-5, positive),
    "state_skip": Key(FLOAT, 1.0),
    "norm": Key(STR, "post", one_of("post", "sandwich")),
    "recall": Key(STR, "sum", one_of("sum", "concat")),
}
CORPUS = {
    "name": Key(STR, "kjv", one_of("kjv", "code")),
    "file": Key(OPT_STR, None, doc="a plain text file (relative to the repository) instead of a named corpus"),
}
SCHEDULE = {
    "lr": Key(FLOAT, 3e-3, positive),
    "min_lr_ratio": Key(FLOAT, 0.1, fraction),
    "warmup_steps": Key(INT, 100, non_negative),
    "weight_decay": Key(FLOAT, 0.05, non_negative),
    "penalty_warmup_steps": Key(INT, 300, non_negative, "penalty terms ramp in linearly over these steps"),
    "grad_clip": Key(FLOAT, 1.0, positive),
}
DEPTH = {
    "sampler": Key(STR, "uniform", one_of("uniform", "lognormal_poisson")),
    "min": Key(INT, 12, positive),
    "max": Key(INT, 32, positive),
    "mean": Key(FLOAT, 16.0, positive, "lognormal_poisson: the mean of the Poisson rate (the depth is 1 + it)"),
    "sigma": Key(FLOAT, 0.5, non_negative, "lognormal_poisson: the log-normal's sigma (the tail)"),
    "short_share": Key(FLOAT, 0.0, fraction, "share of steps whose depth is drawn from short_min..short_max"),
    "short_min": Key(INT, 2, positive),
    "short_max": Key(INT, 8, positive),
}
START = {
    "noise": Key(FLOAT, 0.0, fraction, "share of solves from N(0, 1) instead of zero"),
    "warm": Key(FLOAT, 0.0, fraction, "share of solves continued from each position's predecessor's solved state"),
}
SOLVE = {
    "kind": Key(STR, "equilibrium", one_of("equilibrium", "unrolled", "explicit")),
    "depth": DEPTH,
    "grad_iters": Key(INT, 2, non_negative, "iterations with gradient at the end of the solve (0: all of them)"),
    "depth_includes_grad": Key(BOOL, False, doc="the drawn depth counts the iterations with gradient too"),
    "implicit_iters": Key(INT, 0, non_negative, "Neumann terms of the implicit gradient at the final state"),
    "sample_deepest": Key(BOOL, True, doc="unrolled: per step, draw the deepest supervised depth"),
    "start": START,
}
STAGE = {
    "steps": Key(INT, REQUIRED, positive),
    "seed": Key(INT, 0),
    "from": Key(OPT_STR, None, doc="an earlier stage whose checkpoint this stage starts from"),
    "batch_size": Key(INT, 8, positive),
    "seq_len": Key(INT, 256, positive),
    "note": Key(STR, "", doc="what this stage is for (prose, not hashed)"),
    "model": MODEL,
    "corpus": CORPUS,
    "schedule": SCHEDULE,
    "solve": SOLVE,
    "terms": validate_terms,
}
NOT_HASHED = ("note",)


def repo_path(value: str | None) -> Path | None:
    """A file named in a recipe (a teacher, a corpus file): relative to the repository unless absolute."""
    if value is None:
        return None
    path = Path(value)
    return path if path.is_absolute() else current_path(path, REPO_ROOT)  # a teacher named by its old place too


def _merge(base: dict, top: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> tuple[list[str], Any]:
    """'a.b.c=value' -> (['a', 'b', 'c'], the TOML value, or the bare text as a string)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise RecipeError(f"an override is key=value, got {text!r}")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return key.strip().split("."), value


def _set(data: dict, keys: list[str], value) -> None:
    for key in keys[:-1]:
        data = data.setdefault(key, {})
        if not isinstance(data, dict):
            raise RecipeError(f"override {'.'.join(keys)}: {key} is not a table")
    data[keys[-1]] = value


@dataclass
class Stage:
    """One resolved stage: every key filled and checked. `to_dict()` is what the run hash covers."""

    recipe_name: str
    name: str
    data: dict
    overrides: list[str] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return self.data["steps"]

    @property
    def seed(self) -> int:
        return self.data["seed"]

    @property
    def from_stage(self) -> str | None:
        return self.data["from"]

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    def hashed(self) -> dict:
        return {k: v for k, v in self.data.items() if k not in NOT_HASHED}

    @property
    def recipe_hash(self) -> str:
        blob = json.dumps(self.hashed(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def corpus_file(self) -> Path | None:
        return repo_path(self.data["corpus"]["file"])

    @property
    def teacher(self) -> Path | None:
        distill = self.data["terms"].get("distill")
        return repo_path(distill["teacher"]) if distill else None


@dataclass
class Recipe:
    """A recipe file as read: its stages in chain order (not yet resolved)."""

    name: str
    path: Path
    raw: dict  # the whole recipe: the one it extends merged under this file's tables
    extends: str | None = None  # the recipe this file extends, as the file names it

    @property
    def title(self) -> str:
        return self.raw.get("title", self.name)

    @property
    def description(self) -> str:
        return self.raw.get("description", "")

    @property
    def stage_names(self) -> list[str]:
        return list(self.raw.get("stages", {}))

    def chain(self, stage: str | None = None) -> list[str]:
        """The stages `stage` (default: the last) depends on, first to last, ending with it."""
        name = stage or self.stage_names[-1]
        order = []
        while name is not None:
            if name in order:
                raise RecipeError(f"stages.{name}.from: the chain loops")
            order.append(name)
            name = self.resolve(name).from_stage
        return order[::-1]

    def resolve(self, stage: str | None = None, overrides: list[str] | tuple = ()) -> Stage:
        stages = self.raw.get("stages", {})
        name = stage or self.stage_names[-1]
        if name not in stages:
            raise RecipeError(f"unknown stage {name!r} in recipe {self.name}; stages: {self.stage_names}")
        top = {k: v for k, v in self.raw.items() if k in ("model", "corpus")}
        data = _merge(_merge(top, self.raw.get("defaults", {})), stages[name])
        for text in overrides:
            keys, value = parse_override(text)
            _set(data, keys, value)
        resolved = check_table(STAGE, data, "")
        if resolved["from"] is not None and resolved["from"] not in stages:
            raise RecipeError(f"from: no stage {resolved['from']!r} in recipe {self.name}")
        if resolved["from"] is not None and self.stage_names.index(resolved["from"]) >= self.stage_names.index(name):
            raise RecipeError(f"from: stage {resolved['from']!r} does not come before {name!r}")
        _check_consistency(resolved)
        return Stage(self.name, name, resolved, list(overrides))


def _check_consistency(stage: dict) -> None:
    """What each key allows alone but not together."""
    solve, depth = stage["solve"], stage["solve"]["depth"]
    if depth["min"] > depth["max"]:
        raise RecipeError("solve.depth.min: must be <= solve.depth.max")
    if depth["short_min"] > depth["short_max"]:
        raise RecipeError("solve.depth.short_min: must be <= solve.depth.short_max")
    if (stage["model"]["class"] == "ExplicitLM") != (solve["kind"] == "explicit"):
        raise RecipeError("solve.kind: an ExplicitLM, and only it, trains with kind = 'explicit' (one pass)")
    if solve["grad_iters"] == 0 and (solve["start"]["noise"] or solve["start"]["warm"] or solve["implicit_iters"]):
        raise RecipeError("solve.grad_iters: random or warm starts and the implicit gradient need grad_iters > 0")
    check_terms_against_solve(stage)


def recipe_file(name: str) -> Path:
    """Where the recipe called `name` is: a bundled model's own (models/<name>/recipe.toml), else eqlm/recipes/."""
    return model_files.recipe_file(name, MODELS_ROOT, RECIPES_DIR)


def recipe_label(name: str) -> str:
    """The recipe called `name` as a card or a description names it: its repository-relative file."""
    path = recipe_file(name)
    try:
        return path.resolve().relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return f"{name}.toml"


TOP_KEYS = {"extends", "title", "description", "model", "corpus", "defaults", "stages"}


def _recipe_path(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = recipe_file(str(name_or_path))
    if not path.is_file():
        raise RecipeError(f"no recipe {str(name_or_path)!r}; recipes: {recipe_names()}")
    return path


def _read_table(path: Path) -> dict:
    """The table of one recipe file as written (its `extends` not followed)."""
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"{path.name}: {exc}") from None
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise RecipeError(f"unknown key {unknown[0]}")
    base = raw.get("extends")
    if base is not None and (not isinstance(base, str) or not base):
        raise RecipeError(f"{path.name}: extends names a recipe, got {base!r}")
    return raw


def _extended(path: Path, own: dict, seen: tuple[Path, ...] = ()) -> dict:
    """`own` (the table of `path`) with the recipe it extends, and that one's in turn, merged under it."""
    base = own.get("extends")
    table = {k: v for k, v in own.items() if k != "extends"}
    if base is None:
        return table
    seen = (*seen, path.resolve())
    base_path = _recipe_path(path.parent / base if base.endswith(".toml") else base)
    if base_path.resolve() in seen:
        raise RecipeError(f"{path.name}: extends loops ({' -> '.join(p.name for p in (*seen, base_path))})")
    return _merge(_extended(base_path, _read_table(base_path), seen), table)


def load_recipe(name_or_path: str | Path) -> Recipe:
    """A recipe by name (models/<name>/recipe.toml or eqlm/recipes/<name>.toml) or by path, with the recipe it
    extends merged in (`Recipe.raw` is the whole recipe; `Recipe.extends` names the base)."""
    path = _recipe_path(name_or_path)
    own = _read_table(path)
    raw = _extended(path, own)
    if not raw.get("stages"):
        raise RecipeError("stages: a recipe needs at least one stage")
    name = path.parent.name if path.name == RECIPE else path.stem
    recipe = Recipe(name, path, raw, own.get("extends"))
    for stage in recipe.stage_names:  # a bad stage is refused when the file is read, not half-way through a chain
        try:
            recipe.resolve(stage)
        except RecipeError as exc:
            raise RecipeError(f"{path.name}, stage {stage}: {exc}") from None
    return recipe


def recipe_names() -> list[str]:
    own = {p.parent.name for p in MODELS_ROOT.glob(f"*/{RECIPE}")}
    return sorted(own | {p.stem for p in RECIPES_DIR.glob("*.toml")})
