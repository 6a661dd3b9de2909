"""What every result-file parser shares: the generic long format, errors with pointers, safe decoding, path hints.

Every parser returns *records*: flat dicts in the generic long format documented in `GENERIC_FIELDS`
(results/generic.py, and benchmarks_app/FORMATS.md). Problems raise `IngestError` with a list of
`{"pointer": "/json/pointer" | "line": n, "message": ...}` entries, so nothing half-parsed is ever stored.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from results.generic import GENERIC_FIELDS, MAX_ABS_VALUE, REQUIRED, IngestError  # noqa: F401  (the parsers' API)

MAX_JSON_NESTING = 64  # levels of JSON nesting an upload may have (not the model's depth)
COMPRESSED_SUFFIXES = (".zip", ".gz", ".gzip", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".tar")
COMPRESSED_MAGIC = (b"PK\x03\x04", b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"7z\xbc\xaf", b"\x28\xb5\x2f\xfd")


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


def _check_depth(obj, limit: int = MAX_JSON_NESTING) -> None:
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
        raise _err(f"The JSON is nested more than {MAX_JSON_NESTING} levels deep.")
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
