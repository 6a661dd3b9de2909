"""Adaptive-depth tables: BLiMP and mean depth per arm and tolerance, as ratios to the explicit model."""

from __future__ import annotations

from results import stats
from results.models import ResultRow
from results.records import condition_key

from ..models import Comparison
from .cells import _cell, _per_seed_text, _ratio_cell, _stat_options, _summary_cell
from .checks import check
from .queries import _condition_value, _grouped, provenance


def build_adaptive(c: Comparison) -> dict:
    """exp31: explicit vs uniform vs adaptive depth, each with mean depth and a ratio vs explicit."""
    spec = c.spec or {}
    exp = c.treatment_experiment
    explicit_arm = spec.get("explicit_arm", "explicit_fixed")
    arms = spec.get("arms", ["explicit_fixed", "eqlm_uniform", "eqlm_adaptive_matched"])
    sweep_arm = spec.get("sweep_arm", "eqlm_adaptive")
    opts = _stat_options(c)
    grouped = _grouped(exp, ["blimp_accuracy", "mean_depth"])

    def values(arm, cond, metric="blimp_accuracy", seeds=None):
        found = grouped.get((arm, condition_key(cond), metric), {})
        return {s: v for s, v in found.items() if not seeds or s in seeds}

    explicit = values(explicit_arm, None)
    multiples = sorted(
        {int(_condition_value(key, "tolerance_multiple")) for (arm, key, _m) in grouped if arm == sweep_arm and key}
    )
    entries = [(arm, None) for arm in arms] + [(sweep_arm, {"tolerance_multiple": m}) for m in multiples]
    rows, points, lookup, ratio_ns = [], [], {}, []
    for arm, cond in entries:
        blimp = values(arm, cond)
        depth = values(arm, cond, "mean_depth")
        ratio = stats.compare_per_seed(blimp, explicit, **opts)["ratio"]
        if arm != explicit_arm:
            ratio_ns.append(ratio["n"])
        label = arm if cond is None else f"{arm} (tolerance × {cond['tolerance_multiple']})"
        row_id = arm if cond is None else f"{arm}x{cond['tolerance_multiple']}"
        lookup[row_id] = (arm, cond)
        rows.append(
            {
                "id": row_id,
                "cells": [
                    _cell(label, False),
                    _summary_cell(blimp),
                    _summary_cell(depth),
                    _cell(str(len(blimp))),
                    _ratio_cell(ratio) if arm != explicit_arm else _cell("1 (baseline)"),
                    _cell(_per_seed_text(blimp, 3), False),
                ],
            }
        )
        for seed, v in blimp.items():
            if seed in depth:
                points.append({"arm": label, "seed": seed, "depth": depth[seed], "blimp": v})
    checks = []
    for entry in c.published or []:
        arm, cond = lookup.get(entry.get("row", ""), (entry.get("row"), None))
        seeds = entry.get("seeds")
        metric = entry.get("metric", "blimp_accuracy")
        found = values(arm, cond, metric, seeds)
        base = values(explicit_arm, None, metric, seeds)
        if entry.get("stat") == "ratio_mean":
            recomputed = stats.paired_ratios(found, base).ratios
            recomputed = stats.mean(list(recomputed.values())) if recomputed else None
        elif entry.get("stat") == "ratio_per_seed":
            recomputed = stats.paired_ratios(found, base).ratios.get(int(entry["seed"]))
        else:
            recomputed = stats.mean(list(found.values())) if found else None
        checks.append(check(entry, recomputed))
    prov = ResultRow.objects.filter(experiment=exp, metric__in=["blimp_accuracy", "mean_depth"], step__isnull=True)
    return {
        "columns": [
            "Arm",
            "BLiMP (mean ± SD)",
            "Mean depth (iterations)",
            "n seeds",
            f"Ratio vs explicit [{stats.interval_heading(ratio_ns)}]",
            "Per seed",
        ],  # fmt: skip
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": stats.describe_interval(opts["method"], len(explicit)),
        "empty": not explicit,
        "provenance": provenance(prov),
        "plot": {"type": "depth", "points": points},
    }
