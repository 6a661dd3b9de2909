"""The committed models' quality-and-convergence rows (fixtures/local_results.json): written by
`manage.py evaluate_convergence --write-fixture`, loaded by `manage.py seed` (idempotent, through ingest_records).

Format: {"format": "eqlm-portal-local-results", "version": 2, "models": {slug: {"run", "experiment", "arm", "seed",
"model_family", "model_name", "num_params", "config_hash", "git_commit", "columns": [metric, value, unit, n,
condition], "rows": [[...], ...], "series": [[metric, unit, n, condition without depth, [depth, ...], [value, ...]],
...]}}}. A row with a depth in its condition is stored in a series (one per metric, unit, n and the rest of the
condition): the evaluation's depths 1-128 would otherwise repeat each condition 128 times. Version 1 (rows only)
still loads.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "local_results.json"
FORMAT = "eqlm-portal-local-results"
VERSION = 2
COLUMNS = ("metric", "value", "unit", "n", "condition")
SHARED = ("run", "experiment", "arm", "seed", "model_family", "model_name", "num_params", "config_hash", "git_commit")


def _read(path: Path) -> dict:
    if not path.exists():
        return {"format": FORMAT, "version": VERSION, "models": {}}
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not an {FORMAT} fixture")
    return data


def model_entry(slug: str) -> dict:
    """The model's stored convergence rows (the run the charts use) in the fixture's compact form."""
    from results.models import ResultRow

    from .convergence import METRICS
    from .convergence_figures import stored_figures

    figures = stored_figures(slug)
    if not figures:
        raise ValueError(f"no quality-and-convergence rows are stored for {slug!r}")
    rows = (
        ResultRow.objects.filter(experiment="local", arm_label=slug, metric__in=METRICS)
        .filter(arm__run__run_id=figures["run"])
        .select_related("arm__run")
        .order_by("metric", "condition_key")
    )
    first = rows.first()
    run, arm = first.arm.run, first.arm
    fixed, by_depth = [], {}
    for r in rows:
        if "depth" not in r.condition:
            fixed.append([r.metric, r.value, r.unit, r.n, r.condition])
            continue
        rest = {k: v for k, v in r.condition.items() if k != "depth"}
        by_depth.setdefault(json.dumps([r.metric, r.unit, r.n, rest], sort_keys=True), {})[r.condition["depth"]] = (
            r.value
        )
    series = []
    for key in sorted(by_depth):
        depths = sorted(by_depth[key])
        series.append([*json.loads(key), depths, [by_depth[key][d] for d in depths]])
    entry = {
        "run": run.run_id,
        "experiment": run.experiment,
        "arm": arm.label,
        "seed": run.seed,
        "model_family": arm.model_family,
        "model_name": arm.model_name,
        "num_params": arm.num_params,
        "config_hash": run.config_hash,
        "git_commit": run.git_commit,
        "columns": list(COLUMNS),
        "rows": fixed,
        "series": series,
    }
    return entry


def write_fixture(slug: str, path: Path = FIXTURE) -> tuple[Path, int]:
    """Replace the model's entry in the fixture with its stored rows; (path, rows written)."""
    data = _read(path)
    entry = model_entry(slug)
    data["version"] = VERSION
    data["models"][slug] = entry
    data["models"] = dict(sorted(data["models"].items()))
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return path, len(records(entry))


def stored_entry(slug: str, path: Path = FIXTURE) -> dict | None:
    """The model's entry in the fixture (compact form), or None when it has none."""
    return _read(path)["models"].get(slug)


def records(entry: dict) -> list[dict]:
    """The entry's rows as ingest_records takes them (its series expanded, one row per depth)."""
    from eqlm.card_evaluation import local_rows

    shared = {k: entry.get(k) for k in SHARED}
    return [{**shared, **row, "step": None} for row in local_rows(entry)]


def load_fixture(path: Path = FIXTURE) -> int:
    """Ingest every model's rows (idempotent); returns how many new rows were created."""
    from results.records import ingest_records

    if not path.exists():
        return 0
    created = 0
    for slug, entry in _read(path)["models"].items():
        created += ingest_records(records(entry), source_name=f"fixtures/local_results.json:{slug}")
    return created
