"""The project's normalized result-row fixture: pack parsed sources compactly, unpack them into generic records.

Format (fixtures/results.json): {"format": "eqlm-portal-results", "version": 1, "sources": [{path, sha256,
format, notes, run_configs, runs: {run_id: {...}}, arms: {"run|arm": {...}}, columns: [...], rows: [[...]]}]}.
"""

from __future__ import annotations

RUN_FIELDS = ("experiment", "seed", "seed_inferred", "config_hash", "git_commit", "hardware")
ARM_FIELDS = ("model_family", "model_name", "num_params", "recipe")
ROW_COLUMNS = ("run", "arm", "metric", "value", "unit", "n", "step", "condition", "pointer")
FORMAT = "eqlm-portal-results"
VERSION = 1


def pack_source(path: str, sha256: str, parsed) -> dict:
    runs, arms, rows = {}, {}, []
    for rec in parsed.records:
        runs.setdefault(rec["run"], {k: rec.get(k) for k in RUN_FIELDS if rec.get(k) not in (None, "")})
        arms.setdefault(
            f"{rec['run']}|{rec['arm']}", {k: rec.get(k) for k in ARM_FIELDS if rec.get(k) not in (None, "", {})}
        )
        rows.append([rec.get(col) if col != "condition" else (rec.get("condition") or None) for col in ROW_COLUMNS])
    return {
        "path": path,
        "sha256": sha256,
        "format": parsed.format,
        "notes": parsed.notes,
        "run_configs": parsed.run_configs,
        "runs": runs,
        "arms": arms,
        "columns": list(ROW_COLUMNS),
        "rows": rows,
    }


def unpack_source(source: dict) -> list[dict]:
    """Generic long-format records for one packed source."""
    columns = source["columns"]
    records = []
    for values in source["rows"]:
        row = dict(zip(columns, values, strict=True))
        rec = {**source["runs"][row["run"]], **source["arms"][f"{row['run']}|{row['arm']}"]}
        rec.update({k: v for k, v in row.items() if v is not None})
        records.append(rec)
    return records
