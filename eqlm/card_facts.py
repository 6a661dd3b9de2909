"""A model card's training facts, generated from what its checkpoints record and its recipe file; never typed in.

A checkpoint's provenance comes in two shapes. Since recipes (``eqlm/trainer.py``) it names its recipe and stage
and holds the resolved stage. Before them the training loop recorded flat ``train_settings``; such a checkpoint is
placed in its recipe's chain by rebuilding the recipe-shaped keys those settings record and finding the one stage
that agrees with all of them. A stage no bundled checkpoint records is listed with its planned steps and bytes only.

`build_facts` is pure (checkpoint records in, a JSON-ready dict out); `read_record` loads a checkpoint (torch,
imported inside). No Django imports here.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

from .recipe import Recipe, RecipeError
from .terms import TERMS

FLAT_SCHEDULE_KEYS = ("lr", "min_lr_ratio", "warmup_steps", "weight_decay", "penalty_warmup_steps")
BPB_DIGITS = 4


# The optional loss terms of the old flat training settings: term name -> (its weight setting, {key: setting}).
LEGACY_TERMS = {
    "jacobian": ("jacobian_weight", {"target": "jacobian_target", "eps": "jacobian_eps"}),
    "early_gain": ("early_gain_weight", {"iters": "early_gain_iters", "target": "early_gain_target"}),
    "distill": ("distill_weight", {"depth": "distill_depth", "teacher": "teacher_checkpoint"}),
    "settled_warm": ("settled_weight", {"iters_min": "settled_iters_min", "iters_max": "settled_iters_max"}),
    "slow_mode": ("slow_mode_weight", {"target": "slow_mode_target"}),
}


def read_record(path: Path, root: Path) -> dict:
    """A checkpoint's file (relative to root when inside it), sha256, model class, config and provenance, for
    `build_facts`."""
    from .checkpoint import read_checkpoint

    path = Path(path)
    data = read_checkpoint(path)
    try:
        name = str(path.resolve().relative_to(Path(root).resolve()))
    except ValueError:
        name = str(path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "file": name,
        "sha256": sha,
        "model_class": data["model_class"],
        "config": data["config_dict"],
        "provenance": data["provenance"],
    }


# --- what one checkpoint records ------------------------------------------------------------------------------------


def recorded_stage(provenance: dict, config: dict) -> dict:
    """The recipe-shaped stage a checkpoint was trained with: its resolved stage, or, for a checkpoint from before
    recipes, the keys its flat settings record (a key they do not record is left out, never filled in)."""
    if isinstance(provenance.get("resolved_stage"), dict):
        return provenance["resolved_stage"]
    s = provenance.get("train_settings") or {}
    stage: dict = {"steps": provenance.get("steps")}
    stage.update({k: s[k] for k in ("seed", "batch_size", "seq_len") if k in s})
    stage["corpus"] = {"name": s.get("corpus", "kjv")}
    stage["schedule"] = {k: s[k] for k in FLAT_SCHEDULE_KEYS if k in s}
    kind = s.get("objective", "unrolled")  # the loop before objectives trained the unrolled iterates only
    terms: dict = {}
    if kind == "unrolled":
        stage["solve"] = {"kind": "unrolled", "sample_deepest": bool(s.get("sample_depths", True))}
        terms["anytime_ce"] = {"depths": list(config.get("train_depths") or [])}
    else:
        stage["solve"] = {
            "kind": kind,
            "depth": {"min": s.get("solve_depth_min"), "max": s.get("solve_depth_max")},
            "grad_iters": s.get("grad_iters"),
            "implicit_iters": s.get("implicit_iters", 0),
            "start": {"noise": s.get("random_init_prob", 0.0), "warm": s.get("warm_init_prob", 0.0)},
        }
        terms["final_ce"] = {}
        terms["anytime_ce"] = {"depths": s.get("anytime_depths")}
        for term, (weight, fields) in LEGACY_TERMS.items():
            if s.get(weight):
                terms[term] = {"weight": s[weight]} | {key: s.get(flat) for key, flat in fields.items()}
    if s.get("residual_weight"):
        terms["residual"] = {"weight": s["residual_weight"]}
    stage["terms"] = terms
    return stage


def _flat(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        elif value is not None:
            out[f"{prefix}{key}"] = value
    return out


def _same(a, b) -> bool:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) if numbers else a == b


def agrees(recorded: dict, resolved: dict) -> bool:
    """Whether a stage rebuilt from a checkpoint agrees with a resolved recipe stage: the same loss terms, and every
    key the checkpoint records equal to the recipe's (a key it does not record is not compared)."""
    active = {name for name, params in resolved["terms"].items() if params.get("weight", 1.0)}
    if set(recorded.get("terms") or {}) != active:
        return False
    want = _flat(resolved)
    return all(key in want and _same(value, want[key]) for key, value in _flat(recorded).items() if key != "note")


def heldout_check(provenance: dict, iterates: bool = True) -> list[dict]:
    """The training loop's own held-out check at the end of the stage: bits/byte (and the share of positions with
    relative residual < 0.01, where recorded and the model `iterates`: an explicit transformer has no fixed point, so
    whatever share its check recorded is no figure) by depth."""
    metrics = provenance.get("metrics") or {}
    rows = []
    for depth, value in sorted((metrics.get("heldout_quick") or {}).items(), key=lambda kv: int(kv[0])):
        converged = value.get("converged") if iterates else None
        rows.append(
            {
                "depth": int(depth),
                "bits_per_byte": round(value["bpb"], BPB_DIGITS),
                "converged": None if converged is None else round(converged, 4),
            }
        )
    for depth, value in sorted((metrics.get("heldout_bpb_quick") or {}).items(), key=lambda kv: int(kv[0])):
        rows.append({"depth": int(depth), "bits_per_byte": round(value, BPB_DIGITS), "converged": None})
    return rows


def recorded_figures(record: dict) -> dict:
    """What one checkpoint records about the stage that wrote it (a token is a byte: the models are byte-level)."""
    p = record["provenance"]
    settings = p.get("train_settings") or {}
    return {
        "checkpoint": record["file"],
        "sha256": record["sha256"],
        "provenance_shape": "recipe" if "resolved_stage" in p else "train_settings" if settings else "basic",
        "steps": p.get("steps"),
        "planned_steps": p.get("planned_steps"),
        "bytes_seen": p.get("tokens"),
        "seconds": p.get("train_seconds"),
        "seed": p.get("seed"),
        "threads": p.get("threads", settings.get("threads")),
        "device": p.get("device"),
        "corpus": p.get("corpus"),
        "corpus_sha256": p.get("corpus_sha256"),
        "git_commit": p.get("git_commit"),
        "run_hash": p.get("run_hash"),
        "config_hash": p.get("config_hash"),
        "recipe_hash": p.get("recipe_hash"),
        "created": p.get("created"),
        "lr_schedule": p.get("lr_schedule"),
        "init_checkpoint_sha256": p.get("init_checkpoint_sha256"),
        "teacher_checkpoint_sha256": p.get("teacher_checkpoint_sha256"),
        "heldout_check": heldout_check(p, iterates=record.get("model_class", "EqLM") != "ExplicitLM"),
        "heldout_check_bytes": settings.get("eval_bytes"),
    }


# --- the objective in words -----------------------------------------------------------------------------------------


def _g(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _depths(values) -> str:
    return ", ".join(str(v) for v in values or [])


def _weighted(text: str, params: dict) -> str:
    return f"{text} (weight {_g(params['weight'])})" if params.get("weight") is not None else text


def term_text(name: str, p: dict) -> str:
    """One loss term in words, with the parameters the stage records."""
    if name == "final_ce":
        text = "cross-entropy at the final state"
    elif name == "anytime_ce":
        text = f"cross-entropy at depths {_depths(p.get('depths'))}"
    elif name == "residual":
        text = "residual penalty"
    elif name == "jacobian":
        text = "Jacobian gain penalty" + (f" hinged at {_g(p['target'])}" if p.get("target") is not None else "")
    elif name == "early_gain":
        text = f"early-gain penalty at iterates {_depths(p.get('iters'))}"
        text += f" hinged at {_g(p['target'])}" if p.get("target") is not None else ""
    elif name == "distill":
        teacher = Path(p["teacher"]).stem if p.get("teacher") else "its own iterate"
        text = f"distillation from {teacher} at depth {_g(p.get('depth'))}"
    else:
        extra = ", ".join(f"{k} {_g(v)}" for k, v in p.items() if k != "weight" and v is not None)
        text = name.replace("_", " ") + (f" ({extra})" if extra else "")
    return _weighted(text, p)


def objective_text(stage: dict) -> str:
    """A stage's solve, loss terms and schedule in one line, from whatever keys it holds."""
    solve = stage.get("solve") or {}
    kind = solve.get("kind", "equilibrium")
    if kind == "unrolled":
        text = "unrolled: gradients through every iterate from zero"
        if solve.get("sample_deepest"):
            text += ", the deepest supervised depth drawn per step"
    elif kind == "explicit":
        text = "explicit: one pass through the layers"
    else:
        depth = solve.get("depth") or {}
        text = f"equilibrium: a solve of {_g(depth.get('min'))}-{_g(depth.get('max'))} iterations"
        if solve.get("grad_iters") is not None:
            text += f", the last {_g(solve['grad_iters'])} with gradient"
        start = solve.get("start") or {}
        for key, words in (("noise", "from noise"), ("warm", "warm-started")):
            if start.get(key):
                text += f", {start[key]:.0%} of solves {words}"
        if solve.get("implicit_iters"):
            text += f", implicit gradient ({_g(solve['implicit_iters'])} Neumann terms)"
    terms = stage.get("terms") or {}
    order = [name for name in TERMS if name in terms] + [name for name in terms if name not in TERMS]
    active = [term_text(name, terms[name]) for name in order if terms[name].get("weight") != 0]
    if active:
        text += "; " + "; ".join(active)
    schedule = stage.get("schedule") or {}
    if "lr" in schedule:
        text += f"; lr {_g(schedule['lr'])}"
        if schedule.get("warmup_steps") is not None:
            text += f", warmup {_g(schedule['warmup_steps'])} steps"
        if schedule.get("penalty_warmup_steps"):
            text += f", penalties ramped in over {_g(schedule['penalty_warmup_steps'])} steps"
    return text


# --- the card's facts -------------------------------------------------------------------------------------------------


def stage_of(record: dict, recipe: Recipe, chain: list[str]) -> str | None:
    """The stage of the recipe's chain that a checkpoint records, or None. A checkpoint trained from another recipe
    file (promoted under another id, whose recipe is its own with the overrides written in: eqlm.recipe_writing)
    is placed at its stage when this recipe resolves that stage to exactly what it recorded (the same recipe_hash)."""
    p = record["provenance"]
    if "stage" in p and "recipe" in p:
        if p["stage"] not in chain:
            return None
        if p["recipe"] == recipe.name:
            return p["stage"]
        same = p.get("recipe_hash") and recipe.resolve(p["stage"]).recipe_hash == p["recipe_hash"]
        return p["stage"] if same else None
    recorded = recorded_stage(p, record["config"])
    matches = [name for name in chain if agrees(recorded, recipe.resolve(name).hashed())]
    return matches[0] if len(matches) == 1 else None


def _sum(values) -> float | int | None:
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def _served_only_stage(served: dict) -> dict:
    """The one stage of a checkpoint with no recipe: what its provenance records."""
    return {
        "name": served["provenance"].get("stage"),
        "from": None,
        "note": "",
        "planned_steps": served["provenance"].get("planned_steps"),
        "planned_bytes": None,
        "objective": objective_text(recorded_stage(served["provenance"], served["config"])),
        "recorded": recorded_figures(served),
    }


def _records_by_stage(served: dict, served_stage: str | None, recipe: Recipe, chain: list[str], others: list[dict]):
    """The bundled checkpoints by the stage each records; ValueError when two record the same stage."""
    by_stage: dict[str, dict] = {}
    if served_stage is not None:
        by_stage[served_stage] = served
    for record in others:
        name = stage_of(record, recipe, chain)
        if name is None or name == served_stage:
            continue
        if name in by_stage:
            raise ValueError(f"{by_stage[name]['file']} and {record['file']} both record stage {name}")
        by_stage[name] = record
    return by_stage


def _recipe_stage(recipe: Recipe, name: str, record: dict | None) -> dict:
    """A recipe stage's plan, with the figures of the checkpoint that records it (None when none does)."""
    # a stage trained with overrides (an experiment's arm: steps=3000) planned what they resolve to
    overrides = list((record or {}).get("provenance", {}).get("overrides") or [])
    try:
        resolved = recipe.resolve(name, overrides)
    except RecipeError:  # overrides the recipe no longer takes: its plan as written
        resolved = recipe.resolve(name)
    figures = recorded_figures(record) if record is not None else None
    if figures is not None and figures["recipe_hash"] is not None:
        figures["recipe_changed"] = figures["recipe_hash"] != resolved.recipe_hash
    trained = recorded_stage(record["provenance"], record["config"]) if record else resolved.hashed()
    return {
        "name": name,
        "from": resolved.from_stage,
        "note": resolved.data["note"],
        "planned_steps": resolved.steps,
        "planned_bytes": resolved.steps * resolved.data["batch_size"] * resolved.data["seq_len"],
        "objective": objective_text(trained),
        "recorded": figures,
        **({"overrides": overrides} if overrides else {}),
    }


def build_facts(model_id: str, served: dict, recipe: Recipe | None, others: list[dict], recipe_file: str = "") -> dict:
    """The card's training and evaluation facts: the recipe's stages in chain order, each with the figures of the
    bundled checkpoint that records it (the served one for the last stage, `others` for earlier ones), and totals.

    A stage whose checkpoint records overrides (an experiment's arm trained with steps=3000) plans what the recipe
    resolves to with them, and lists them under `overrides`. Refuses (ValueError) two bundled checkpoints that record
    the same stage: which one a card shows is not guessed.
    """
    if recipe is None:
        stages = [_served_only_stage(served)]
        served_stage = stages[0]["name"]
    else:
        chain = recipe.chain()
        served_stage = stage_of(served, recipe, chain)
        by_stage = _records_by_stage(served, served_stage, recipe, chain, others)
        stages = [_recipe_stage(recipe, name, by_stage.get(name)) for name in chain]
    by_sha = {s["recorded"]["sha256"]: s["name"] for s in stages if s["recorded"]}
    for stage in stages:
        if stage["recorded"]:
            stage["recorded"]["continues"] = by_sha.get(stage["recorded"]["init_checkpoint_sha256"])
    recorded = [s["recorded"] for s in stages if s["recorded"]]
    served_figures = recorded_figures(served)
    return {
        "model_id": model_id,
        "generated_by": (
            "manage.py write_card_facts (eqlm/card_facts.py, eqlm/card_evaluation.py), from the checkpoints' "
            "provenance, the export's metrics file and the stored convergence rows"
        ),
        "recipe": None if recipe is None else {"name": recipe.name, "file": recipe_file, "title": recipe.title},
        "served": {
            "checkpoint": served["file"],
            "sha256": served["sha256"],
            "stage": served_stage,
            "corpus": served_figures["corpus"],
            "corpus_sha256": served_figures["corpus_sha256"],
        },
        "stages": stages,
        "totals": {
            "stages": len(stages),
            "recorded_stages": len(recorded),
            "unrecorded": [s["name"] for s in stages if not s["recorded"]],
            "planned_steps": _sum(s["planned_steps"] for s in stages),
            "planned_bytes": _sum(s["planned_bytes"] for s in stages),
            "recorded_steps": _sum(r["steps"] for r in recorded),
            "bytes_seen": _sum(r["bytes_seen"] for r in recorded),
            "seconds": round(_sum(r["seconds"] for r in recorded) or 0.0, 1) or None,
        },
        "evaluation": {
            "heldout_check": served_figures["heldout_check"],
            "heldout_check_bytes": served_figures["heldout_check_bytes"],
            "heldout_fraction": served["provenance"].get("heldout_fraction"),
        },
    }
