"""The format registry: each result format's name, description and parser, and `parse_bytes`, the one entry point.

Adding a format: write its module in this package (a function returning `Parsed`), register it in `REGISTRY`
and teach `detect.py` to recognise it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import budget_sweep, compute_audit, exp31, generic, harness_a, harness_b, ladder, lm_eval
from .base import COMPRESSED_SUFFIXES, Parsed, _err, decode_text, load_json
from .detect import UnknownFormat, detect_format


@dataclass(frozen=True)
class Source:
    """One file to parse, decoded, with what the uploader said about it."""

    text: str
    path_hint: str
    obj: dict | None = None
    config: dict | None = None
    experiment: str | None = None
    arm: str | None = None


@dataclass(frozen=True)
class Format:
    description: str
    parse: Callable[[Source], Parsed]
    json_object: bool = True  # the file must hold one JSON object (else the parser reads the text itself)


REGISTRY: dict[str, Format] = {
    "harness_a": Format(
        "harness A run record (results.json, seed and recipe in the sibling config.yaml)",
        lambda s: harness_a.parse_harness_a(s.obj, path_hint=s.path_hint, config=s.config, experiment=s.experiment),
    ),
    "harness_b": Format(
        "harness B run record (exp13/exp32: {experiment, seed, arms: {B1|C1: ...}})",
        lambda s: harness_b.parse_harness_b(s.obj, path_hint=s.path_hint, experiment=s.experiment),
    ),
    "exp31_depth": Format(
        "exp31 adaptive-depth file (explicit_fixed/eqlm_uniform/eqlm_adaptive_matched + tolerance_sweep)",
        lambda s: exp31.parse_exp31(s.obj, path_hint=s.path_hint, experiment=s.experiment),
    ),
    "budget_sweep": Format(
        'budget sweep ({"4": {accuracy, num_correct, num_total}, ...})',
        lambda s: budget_sweep.parse_budget_sweep(s.obj, path_hint=s.path_hint, experiment=s.experiment, arm=s.arm),
    ),
    "lm_eval": Format(
        "lm-eval-style per-task results ({model, tasks: {name: {acc, acc_norm, n}}})",
        lambda s: lm_eval.parse_lm_eval(s.obj, path_hint=s.path_hint, experiment=s.experiment, arm=s.arm),
    ),
    "compute_audit": Format(
        "compute audit (scale/exp31_compute_audit.json)",
        lambda s: compute_audit.parse_compute_audit(s.obj, path_hint=s.path_hint, experiment=s.experiment),
    ),
    "ladder": Format(
        "benchmark ladder (web-data/ladder_exp40.json: {rows: [{model, tokens, mean6, <task>...}]})",
        lambda s: ladder.parse_ladder(s.obj, path_hint=s.path_hint, experiment=s.experiment),
    ),
    "generic_csv": Format(
        "generic long format, CSV with a header row", lambda s: generic.parse_generic_csv(s.text), json_object=False
    ),
    "generic_jsonl": Format(
        "generic long format, one JSON object per line",
        lambda s: generic.parse_generic_jsonl(s.text),
        json_object=False,
    ),
}
FORMATS = {name: entry.description for name, entry in REGISTRY.items()}  # name -> description, for forms and docs
STRUCTURE_ERRORS = (AttributeError, TypeError, KeyError, ValueError, OverflowError, ZeroDivisionError)


def unknown_format_message() -> str:
    return "Unknown result format. Understood formats: " + "; ".join(f"{k} ({v})" for k, v in FORMATS.items()) + "."


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
    try:
        fmt = fmt or detect_format(text, hint)
    except UnknownFormat:
        raise _err(unknown_format_message()) from None
    entry = REGISTRY[fmt]
    if not entry.json_object:
        return entry.parse(Source(text, hint, experiment=experiment, arm=arm))
    obj = load_json(text)
    if not isinstance(obj, dict):
        raise _err(f"A {fmt} file must hold a JSON object.", "/")
    config = harness_a.parse_config_yaml(decode_text(companion)) if companion else None
    try:
        return entry.parse(Source(text, hint, obj=obj, config=config, experiment=experiment, arm=arm))
    except STRUCTURE_ERRORS as exc:
        raise _err(f"The {fmt} file does not have the expected structure ({type(exc).__name__}: {exc}).")
