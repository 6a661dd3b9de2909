"""The compute audit (F44): per-iteration compute ratio and iterations at an explicit model's FLOPs."""

from __future__ import annotations

from results import stats
from results.models import ResultRow
from results.records import condition_key

from ..models import Comparison
from .cells import _cell, fmt
from .checks import check
from .queries import _grouped, provenance


def build_audit(c: Comparison) -> dict:
    """F44: per-iteration compute ratio and the iterations an EqLM gets at an explicit model's FLOPs."""
    spec = c.spec or {}
    exp = c.treatment_experiment
    depth_exp = spec.get("depth_experiment", "exp31")
    layers = int(spec.get("explicit_layers", 12))

    stored = {
        (r["arm_label"], r["metric"]): r["value"]
        for r in ResultRow.objects.filter(experiment=exp, step__isnull=True, condition_key="")
        .order_by("pk")
        .values("arm_label", "metric", "value")
    }
    depth_rows = _grouped(depth_exp, ["blimp_accuracy", "mean_depth"])

    def value(arm, metric):
        return stored.get((arm, metric))

    def depth_values(arm, metric, cond, seeds):
        found = depth_rows.get((arm, condition_key(cond), metric), {})
        return {s: v for s, v in found.items() if not seeds or s in seeds}

    metrics = ["params_total_M", "params_embeddings_M", "params_block_M", "compute_units_per_block_M"]
    rows = []
    for metric in metrics:
        e, x = value("eqlm", metric), value("explicit", metric)
        rows.append({"id": metric, "cells": [_cell(metric, False), _cell(fmt(e, 2)), _cell(fmt(x, 2)),
                                             _cell(fmt(e / x if e and x else None))]})  # fmt: skip
    e, x = value("eqlm", "compute_units_per_block_M"), value("explicit", "compute_units_per_block_M")
    ratio = e / x if e and x else None
    equal_flops = layers / ratio if ratio else None
    rows.append({"id": "ratio_per_step", "cells": [_cell("compute ratio per iteration (EqLM / explicit layer)", False),
                 _cell(""), _cell(""), _cell(fmt(ratio))]})  # fmt: skip
    rows.append({"id": "iterations_at_equal_flops", "cells": [
        _cell(f"EqLM iterations at the FLOPs of {layers} explicit layers", False), _cell(""), _cell(""),
        _cell(fmt(equal_flops))]})  # fmt: skip
    sweep_rows = _sweep_rows(spec, depth_values, rows)
    lookup = {row_id: (r, depth) for row_id, r, depth in sweep_rows}
    checks = [check(entry, _recomputed(entry, ratio, equal_flops, lookup, value)) for entry in c.published or []]
    return {
        "columns": ["Quantity", "EqLM (tied)", "Explicit", "Recomputed"],
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": "",
        "empty": ratio is None,
        "provenance": provenance(ResultRow.objects.filter(experiment=exp)),
        "plot": None,
    }


def _sweep_rows(spec: dict, depth_values, rows: list[dict]) -> list[tuple]:
    """Ratio at the shallowest tolerance-sweep points, paired with the explicit model by seed: a row each in
    `rows`, and (row id, ratio, depths) for the checks."""
    sweep_rows = []
    for multiple in spec.get("sweep_multiples", [8, 4]):
        cond = {"tolerance_multiple": multiple}
        for label, seeds in (("seeds 43/44", [43, 44]), ("all seeds", None)):
            blimp = depth_values("eqlm_adaptive", "blimp_accuracy", cond, seeds)
            depth = depth_values("eqlm_adaptive", "mean_depth", cond, seeds)
            explicit = depth_values("explicit_fixed", "blimp_accuracy", None, seeds)
            r = stats.compare_per_seed(blimp, explicit)["ratio"]
            row_id = f"sweep_x{multiple}_{'4344' if seeds else 'all'}"
            text = f"{fmt(r['mean'])} at mean depth {fmt(stats.mean(list(depth.values())) if depth else None, 2)}"
            per = " · ".join(f"s{s}: {fmt(v, 4)}" for s, v in r["per_seed"].items())
            rows.append({"id": row_id, "cells": [_cell(f"BLiMP ratio, tolerance × {multiple} ({label})", False),
                         _cell(per, False), _cell(""), _cell(text)]})  # fmt: skip
            sweep_rows.append((row_id, r, depth))
    return sweep_rows


def _recomputed(entry: dict, ratio, equal_flops, lookup: dict, value):
    """The portal's figure for one published entry of the audit (None where it has none)."""
    stat = entry.get("stat")
    if stat == "ratio_per_step":
        return ratio
    if stat == "iterations_at_equal_flops":
        return equal_flops
    if stat in ("sweep_ratio", "sweep_ratio_per_seed", "sweep_depth") and entry.get("row") in lookup:
        r, depth = lookup[entry["row"]]
        if stat == "sweep_ratio":
            return r["mean"]
        if stat == "sweep_depth":
            return stats.mean(list(depth.values())) if depth else None
        return r["per_seed"].get(str(entry["seed"]))
    if stat == "value":
        return value(entry["arm"], entry["metric"])
    return None
