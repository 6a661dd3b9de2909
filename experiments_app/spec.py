"""The pre-registered parts of an experiment as plain data: arms, seeds, evaluation; their hashes (no Django).

An experiment declares, before anything runs:

- arms: ``[{"label", "recipe", "stage", "overrides"}]``. ``recipe`` names a recipe (``eqlm/recipes/<name>.toml``, or a
  bundled model's ``models/<name>/recipe.toml``) or a path to a ``.toml`` file, ``stage`` one of its stages (empty:
  its last), ``overrides`` ``key=value`` strings as ``manage.py train --set`` takes them. The seed is not an
  override: each run sets ``seed`` from the seeds. Each
  arm carries a content hash of (recipe, stage, overrides).
- seeds: distinct integers; one run per arm and seed.
- evaluation: the metrics, the depths, the starts (``zero``, ``noise``, ``warm``, as eqlm.path_independence
  solves them), the budgets (iteration caps of the residual halting rule at ``tol``), and which text and how many
  windows of it.

`registration_hash` covers the hypothesis, arms, seeds, evaluation and criterion: the frozen text.
"""

from __future__ import annotations

import hashlib
import json
import re

from eqlm.limits import EXPERIMENT_DEPTH_MAX

LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
OVERRIDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*=.+$", re.S)
# The starts of eqlm.path_independence (zero; N(0, 1) from a generator seeded by noise_seed; warm: each position
# from its predecessor's zero-start state at the same depth), named here without importing torch; a test keeps the
# two equal.
STARTS = ("zero", "noise", "warm")
TEXTS = ("heldout", "slice")  # the recipe corpus's held-out slice, or the committed 4 KB KJV slice
# Metrics the evaluation writes: bits/byte by depth and start; against the zero start at the deepest depth, the
# asymptotic-alignment score (mean cosine of the final states) and the greedy agreement; under halting, bits/byte
# and the mean iterations.
# BLiMP accuracy (the 67 paradigms of BLIMP_DIR, the first `blimp_pairs` pairs of each, eqlm.blimp's evaluator) and
# forward FLOPs per token (eqlm.flops) at each depth, and under halting.
METRICS = (
    "heldout_bits_per_byte",
    "aa_cosine",
    "greedy_agreement",
    "mean_iterations",
    "blimp_accuracy",
    "flops_per_token",
)
# Keys an evaluation may add to the defaults (left out of a registration that does not name them, so its hash and
# the experiments registered before them stay as they were):
# - blimp_pairs: pairs per BLiMP paradigm (with blimp_accuracy; 50 when not named);
# - halting_mean: the halting rule's tol is tuned (bisection on windows of the training side) until the mean
#   iterations at the first budget are within 0.5 of this, then measured there, as exp31 matched a mean depth.
OPTIONAL_EVALUATION = ("blimp_pairs", "halting_mean")
DEFAULT_BLIMP_PAIRS = 50
MAX_SEEDS = 20
MAX_ARMS = 20
EVALUATION_DEFAULTS = {
    "metrics": ["heldout_bits_per_byte"],
    "depths": [1, 2, 4, 8, 12, 16, 24, 32, 48, 64],
    "starts": ["zero", "noise"],
    "budgets": [],
    "tol": 0.01,
    "text": "heldout",
    "windows": 24,
    "window": 256,
    "noise_seed": 0,
}


class SpecError(ValueError):
    """A declared part is malformed; `field` names it (for a 400 that says which)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def short_hash(value) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:16]


def arm_hash(arm: dict) -> str:
    """Content hash of what an arm trains: its recipe, stage and overrides (not its label)."""
    return short_hash({"recipe": arm["recipe"], "stage": arm.get("stage") or "", "overrides": arm["overrides"]})


def normalize_arms(arms) -> list[dict]:
    if not isinstance(arms, list) or not arms:
        raise SpecError("arms", "a non-empty list of {label, recipe, stage, overrides}")
    if len(arms) > MAX_ARMS:
        raise SpecError("arms", f"at most {MAX_ARMS} arms")
    out, labels = [], set()
    for i, arm in enumerate(arms):
        where = f"arms[{i}]"
        if not isinstance(arm, dict):
            raise SpecError(where, "an object {label, recipe, stage, overrides}")
        unknown = sorted(set(arm) - {"label", "recipe", "stage", "overrides", "hash", "note"})
        if unknown:
            raise SpecError(f"{where}.{unknown[0]}", "unknown key")
        label = arm.get("label")
        if not isinstance(label, str) or not LABEL.match(label):
            raise SpecError(f"{where}.label", "1-64 letters, digits, '-', '_' or '.'")
        if label in labels:
            raise SpecError(f"{where}.label", f"{label!r} is used twice")
        labels.add(label)
        recipe = arm.get("recipe")
        if not isinstance(recipe, str) or not recipe.strip():
            raise SpecError(
                f"{where}.recipe",
                "a recipe name (models/NAME/recipe.toml, eqlm/recipes/NAME.toml) or a path to a .toml file",
            )
        stage = arm.get("stage") or ""
        if not isinstance(stage, str):
            raise SpecError(f"{where}.stage", "a stage name, or empty for the recipe's last stage")
        overrides = arm.get("overrides") or []
        if not isinstance(overrides, list) or not all(isinstance(o, str) and OVERRIDE.match(o) for o in overrides):
            raise SpecError(f"{where}.overrides", 'a list of "key=value" strings')
        if any(o.split("=", 1)[0].strip() == "seed" for o in overrides):
            raise SpecError(f"{where}.overrides", "the seed is not an override: it comes from the experiment's seeds")
        clean = {"label": label, "recipe": recipe.strip(), "stage": stage.strip(), "overrides": list(overrides)}
        if arm.get("note"):
            clean["note"] = str(arm["note"])
        clean["hash"] = arm_hash(clean)
        out.append(clean)
    return out


def normalize_seeds(seeds) -> list[int]:
    if not isinstance(seeds, list) or not seeds:
        raise SpecError("seeds", "a non-empty list of integers")
    if not all(type(s) is int and 0 <= s < 2**31 for s in seeds):
        raise SpecError("seeds", "integers from 0 to 2^31 - 1")
    if len(set(seeds)) != len(seeds):
        raise SpecError("seeds", "each seed once")
    if len(seeds) > MAX_SEEDS:
        raise SpecError("seeds", f"at most {MAX_SEEDS} seeds")
    return list(seeds)


def _int_list(name: str, value, low: int, high: int) -> list[int]:
    if isinstance(value, str):  # "1-128" or "1,2,4"
        try:
            if re.fullmatch(r"\s*\d+\s*-\s*\d+\s*", value):
                a, b = (int(v) for v in value.split("-"))
                value = list(range(a, min(b, high) + 1)) + ([b] if b > high else [])  # out of range: refused below
            else:
                value = [int(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise SpecError(f"evaluation.{name}", 'integers, as a list or as "1-128" / "1,2,4"') from None
    if not isinstance(value, list) or not all(type(v) is int and low <= v <= high for v in value):
        raise SpecError(f"evaluation.{name}", f"integers from {low} to {high}")
    return sorted(set(value))


def normalize_evaluation(evaluation) -> dict:
    if evaluation is None:
        evaluation = {}
    if not isinstance(evaluation, dict):
        raise SpecError("evaluation", "an object")
    known = (*EVALUATION_DEFAULTS, *OPTIONAL_EVALUATION)
    unknown = sorted(set(evaluation) - set(known))
    if unknown:
        raise SpecError(f"evaluation.{unknown[0]}", f"unknown key; known: {', '.join(known)}")
    out = {**EVALUATION_DEFAULTS, **evaluation}
    metrics = out["metrics"]
    if not isinstance(metrics, list) or not metrics or any(m not in METRICS for m in metrics):
        raise SpecError("evaluation.metrics", f"a list drawn from {', '.join(METRICS)}")
    out["metrics"] = [m for m in METRICS if m in metrics]
    out["depths"] = _int_list("depths", out["depths"], 1, EXPERIMENT_DEPTH_MAX)
    if not out["depths"]:
        raise SpecError("evaluation.depths", "at least one depth")
    out["budgets"] = _int_list("budgets", out["budgets"], 1, EXPERIMENT_DEPTH_MAX)
    starts = out["starts"]
    if not isinstance(starts, list) or not starts or any(s not in STARTS for s in starts):
        raise SpecError("evaluation.starts", f"a list drawn from {', '.join(STARTS)}")
    out["starts"] = [s for s in STARTS if s in starts]
    if "warm" in out["starts"] and "zero" not in out["starts"]:
        raise SpecError("evaluation.starts", "warm continues from the zero start's states: evaluate zero too")
    compared = {"aa_cosine", "greedy_agreement"} & set(out["metrics"])
    if compared and (out["starts"][0] != "zero" or len(out["starts"]) < 2):
        raise SpecError("evaluation.metrics", f"{', '.join(sorted(compared))} compare a start with zero: evaluate both")
    if "mean_iterations" in out["metrics"] and not out["budgets"]:
        raise SpecError("evaluation.budgets", "mean_iterations is measured under halting: name at least one budget")
    if "blimp_pairs" in out or "blimp_accuracy" in out["metrics"]:
        pairs = out.setdefault("blimp_pairs", DEFAULT_BLIMP_PAIRS)
        if type(pairs) is not int or not 1 <= pairs <= 1000:
            raise SpecError("evaluation.blimp_pairs", "an integer from 1 to 1000 (pairs per paradigm)")
    if "halting_mean" in out:
        mean = out["halting_mean"]
        if isinstance(mean, bool) or not isinstance(mean, int | float) or not out["budgets"]:
            raise SpecError("evaluation.halting_mean", "a mean depth, with at least one budget to halt under")
        if not 1 <= mean <= out["budgets"][0] - 1:
            limit = out["budgets"][0] - 1
            raise SpecError("evaluation.halting_mean", f"between 1 and the first budget less one ({limit})")
        out["halting_mean"] = float(mean)
    tol = out["tol"]
    if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 < tol < 1:
        raise SpecError("evaluation.tol", "a number between 0 and 1")
    out["tol"] = float(tol)
    if out["text"] not in TEXTS:
        raise SpecError("evaluation.text", f"one of {', '.join(TEXTS)}")
    for name, low, high in (("windows", 1, 10_000), ("window", 2, 4096), ("noise_seed", 0, 2**31 - 1)):
        value = out[name]
        if type(value) is not int or not low <= value <= high:
            raise SpecError(f"evaluation.{name}", f"an integer from {low} to {high}")
    return out


def registration_hash(hypothesis: str, arms: list, seeds: list, evaluation: dict, criterion: dict) -> str:
    """sha256 of the frozen text: what was claimed, on which arms and seeds, measured how, judged by what."""
    payload = {"hypothesis": hypothesis, "arms": arms, "seeds": seeds, "evaluation": evaluation, "criterion": criterion}
    return hashlib.sha256(canonical(payload).encode()).hexdigest()
