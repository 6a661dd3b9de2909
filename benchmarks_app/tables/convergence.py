"""The portal's own models: quality and convergence by depth (inference's evaluation rows, experiment "local").

Computed from the same stored figures the dial's convergence panel reads (inference.convergence.stored_figures):
fixed-depth bits/byte, residual median and p95 and the share converged below 0.01 at a ladder of depths, and the
adaptive rule at each tolerance against fixed depth at the same mean depth, per model and solver; the notes say
whether each model is stable (every depth 12-64 within 0.02 bits/byte of the best) and converged (>= 95% of
positions below 0.01 at depth 32).
"""

from __future__ import annotations

from ..models import Comparison, ResultRow
from .cells import _cell, fmt
from .queries import provenance

LADDER = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)
METRIC = "heldout_bits_per_byte"
TOL = "0.01"


def local_models(experiment: str) -> list[str]:
    """Arms with quality-and-convergence rows (a solver in the condition), in name order."""
    labels = ResultRow.objects.filter(experiment=experiment, metric=METRIC, condition__has_key="solver")
    return sorted(set(labels.values_list("arm_label", flat=True)))


def _pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def _g(value) -> str:
    return "" if value is None else f"{value:.3g}"


def targets(slug: str, series: dict) -> list[str]:
    """The stable (12-64 within 0.02 of the best depth) and converged (>= 95% below 0.01 at 32) verdicts."""
    depths, bpb = series["depth"], series[METRIC]
    curve = {d: v for d, v in zip(depths, bpb, strict=True) if v is not None}
    notes = []
    if curve and all(d in curve for d in (12, 64)):
        best_depth = min(curve, key=curve.get)
        gap = max(curve[d] for d in curve if 12 <= d <= 64) - curve[best_depth]
        verdict = "holds" if gap <= 0.02 else "is missed"
        notes.append(
            f"{slug}: stable (bits/byte at every depth 12-64 within 0.02 of the best) {verdict}: best "
            f"{fmt(curve[best_depth], 4)} at depth {best_depth}, worst gap +{gap:.3f}."
        )
    converged = series["converged"].get(TOL) or []
    if 32 in depths and converged:
        share = converged[depths.index(32)]
        verdict = "holds" if share is not None and share >= 0.95 else "is missed"
        notes.append(
            f"{slug}: converged (>= 95% of positions with residual < 0.01 at depth 32) {verdict}: {_pct(share)}."
        )
    return notes


def build_convergence(c: Comparison) -> dict:
    from inference.convergence import stored_figures

    experiment = c.treatment_experiment or "local"
    rows, series, notes, runs = [], {}, [], []
    for slug in local_models(experiment):
        figures = stored_figures(slug)
        if not figures:
            continue
        runs.append(figures["run"])
        for solver, s in figures["solvers"].items():
            converged = s["converged"].get(TOL) or [None] * len(s["depth"])
            for i, depth in enumerate(s["depth"]):
                if depth not in LADDER:
                    continue
                cells = [_cell(slug, False), _cell(solver, False), _cell(f"fixed {depth}", False), _cell(str(depth))]
                cells += [_cell(fmt(s[METRIC][i], 4)), _cell("")]
                cells += [
                    _cell(_g(s["residual_median"][i])),
                    _cell(_g(s["residual_p95"][i])),
                    _cell(_pct(converged[i])),
                ]
                rows.append({"id": f"{slug}:{solver}:d{depth}", "cells": cells})
            series[f"{slug} · {solver}"] = {
                "x": s["depth"],
                "mean": s[METRIC],
                "sd": [0] * len(s["depth"]),
                "points": [],
            }
            if solver == "picard":
                notes += targets(slug, s)
        for p in figures["adaptive"]:
            cells = [_cell(slug, False), _cell(p["solver"], False), _cell(f"adaptive tol {p['tol']:g}", False)]
            cells += [_cell(fmt(p.get("mean_iterations"), 2)), _cell(fmt(p.get(METRIC), 4))]
            cells += [_cell(fmt(p.get("fixed_bits_per_byte_at_mean_depth"), 4)), _cell(""), _cell("")]
            cells.append(_cell(_pct(p.get("converged_fraction"))))
            rows.append({"id": f"{slug}:{p['solver']}:tol{p['tol']:g}", "cells": cells})
    qs = ResultRow.objects.filter(experiment=experiment, arm__run__run_id__in=runs)  # every metric the cells use
    return {
        "columns": [
            "Model",
            "Solver",
            "Depth / rule",
            "Mean iterations",
            "bits/byte",
            "fixed depth at that mean",
            "residual median",
            "residual p95",
            "converged < 0.01 (adaptive: met tol)",
        ],  # fmt: skip
        "rows": rows,
        "checks": [],
        "notes": notes,
        "interval_note": "One evaluation per model on a fixed set of held-out windows; no interval.",
        "empty": not rows,
        "provenance": provenance(qs),
        # Depths 1-3 sit far above the rest (16.5 bits/byte at depth 1): the axis focuses from depth 4 and marks them.
        "plot": {
            "type": "curve",
            "x_key": "depth",
            "series": series,
            "metric": "held-out bits/byte",
            "focus_from": 4,
            "not_plotted": "The residuals and the share converged are in the table, not plotted.",
        },
    }
