"""The benchmark ladder (F55): each stored mean6 recomputed from its six task rows."""

from __future__ import annotations

from results.models import ResultRow

from ..models import Comparison
from .cells import _cell, fmt
from .checks import check
from .queries import provenance


def build_ladder(c: Comparison) -> dict:
    """F55: the benchmark ladder, with each stored mean6 recomputed from its six task rows."""
    spec = c.spec or {}
    exp = c.treatment_experiment
    tasks = spec.get("tasks", ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq"])
    extra = spec.get("extra_tasks", ["lambada_openai"])
    table: dict[tuple[str, str], dict] = {}
    order: list[tuple[str, str]] = []
    for row in (
        ResultRow.objects.filter(experiment=exp).order_by("pk").values("arm_label", "metric", "condition", "value")
    ):
        key = (row["arm_label"], str(row["condition"].get("tokens", "")))
        if key not in table:
            table[key] = {}
            order.append(key)
        name = "mean6" if row["metric"] == "ladder_mean6" else row["condition"].get("task")
        table[key][name] = row["value"]
    rows, checks = [], []
    for model, tokens in order:
        values = table[(model, tokens)]
        six = [values[t] for t in tasks if t in values]
        recomputed = sum(six) / len(six) if len(six) == len(tasks) else None
        row_id = f"{model}@{tokens}"
        cells = [_cell(model, False), _cell(tokens, False)]
        cells += [_cell(fmt(values.get(t), 3)) for t in tasks + extra]
        cells += [_cell(fmt(values.get("mean6"), 3)), _cell(fmt(recomputed))]
        rows.append({"id": row_id, "cells": cells})
        if "mean6" in values:
            stored = {"label": f"{model} at {tokens}: mean6", "row": row_id, "value": f"{values['mean6']:.3f}"}
            checks.append(check(stored, recomputed))
    for entry in c.published or []:
        checks.append(check(entry, None))
    return {
        "columns": ["Model", "Tokens", *tasks, *extra, "mean6 (stored)", "mean6 (recomputed from six tasks)"],
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": "Single seed per model; no interval.",
        "empty": not rows,
        "provenance": provenance(ResultRow.objects.filter(experiment=exp)),
        "plot": {"type": "ladder", "rows": [{"model": m, "tokens": t, **table[(m, t)]} for m, t in order]},
    }
