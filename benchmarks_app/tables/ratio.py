"""Ratio tables: treatment / baseline paired by seed, with the ratio plot."""

from __future__ import annotations

from results import stats

from ..models import Comparison
from .cells import _cell, _per_seed_text, _ratio_cell, _stat_options, _summary_cell
from .checks import _range, check
from .queries import compare


def build_ratio(c: Comparison) -> dict:
    opts = _stat_options(c)
    treatment, baseline = (c.treatment_experiment, c.treatment_arm), (c.baseline_experiment, c.baseline_arm)
    cond = (c.spec or {}).get("condition")
    result = compare(treatment, baseline, c.metric, condition=cond, **opts)
    rows = [
        {
            "id": "treatment",
            "cells": [
                _cell("Treatment", False),
                _cell(c.treatment, False),
                _summary_cell({int(k): v for k, v in result["treatment"]["per_seed"].items()}),
                _cell(str(result["treatment"]["n"])),
                _cell(_per_seed_text({int(k): v for k, v in result["treatment"]["per_seed"].items()}), False),
            ],
        },
        {
            "id": "baseline",
            "cells": [
                _cell("Baseline", False),
                _cell(c.baseline, False),
                _summary_cell({int(k): v for k, v in result["baseline"]["per_seed"].items()}),
                _cell(str(result["baseline"]["n"])),
                _cell(_per_seed_text({int(k): v for k, v in result["baseline"]["per_seed"].items()}), False),
            ],
        },
        {
            "id": "ratio",
            "cells": [
                _cell(
                    f"Ratio (mean of per-seed ratios) [{stats.interval_label(result['ratio']['n'], opts['method'])}]"
                    if result["ratio"]["n"] > 1
                    else "Ratio (mean of per-seed ratios)",
                    False,
                ),  # fmt: skip
                _cell(f"{c.treatment} / {c.baseline}", False),
                _ratio_cell(result["ratio"]),
                _cell(str(result["ratio"]["n"])),
                _cell(_per_seed_text({int(k): v for k, v in result["ratio"]["per_seed"].items()}), False),
            ],
        },
    ]
    checks = []
    for entry in c.published or []:
        checks.append(check(entry, _evaluate_ratio_entry(c, entry, result, opts)))
    notes = []
    unpaired = result["unpaired"]
    if unpaired["missing_in_treatment"]:
        notes.append(f"Seeds {unpaired['missing_in_treatment']} have baseline rows but no treatment rows (unpaired).")
    if unpaired["missing_in_baseline"]:
        notes.append(f"Seeds {unpaired['missing_in_baseline']} have treatment rows but no baseline rows (unpaired).")
    return {
        "columns": ["Row", "Experiment:arm", f"{c.metric} (mean ± SD)", "n seeds", "Per seed"],
        "rows": rows,
        "checks": checks,
        "notes": notes,
        "interval_note": result["ratio"]["description"],
        "empty": not (result["treatment"]["n"] or result["baseline"]["n"]),
        "provenance": result["provenance"],
        "plot": ratio_plot(result),
        "result": {k: v for k, v in result.items() if k != "provenance"},
    }


def ratio_plot(result: dict) -> dict:
    """The ratio plot's data (per-seed ratios, mean, CI and both sides) from a `compare` result."""
    return {
        "type": "ratio",
        "per_seed": result["ratio"]["per_seed"],
        "mean": result["ratio"]["mean"],
        "ci": [result["ratio"]["ci_low"], result["ratio"]["ci_high"]],
        "interval_label": stats.interval_label(result["ratio"]["n"]),
        "treatment": result["treatment"]["per_seed"],
        "baseline": result["baseline"]["per_seed"],
    }


def _evaluate_ratio_entry(c: Comparison, entry: dict, result: dict, opts: dict):
    stat = entry.get("stat", "ratio_mean")
    if entry.get("metric") or entry.get("seeds") or entry.get("arm"):
        treatment = (c.treatment_experiment, entry.get("arm") or c.treatment_arm)
        if entry.get("side") == "baseline":
            treatment = (c.baseline_experiment, entry.get("arm") or c.baseline_arm)
        result = compare(
            treatment,
            (c.baseline_experiment, c.baseline_arm),
            entry.get("metric") or c.metric,
            seeds=entry.get("seeds"),
            with_provenance=False,
            **opts,
        )
        if entry.get("side") == "baseline":
            result = {**result, "baseline": result["treatment"]}
    scale = float(entry.get("scale", 1.0))
    side = result.get(entry.get("side", "treatment"), {})
    values = {int(k): v * scale for k, v in side.get("per_seed", {}).items()}
    ratio = result["ratio"]
    if stat == "mean":
        return stats.mean(list(values.values())) if values else None
    if stat == "sd":
        return stats.sample_sd(list(values.values()))
    if stat == "range":
        return _range(values)
    if stat == "per_seed":
        return values.get(int(entry["seed"]))
    if stat == "ratio_mean":
        return ratio["mean"]
    if stat == "ratio_sd":
        return ratio["sd"]
    if stat == "ci_low":
        return ratio["ci_low"]
    if stat == "ci_high":
        return ratio["ci_high"]
    if stat == "ci":
        return (ratio["ci_low"], ratio["ci_high"]) if ratio["n"] else None
    if stat == "ci_normal":
        seeds = list(ratio["per_seed"].values())
        return stats.normal_interval(seeds) if len(seeds) > 1 else None
    if stat == "ratio_per_seed":
        return ratio["per_seed"].get(str(entry["seed"]))
    if stat == "ratio_min":
        return min(ratio["per_seed"].values()) if ratio["per_seed"] else None
    return None
