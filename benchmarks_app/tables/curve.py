"""Curve tables: one metric over a condition (budget, step) per arm, optionally as a ratio to a baseline."""

from __future__ import annotations

from results import stats
from results.models import ResultRow

from ..models import Comparison
from .cells import _cell, _per_seed_text, _ratio_cell, _stat_options, _summary_cell, _x_text
from .checks import check
from .queries import _condition_value, per_seed, provenance


def build_curve(c: Comparison) -> dict:
    """A metric over one condition key (budget, depth): per arm and x, mean ± SD over seeds, optional ratio."""
    spec = c.spec or {}
    x_key = spec.get("x_key", "budget")
    qs = ResultRow.objects.filter(experiment=c.treatment_experiment, metric=c.metric, condition_key__contains=x_key)
    if c.treatment_arm:
        qs = qs.filter(arm_label=c.treatment_arm)
    groups: dict[tuple[str, float], dict[int, float]] = {}
    by_run = spec.get("series_by") == "run"  # e.g. local evaluations on different BLiMP subsets stay apart
    for entry in qs.by_condition_and_seed(by_run=by_run):
        try:
            x = _condition_value(entry["condition_key"], x_key)
        except (KeyError, ValueError):
            continue
        series = f"{entry['arm_label']} · {entry['arm__run__run_id']}" if by_run else entry["arm_label"]
        groups.setdefault((series, x), {})[entry["seed"] if entry["seed"] is not None else -1] = entry["v"]
    baseline = {}
    if c.baseline_experiment:
        baseline = per_seed(c.baseline_experiment, c.baseline_arm, c.metric)
    opts = _stat_options(c)
    rows, series = [], {}
    for (arm, x), values in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        cells = [_cell(arm, False), _cell(_x_text(x)), _summary_cell(values), _cell(str(len(values)))]
        cells.append(_cell(_per_seed_text(values, 3), False))
        ratio = None
        if baseline:
            ratio = stats.compare_per_seed(values, baseline, **opts)["ratio"]
            cells.append(_ratio_cell(ratio))
        rows.append({"id": f"{arm}@{_x_text(x)}", "cells": cells})
        summary = stats.summarize(values)
        s = series.setdefault(arm, {"x": [], "mean": [], "sd": [], "points": []})
        s["x"].append(x)
        s["mean"].append(summary.mean)
        s["sd"].append(summary.sd)
        s["points"].extend({"x": x, "seed": seed, "value": v} for seed, v in values.items())
    checks = []
    for entry in c.published or []:
        key = (entry.get("arm") or c.treatment_arm, float(entry["x"])) if "x" in entry else None
        values = groups.get(key, {}) if key else {}
        if entry.get("stat") == "per_seed":
            recomputed = values.get(int(entry["seed"]))
        else:
            recomputed = stats.mean(list(values.values())) if values else None
        checks.append(check({**entry, "row": entry.get("row") or (f"{key[0]}@{_x_text(key[1])}" if key else "")},
                            recomputed))  # fmt: skip
    columns = ["Arm", x_key, f"{c.metric} (mean ± SD)", "n seeds", "Per seed"]
    if baseline:
        ns = [len(set(values) & set(baseline)) for values in groups.values()]
        columns.append(f"Ratio vs {c.baseline} [{stats.interval_heading(ns)}]")
    return {
        "columns": columns,
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": stats.describe_interval(opts["method"], 3) if baseline else "",
        "empty": not rows,
        "provenance": provenance(qs),
        "plot": {"type": "curve", "x_key": x_key, "series": series, "metric": c.metric},
    }
