"""Parsers for the programme's result files: bytes in, records in the generic long format out (no database).

Every parser returns a list of *records*: flat dicts in the generic long format documented in
`GENERIC_FIELDS` (and in benchmarks_app/FORMATS.md). Problems raise `IngestError` with a list of
`{"pointer": "/json/pointer" | "line": n, "message": ...}` entries, so nothing half-parsed is ever stored.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

FORMATS = {
    "harness_a": "harness A run record (results.json, seed and recipe in the sibling config.yaml)",
    "harness_b": "harness B run record (exp13/exp32: {experiment, seed, arms: {B1|C1: ...}})",
    "exp31_depth": "exp31 adaptive-depth file (explicit_fixed/eqlm_uniform/eqlm_adaptive_matched + tolerance_sweep)",
    "budget_sweep": 'budget sweep ({"4": {accuracy, num_correct, num_total}, ...})',
    "lm_eval": "lm-eval-style per-task results ({model, tasks: {name: {acc, acc_norm, n}}})",
    "compute_audit": "compute audit (scale/exp31_compute_audit.json)",
    "ladder": "benchmark ladder (web-data/ladder_exp40.json: {rows: [{model, tokens, mean6, <task>...}]})",
    "generic_csv": "generic long format, CSV with a header row",
    "generic_jsonl": "generic long format, one JSON object per line",
}

# The generic long format: one measurement per record. Required: run, experiment, arm, metric, value.
GENERIC_FIELDS = {
    "run": "run id, e.g. exp10_5090/exp10_seed42 (required)",
    "experiment": "experiment name, e.g. exp10_5090 (required)",
    "arm": "arm label, e.g. A1 (required)",
    "seed": "integer seed (optional; needed for paired comparisons)",
    "seed_inferred": "true when the seed was guessed from a path (optional)",
    "metric": "metric name, e.g. blimp_accuracy (required)",
    "value": "finite number (required)",
    "unit": "unit, e.g. fraction, nats, MB, s (optional)",
    "n": "number of items evaluated (optional integer)",
    "step": "training step (optional integer; empty = end of run)",
    "condition": 'evaluation condition, a flat JSON object such as {"budget": 8} (optional)',
    "model_family": "explicit, tied, tied-anytime, ... (optional)",
    "model_name": "model name (optional)",
    "num_params": "parameter count (optional integer)",
    "config_hash": "config hash of the run (optional)",
    "git_commit": "commit of the harness (optional)",
    "hardware": "hardware the run used (optional)",
    "pointer": "where in the source the value came from (optional; filled in by the parsers)",
}
REQUIRED = ("run", "experiment", "arm", "metric", "value")
MAX_ABS_VALUE = 1e15
MAX_DEPTH = 64
COMPRESSED_SUFFIXES = (".zip", ".gz", ".gzip", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".tar")
COMPRESSED_MAGIC = (b"PK\x03\x04", b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"7z\xbc\xaf", b"\x28\xb5\x2f\xfd")


class IngestError(Exception):
    """A file that cannot be ingested; `errors` lists each problem with the pointer or line where it happened."""

    def __init__(self, message: str, errors: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.errors = errors or [{"pointer": "", "message": message}]


@dataclass
class Parsed:
    format: str
    records: list[dict]
    notes: list[str] = field(default_factory=list)
    run_configs: dict[str, dict] = field(default_factory=dict)


def _err(message: str, pointer: str = "") -> IngestError:
    return IngestError(message, [{"pointer": pointer, "message": message}])


# --- decoding -------------------------------------------------------------------------------------


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number this importer accepts (NaN and Infinity are refused)")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is too large")
    return value


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > 18:
        raise ValueError(f"integer {text[:40]}... is too large")
    return int(text)


def decode_text(data: bytes) -> str:
    if not data:
        raise _err("The file is empty (0 bytes).")
    for magic in COMPRESSED_MAGIC:
        if data.startswith(magic):
            raise _err("Compressed archives (zip, gzip, ...) are not accepted; upload the uncompressed result file.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _err(f"The file is not UTF-8 text (invalid byte at offset {exc.start}).")
    if "\x00" in text:
        raise _err("The file contains NUL bytes; it is not a text result file.")
    return text.lstrip("\ufeff")


def _check_depth(obj, limit: int = MAX_DEPTH) -> None:
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise _err(f"The JSON is nested more than {limit} levels deep.")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def load_json(text: str):
    try:
        obj = json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float, parse_int=_parse_int)
    except RecursionError:
        raise _err(f"The JSON is nested more than {MAX_DEPTH} levels deep.")
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"Malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            [{"line": exc.lineno, "column": exc.colno, "message": f"Malformed JSON: {exc.msg}"}],
        )
    except ValueError as exc:
        raise _err(f"Malformed JSON: {exc}.")
    _check_depth(obj)
    return obj


# --- paths ----------------------------------------------------------------------------------------

_CONTAINERS = {"results", "scale", "web-data", "anchor-results", "uploads", "."}
_GENERIC_STEMS = {"results", "budget_sweep", "metrics", "eval", "config", "summary"}
_SEED_RE = re.compile(r"(?:seed|_s)(\d{1,6})(?![0-9])", re.I)


def split_hint(path_hint: str, *, strip_containers: bool = True) -> list[str]:
    parts = [p for p in PurePosixPath(path_hint.replace("\\", "/")).parts if p not in ("/", "", "..")]
    for marker in ("anchor-results", "results"):
        if marker in parts:
            parts = parts[len(parts) - parts[::-1].index(marker) :]
            break
    while strip_containers and parts and parts[0] in _CONTAINERS:
        parts = parts[1:]
    return parts


def run_id_from_hint(path_hint: str) -> str:
    """The run id a path names: `exp10_5090/exp10_seed42/results.json` -> `exp10_5090/exp10_seed42`.

    A generic file name (results.json, budget_sweep.json) names its folder; otherwise the file itself
    is the run (`scale/exp32/seed42.json` -> `scale/exp32/seed42`).
    """
    parts = split_hint(path_hint, strip_containers=False)
    if not parts:
        return ""
    stem = PurePosixPath(parts[-1]).stem
    if "." in parts[-1] and (stem in _GENERIC_STEMS or len(parts) > 1 and stem.lower() in _GENERIC_STEMS):
        parts = parts[:-1]
    elif "." in parts[-1]:
        parts = [*parts[:-1], stem]
    return "/".join(parts)


def experiment_from_hint(path_hint: str) -> str:
    """The first meaningful path component with a trailing seed suffix removed (exp05_full_v4_s43 -> exp05_full_v4)."""
    parts = split_hint(path_hint)
    if not parts:
        return ""
    first = parts[0] if len(parts) > 1 else PurePosixPath(parts[0]).stem
    return re.sub(r"_(?:seed|s)\d+$", "", first, flags=re.I)


def seed_from_text(text: str) -> int | None:
    matches = _SEED_RE.findall(text or "")
    return int(matches[-1]) if matches else None


# --- detection ------------------------------------------------------------------------------------


def detect_format(text: str, name: str = "") -> str:
    """Name the format of `text` by its content (the file name only breaks ties)."""
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            obj = load_json(text)
        except IngestError:
            if stripped.startswith("{") and "\n" in stripped.strip() and _looks_like_jsonl(stripped):
                return "generic_jsonl"
            raise
        return detect_json_format(obj)
    first_line = stripped.splitlines()[0] if stripped else ""
    header = {h.strip().lower() for h in first_line.split(",")}
    if {"run", "experiment", "arm", "metric", "value"} <= header:
        return "generic_csv"
    if re.match(r"^[A-Za-z_]+:\s*$", first_line) or name.endswith((".yaml", ".yml")):
        raise _err(
            "This looks like a config.yaml: it holds a run's recipe and seed, not results. "
            "Upload it together with its results.json (same folder in the path hints)."
        )
    raise _err(unknown_format_message())


def _looks_like_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines[:5])


def unknown_format_message() -> str:
    return "Unknown result format. Understood formats: " + "; ".join(f"{k} ({v})" for k, v in FORMATS.items()) + "."


def detect_json_format(obj) -> str:
    if isinstance(obj, list):
        if obj and all(isinstance(r, dict) and "metric" in r for r in obj[:5]):
            return "generic_jsonl"
        raise _err(unknown_format_message())
    if not isinstance(obj, dict):
        raise _err(unknown_format_message())
    arms = obj.get("arms")
    if isinstance(arms, dict) and ("tolerance_sweep" in obj or "eqlm_checkpoint" in obj or "explicit_fixed" in arms):
        return "exp31_depth"
    if isinstance(arms, dict) and arms:
        first = next(iter(arms.values()))
        if isinstance(first, dict) and ("kind" in first or "arm" in first) and "seed" in obj:
            return "harness_b"
        if isinstance(first, dict) and ("total_time_sec" in first or "iteration" in obj or "model_name" in first):
            return "harness_a"
    if "compute" in obj and "params" in obj:
        return "compute_audit"
    rows = obj.get("rows")
    if isinstance(rows, list) and rows and isinstance(rows[0], dict) and ("mean6" in rows[0] or "tokens" in rows[0]):
        return "ladder"
    if isinstance(obj.get("tasks"), dict) or (
        isinstance(obj.get("results"), dict) and ("model" in obj or "config" in obj)
    ):
        return "lm_eval"
    if obj and all(re.fullmatch(r"\d+", str(k)) for k in obj) and all(isinstance(v, dict) for v in obj.values()):
        return "budget_sweep"
    if "metric" in obj and "value" in obj:
        return "generic_jsonl"
    raise _err(unknown_format_message())


# --- helpers for the run-record parsers -------------------------------------------------------------


def _num(obj: dict, key: str, pointer: str, *, required: bool = False) -> float | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise _err(f"Missing number {key!r}.", f"{pointer}/{key}")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _err(f"{key!r} must be a number, not {type(value).__name__}.", f"{pointer}/{key}")
    return float(value)


def _int(obj: dict, key: str, pointer: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise _err(f"{key!r} must be an integer.", f"{pointer}/{key}")
    return int(value)


def _dict(obj, pointer: str) -> dict:
    if not isinstance(obj, dict):
        raise _err(f"Expected an object, found {type(obj).__name__}.", pointer)
    return obj


def _loss_records(base: dict, curve, pointer: str) -> list[dict]:
    if curve is None:
        return []
    if not isinstance(curve, list):
        raise _err("loss_curve must be a list of {step, loss}.", pointer)
    out = []
    for i, point in enumerate(curve):
        p = f"{pointer}/{i}"
        point = _dict(point, p)
        step = _int(point, "step", p)
        loss = _num(point, "loss", p, required=True)
        if step is None:
            raise _err("Missing integer 'step'.", f"{p}/step")
        out.append(
            {**base, "metric": "train_loss", "value": loss, "unit": "nats", "step": step, "pointer": f"{p}/loss"}
        )
    return out


def family_for(label: str, model_name: str = "", kind: str = "") -> str:
    text = f"{label} {model_name}".lower()
    if "explicit" in text:
        return "explicit"
    if kind:
        return f"tied-{kind}"
    if "eqlm" in text or "tied" in text:
        return "tied"
    return ""


# --- harness A ------------------------------------------------------------------------------------

_HARNESS_A_SCALARS = [
    ("total_time_sec", "train_time_sec", "s"),
    ("peak_memory_mb", "peak_memory_mb", "MB"),
    ("total_steps", "total_steps", "steps"),
    ("solver_mean_iterations", "solver_mean_iterations", "iterations"),
    ("solver_convergence_rate", "solver_convergence_rate", "fraction"),
    ("solver_max_iterations", "solver_max_iterations", "iterations"),
    ("solver_min_iterations", "solver_min_iterations", "iterations"),
]


def parse_config_yaml(text: str) -> dict:
    import yaml

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _err(f"config.yaml is not valid YAML: {str(exc).splitlines()[0]}")
    if not isinstance(config, dict):
        raise _err("config.yaml must hold a mapping.")
    return config


def parse_harness_a(obj: dict, *, path_hint: str, config: dict | None, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint)
    if not run_id:
        raise _err("Harness A files need a path hint such as exp10_5090/exp10_seed42/results.json (it names the run).")
    notes = []
    seed, inferred = None, False
    training = (config or {}).get("training") if isinstance(config, dict) else None
    if isinstance(training, dict) and isinstance(training.get("seed"), int) and not isinstance(training["seed"], bool):
        seed = training["seed"]
    else:
        seed = seed_from_text(run_id)
        inferred = seed is not None
        if seed is None:
            raise _err(
                "The seed of a harness A run lives in its config.yaml: upload config.yaml beside results.json "
                "or give a path hint that names the seed (…_seed42/results.json).",
                "/",
            )
        notes.append(f"seed {seed} inferred from the path {path_hint!r} (no config.yaml)")
    arms = _dict(obj.get("arms"), "/arms")
    yaml_arms = (config or {}).get("arms") if isinstance(config, dict) else None
    hardware = "RTX 5090" if "5090" in path_hint else ""
    base_run = {
        "run": run_id,
        "experiment": experiment or experiment_from_hint(path_hint),
        "seed": seed,
        "seed_inferred": inferred,
        "config_hash": str(obj.get("config_hash") or ""),
        "git_commit": str(obj.get("git_commit") or ""),
        "hardware": hardware,
    }
    records: list[dict] = []
    for label, arm in arms.items():
        p = f"/arms/{label}"
        arm = _dict(arm, p)
        model_name = str(arm.get("model_name") or "")
        recipe = yaml_arms.get(label) if isinstance(yaml_arms, dict) and isinstance(yaml_arms.get(label), dict) else {}
        if not recipe and isinstance(arm.get("config"), dict):
            recipe = {"config": arm["config"], "source": "results.json (the yaml recipe was not uploaded)"}
        base = {
            **base_run,
            "arm": str(label),
            "model_family": family_for(str(label), (recipe or {}).get("name", "") or model_name),
            "model_name": str(recipe.get("name") or model_name),
            "num_params": _int(arm, "num_params", p),
            "recipe": recipe,
        }
        blimp = _num(arm, "blimp_accuracy", p)
        if blimp is not None:
            records.append(
                {
                    **base,
                    "metric": "blimp_accuracy",
                    "value": blimp,
                    "unit": "fraction",
                    "n": _int(arm, "blimp_num_total", p),
                    "pointer": f"{p}/blimp_accuracy",
                }
            )
        for key, metric, unit in _HARNESS_A_SCALARS:
            value = _num(arm, key, p)
            if value is not None:
                records.append({**base, "metric": metric, "value": value, "unit": unit, "pointer": f"{p}/{key}"})
        loss = _loss_records(base, arm.get("loss_curve"), f"{p}/loss_curve")
        if loss:
            last = loss[-1]
            records.append({**last, "metric": "final_loss", "step": None})
        records.extend(loss)
    run_config = {k: v for k, v in obj.items() if k != "arms"}
    if config:
        run_config = {"config_yaml": config, "results_header": run_config}
    return Parsed("harness_a", records, notes, {run_id: run_config})


# --- harness B ------------------------------------------------------------------------------------


def parse_harness_b(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint)
    seed = _int(obj, "seed", "")
    if not run_id:
        run_id = f"{obj.get('experiment') or 'harness_b'}_seed{seed}"
    exp = experiment or experiment_from_hint(path_hint) or str(obj.get("experiment") or "")
    arms = _dict(obj.get("arms"), "/arms")
    notes = ["the control block is not ingested (it is stale for some seeds; pair on real baseline rows)"]
    base_run = {
        "run": run_id,
        "experiment": exp,
        "seed": seed,
        "seed_inferred": False,
        "config_hash": str(obj.get("config_hash") or ""),
        "git_commit": str(obj.get("git_commit") or ""),
    }
    records = []
    for label, arm in arms.items():
        p = f"/arms/{label}"
        arm = _dict(arm, p)
        kind = str(arm.get("kind") or "")
        base = {
            **base_run,
            "arm": str(label),
            "model_family": family_for(str(label), "", kind),
            "model_name": f"{label} ({kind})" if kind else str(label),
            "num_params": _int(arm, "num_params", p),
            "recipe": {"kind": kind, "spec": obj.get("spec")},
        }
        blimp = _num(arm, "blimp_accuracy", p)
        if blimp is not None:
            n = _int(arm, "blimp_num_total", p)
            records.append({**base, "metric": "blimp_accuracy", "value": blimp, "unit": "fraction", "n": n,
                            "pointer": f"{p}/blimp_accuracy"})  # fmt: skip
        for key, unit in [
            ("final_loss", "nats"),
            ("peak_memory_mb", "MB"),
            ("train_time_sec", "s"),
            ("solver_mean_iterations", "iterations"),
            ("solver_convergence_rate", "fraction"),
        ]:
            value = _num(arm, key, p)
            if value is not None:
                records.append({**base, "metric": key, "value": value, "unit": unit, "pointer": f"{p}/{key}"})
        records.extend(_loss_records(base, arm.get("loss_curve"), f"{p}/loss_curve"))
    header = {k: v for k, v in obj.items() if k not in ("arms",)}
    return Parsed("harness_b", records, notes, {run_id: header})


# --- exp31 depth files ----------------------------------------------------------------------------


def parse_exp31(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    checkpoint = str(obj.get("eqlm_checkpoint") or "")
    seed = _int(obj, "seed", "")
    inferred = False
    if seed is None:
        seed = seed_from_text(checkpoint)
    if seed is None:
        seed = seed_from_text(path_hint)
        inferred = seed is not None
    if seed is None:
        raise _err("The exp31 file names no seed (in the file, its checkpoint name or the path hint).", "/")
    run_id = run_id_from_hint(path_hint) or f"exp31_seed{seed}"
    base_run = {"run": run_id, "experiment": experiment or "exp31", "seed": seed, "seed_inferred": inferred}
    arms = _dict(obj.get("arms"), "/arms")
    calibration = obj.get("calibration") if isinstance(obj.get("calibration"), dict) else {}
    records = []
    families = {"explicit_fixed": "explicit", "eqlm_uniform": "tied-anytime", "eqlm_adaptive_matched": "tied-anytime"}
    for label, arm in arms.items():
        p = f"/arms/{label}"
        arm = _dict(arm, p)
        base = {**base_run, "arm": str(label), "model_family": families.get(label, family_for(label)),
                "model_name": str(label), "recipe": {k: v for k, v in arm.items() if k == "tolerance"}}  # fmt: skip
        if _num(arm, "blimp", p) is not None:
            records.append({**base, "metric": "blimp_accuracy", "value": _num(arm, "blimp", p), "unit": "fraction",
                            "pointer": f"{p}/blimp"})  # fmt: skip
        if _num(arm, "mean_depth", p) is not None:
            records.append({**base, "metric": "mean_depth", "value": _num(arm, "mean_depth", p),
                            "unit": "iterations", "pointer": f"{p}/mean_depth"})  # fmt: skip
    sweep = obj.get("tolerance_sweep") or []
    if not isinstance(sweep, list):
        raise _err("tolerance_sweep must be a list.", "/tolerance_sweep")
    matched_tol = _num(calibration, "tolerance", "/calibration") if calibration else None
    for i, point in enumerate(sweep):
        p = f"/tolerance_sweep/{i}"
        point = _dict(point, p)
        tol = _num(point, "tolerance", p, required=True)
        multiple = round(tol / matched_tol) if matched_tol else i + 1
        base = {**base_run, "arm": "eqlm_adaptive", "model_family": "tied-anytime", "model_name": "eqlm_adaptive",
                "condition": {"tolerance_multiple": multiple}}  # fmt: skip
        records.append({**base, "metric": "blimp_accuracy", "value": _num(point, "blimp", p, required=True),
                        "unit": "fraction", "pointer": f"{p}/blimp"})  # fmt: skip
        records.append({**base, "metric": "mean_depth", "value": _num(point, "mean_depth", p, required=True),
                        "unit": "iterations", "pointer": f"{p}/mean_depth"})  # fmt: skip
        records.append({**base, "metric": "tolerance", "value": tol, "unit": "", "pointer": f"{p}/tolerance"})
    config = {k: v for k, v in obj.items() if k not in ("arms", "tolerance_sweep")}
    return Parsed("exp31_depth", records, [], {run_id: config})


# --- budget sweep ---------------------------------------------------------------------------------


def parse_budget_sweep(obj: dict, *, path_hint: str, experiment: str | None, arm: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint)
    seed = seed_from_text(path_hint)
    if not run_id or seed is None:
        raise _err(
            "A budget_sweep.json needs a path hint naming its run and seed, e.g. exp13_seed42/budget_sweep.json."
        )
    label = arm or "B1"
    base = {"run": run_id, "experiment": experiment or experiment_from_hint(path_hint), "seed": seed,
            "seed_inferred": True, "arm": label}  # fmt: skip
    records = []
    for budget, entry in obj.items():
        p = f"/{budget}"
        entry = _dict(entry, p)
        records.append({**base, "metric": "blimp_accuracy", "value": _num(entry, "accuracy", p, required=True),
                        "unit": "fraction", "n": _int(entry, "num_total", p), "condition": {"budget": int(budget)},
                        "pointer": f"{p}/accuracy"})  # fmt: skip
    notes = [f"arm {label} assumed (budget sweeps name no arm); seed {seed} from the path"]
    return Parsed("budget_sweep", records, notes, {})


# --- lm-eval style ---------------------------------------------------------------------------------


def parse_lm_eval(obj: dict, *, path_hint: str, experiment: str | None, arm: str | None) -> Parsed:
    model = str(obj.get("model") or (obj.get("config") or {}).get("model_args") or arm or "model")[:100]
    tasks = obj.get("tasks") if isinstance(obj.get("tasks"), dict) else obj.get("results")
    tasks = _dict(tasks, "/tasks")
    seed = _int(obj, "seed", "")
    run_id = run_id_from_hint(path_hint) or f"lm_eval/{model}"
    base = {"run": run_id, "experiment": experiment or experiment_from_hint(path_hint) or "lm_eval", "seed": seed,
            "arm": arm or model, "model_name": model}  # fmt: skip
    key = "tasks" if isinstance(obj.get("tasks"), dict) else "results"
    records = []
    for task, scores in tasks.items():
        p = f"/{key}/{task}"
        scores = _dict(scores, p)
        n = _int(scores, "n", p)
        for field_name, value in scores.items():
            metric = field_name.split(",", 1)[0]
            if metric not in ("acc", "acc_norm") or value is None:
                continue
            val = _num(scores, field_name, p)
            records.append({**base, "metric": "task_accuracy" if metric == "acc" else "task_accuracy_norm",
                            "value": val, "unit": "fraction", "n": n, "condition": {"task": str(task)},
                            "pointer": f"{p}/{field_name}"})  # fmt: skip
    if not records:
        raise _err("No acc or acc_norm values found in the task results.", f"/{key}")
    return Parsed("lm_eval", records, [], {})


# --- compute audit and ladder ----------------------------------------------------------------------


def parse_compute_audit(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint) or "exp31_compute_audit"
    params = _dict(obj.get("params"), "/params")
    compute = _dict(obj.get("compute"), "/compute")
    base = {"run": run_id, "experiment": experiment or "exp31_audit"}
    spec = [
        ("eqlm", "params_total_M", params, "eqlm_total_M", "/params"),
        ("eqlm", "params_embeddings_M", params, "eqlm_embeddings_M", "/params"),
        ("eqlm", "params_block_M", params, "eqlm_block_M", "/params"),
        ("explicit", "params_total_M", params, "explicit_total_M", "/params"),
        ("explicit", "params_embeddings_M", params, "explicit_embeddings_M", "/params"),
        ("explicit", "params_block_M", params, "explicit_layers_M", "/params"),
        ("eqlm", "compute_units_per_block_M", compute, "eqlm_units_per_iteration_M", "/compute"),
        ("explicit", "compute_units_per_block_M", compute, "explicit_units_per_layer_M", "/compute"),
    ]
    records = []
    for arm, metric, source, key, pointer in spec:
        value = _num(source, key, pointer)
        if value is not None:
            family = "explicit" if arm == "explicit" else "tied-anytime"
            records.append({**base, "arm": arm, "model_family": family, "metric": metric, "value": value,
                            "unit": "M", "pointer": f"{pointer}/{key}"})  # fmt: skip
    if not records:
        raise _err("The compute audit holds none of the expected params/compute numbers.", "/compute")
    config = {k: v for k, v in obj.items() if k != "seeds"}
    notes = ["the per-seed block repeats the exp31 seed files and is not ingested twice"]
    return Parsed("compute_audit", records, notes, {run_id: config})


LADDER_TASKS = ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq", "lambada_openai"]


def parse_ladder(obj: dict, *, path_hint: str, experiment: str | None) -> Parsed:
    run_id = run_id_from_hint(path_hint) or "ladder_exp40"
    rows = obj.get("rows")
    if not isinstance(rows, list):
        raise _err("rows must be a list.", "/rows")
    records = []
    for i, row in enumerate(rows):
        p = f"/rows/{i}"
        row = _dict(row, p)
        model = row.get("model")
        if not isinstance(model, str) or not model:
            raise _err("Each ladder row needs a model name.", f"{p}/model")
        tokens = str(row.get("tokens") or "")
        ours = bool(row.get("ours"))
        base = {"run": run_id, "experiment": experiment or "exp40_ladder", "arm": model[:100],
                "model_name": model[:200], "model_family": "programme" if ours else "reference",
                "recipe": {"ours": ours}}  # fmt: skip
        for key in row:
            if key in ("model", "tokens", "ours"):
                continue
            val = _num(row, key, p)
            if val is None:
                continue
            metric = "ladder_mean6" if key == "mean6" else "ladder_accuracy"
            condition = {"tokens": tokens} if key == "mean6" else {"tokens": tokens, "task": key}
            records.append({**base, "metric": metric, "value": val, "unit": "fraction", "condition": condition,
                            "pointer": f"{p}/{key}"})  # fmt: skip
    notes = []
    if obj.get("chance_note"):
        notes.append(str(obj["chance_note"]))
    return Parsed("ladder", records, notes, {run_id: {k: v for k, v in obj.items() if k != "rows"}})


# --- generic long format ----------------------------------------------------------------------------


def _coerce_generic(raw: dict, where: dict) -> dict:
    record = {}
    for key, value in raw.items():
        if key not in GENERIC_FIELDS and key not in ("recipe", "run_config"):
            raise IngestError(f"Unknown column {key!r}.", [{**where, "message": f"Unknown column {key!r}"}])
        if value in ("", None):
            continue
        record[key] = value
    for key in ("seed", "n", "step", "num_params"):
        if isinstance(record.get(key), str):
            try:
                record[key] = int(record[key])
            except ValueError:
                raise IngestError(f"{key} must be an integer", [{**where, "message": f"{key} must be an integer"}])
    if isinstance(record.get("value"), str):
        try:
            record["value"] = _parse_float(record["value"])
        except ValueError:
            raise IngestError("value must be a finite number", [{**where, "message": "value must be a finite number"}])
    if isinstance(record.get("condition"), str):
        try:
            record["condition"] = load_json(record["condition"])
        except IngestError:
            raise IngestError("condition must be a JSON object", [{**where, "message": "condition must be JSON"}])
    if isinstance(record.get("seed_inferred"), str):
        record["seed_inferred"] = record["seed_inferred"].strip().lower() in ("1", "true", "yes")
    record.setdefault("pointer", where.get("pointer") or f"line {where.get('line')}")
    return record


def parse_generic_csv(text: str) -> Parsed:
    reader = csv.DictReader(io.StringIO(text))
    records = []
    try:
        for row in reader:
            line = reader.line_num
            if None in row:
                raise IngestError("Too many fields", [{"line": line, "message": "more fields than header columns"}])
            records.append(_coerce_generic({k.strip(): v for k, v in row.items() if k is not None}, {"line": line}))
    except csv.Error as exc:
        raise IngestError(f"Malformed CSV: {exc}", [{"line": reader.line_num, "message": str(exc)}])
    if not records:
        raise _err("The CSV has a header but no rows.")
    return Parsed("generic_csv", records)


def parse_generic_jsonl(text: str) -> Parsed:
    stripped = text.strip()
    records = []
    if stripped.startswith("["):
        items = load_json(stripped)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise _err("Each record must be a JSON object.", f"/{i}")
            records.append(_coerce_generic(item, {"pointer": f"/{i}"}))
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = load_json(line)
            except IngestError as exc:
                raise IngestError(f"line {lineno}: {exc.message}", [{"line": lineno, "message": exc.message}])
            if not isinstance(item, dict):
                raise IngestError(f"line {lineno}: not a JSON object", [{"line": lineno, "message": "not an object"}])
            records.append(_coerce_generic(item, {"line": lineno}))
    if not records:
        raise _err("No records found.")
    return Parsed("generic_jsonl", records)


# --- entry point ------------------------------------------------------------------------------------


def parse_bytes(
    data: bytes,
    *,
    name: str = "",
    path_hint: str = "",
    fmt: str = "",
    companion: bytes | None = None,
    experiment: str | None = None,
    arm: str | None = None,
) -> Parsed:
    """Decode, detect (unless `fmt` is given) and parse one file into generic records."""
    hint = path_hint or name
    lower = hint.lower()
    if lower.endswith(COMPRESSED_SUFFIXES) or name.lower().endswith(COMPRESSED_SUFFIXES):
        raise _err("Compressed archives (zip, gzip, ...) are not accepted; upload the uncompressed result file.")
    if fmt and fmt not in FORMATS:
        raise _err(f"Unknown format {fmt!r}. " + unknown_format_message())
    text = decode_text(data)
    fmt = fmt or detect_format(text, hint)
    if fmt == "generic_csv":
        return parse_generic_csv(text)
    if fmt == "generic_jsonl":
        return parse_generic_jsonl(text)
    obj = load_json(text)
    if not isinstance(obj, dict):
        raise _err(f"A {fmt} file must hold a JSON object.", "/")
    config = None
    if companion:
        config = parse_config_yaml(decode_text(companion))
    try:
        if fmt == "harness_a":
            return parse_harness_a(obj, path_hint=hint, config=config, experiment=experiment)
        if fmt == "harness_b":
            return parse_harness_b(obj, path_hint=hint, experiment=experiment)
        if fmt == "exp31_depth":
            return parse_exp31(obj, path_hint=hint, experiment=experiment)
        if fmt == "budget_sweep":
            return parse_budget_sweep(obj, path_hint=hint, experiment=experiment, arm=arm)
        if fmt == "lm_eval":
            return parse_lm_eval(obj, path_hint=hint, experiment=experiment, arm=arm)
        if fmt == "compute_audit":
            return parse_compute_audit(obj, path_hint=hint, experiment=experiment)
        if fmt == "ladder":
            return parse_ladder(obj, path_hint=hint, experiment=experiment)
    except (AttributeError, TypeError, KeyError, ValueError, OverflowError, ZeroDivisionError) as exc:
        raise _err(f"The {fmt} file does not have the expected structure ({type(exc).__name__}: {exc}).")
    raise _err(unknown_format_message())
