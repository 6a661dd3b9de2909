"""Name a result file's format from its content (the file name only breaks ties)."""

from __future__ import annotations

import re

from .base import (
    IngestError,
    _err,
    load_json,
)


class UnknownFormat(IngestError):
    """No format recognises the content; parse_bytes (registry.py) answers with the formats it understands."""


def _unknown() -> UnknownFormat:
    message = "Unknown result format."
    return UnknownFormat(message, [{"pointer": "", "message": message}])


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
    raise _unknown()


def _looks_like_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines[:5])


def detect_json_format(obj) -> str:
    if isinstance(obj, list):
        if obj and all(isinstance(r, dict) and "metric" in r for r in obj[:5]):
            return "generic_jsonl"
        raise _unknown()
    if not isinstance(obj, dict):
        raise _unknown()
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
    raise _unknown()
