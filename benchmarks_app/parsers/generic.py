"""The generic long format itself: CSV with a header row, or one JSON object per line."""

from __future__ import annotations

import csv
import io

from .base import (
    GENERIC_FIELDS,
    IngestError,
    Parsed,
    _err,
    _parse_float,
    load_json,
)


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
