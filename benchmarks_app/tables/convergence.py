"""The portal's own models: quality and convergence by depth (inference's evaluation rows, experiment "local").

Computed from the same stored figures the dial's convergence panel reads (models_app/convergence_figures.py):
fixed-depth bits/byte, residual median and p95 and the share converged below 0.01 at a ladder of depths to 128, the
adaptive rule at each tolerance against fixed depth at the same mean depth, per model and solver, and Picard from
N(0, 1) and warm starts with their AA score and greedy agreement against the zero start. The notes judge each model
by the depth-curve experiment's criterion (its targets, `depth_targets`), evaluated by
experiments_app.criterion on the model's one evaluation.
"""

from __future__ import annotations

from experiments_app import criterion
from results.models import ResultRow

from ..models import Comparison
from .cells import _cell, fmt
from .queries import provenance

METRIC = "heldout_bits_per_byte"
TOL = "0.01"
START_TEXT = {"noise": "N(0, 1) start", "warm": "warm start"}


def depth_targets(arm: str) -> dict:
    """The depth-curve experiment's criterion for one arm (fixtures/experiments.json; a test holds them equal)."""
    curve = {"arm": arm, "metric": METRIC, "where": {"start": "zero"}}

    def start(metric: str, name: str) -> dict:
        return {"arm": arm, "metric": metric, "where": {"start": name}}

    at_least = {"stat": "min", "cmp": ">="}
    return {
        "op": "all",
        "label": f"{arm}: every target",
        "of": [
            {"op": "curve", "of": curve, "measure": "excess", "to_depth": 128, "stat": "max", "cmp": "<=",
             "value": 0.01, "label": "no overthinking (from the best depth to 128, at most 0.01 bits/byte above the "
             "best)"},
            {"op": "curve", "of": curve, "measure": "gap_at", "depth": 12, "to_depth": 128, "stat": "max",
             "cmp": "<=", "value": 0.03, "label": "fast settling (depth 12 within 0.03 bits/byte of the best)"},
            {"op": "curve", "of": curve, "measure": "best", "to_depth": 128, "stat": "mean", "cmp": "<=",
             "value": 2.18, "label": "quality (the best depth at most 2.18 bits/byte)"},
            {"op": "curve", "of": curve, "measure": "at", "depth": 4, "stat": "mean", "cmp": "<=", "value": 2.35,
             "label": "graceful anytime (depth 4 at most 2.35 bits/byte)"},
            {"op": "value", "of": start("aa_cosine", "noise"), **at_least, "value": 0.99,
             "label": "path independence (AA cosine between the zero and N(0, 1) starts at least 0.99)"},
            {"op": "value", "of": start("greedy_agreement", "noise"), **at_least, "value": 0.99,
             "label": "path independence (greedy agreement between the zero and N(0, 1) starts at least 99%)"},
            {"op": "value", "of": start("greedy_agreement", "warm"), **at_least, "value": 0.99,
             "label": "warm start (greedy agreement with the zero start at least 99%)"},
        ],
    }  # fmt: skip


def local_models(experiment: str) -> list[str]:
    """Arms with quality-and-convergence rows (a solver in the condition), in name order."""
    labels = ResultRow.objects.filter(experiment=experiment, metric=METRIC, condition__has_key="solver")
    return sorted(set(labels.values_list("arm_label", flat=True)))


def _pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def _g(value) -> str:
    return "" if value is None else f"{value:.3g}"


def criterion_rows(slug: str, figures: dict) -> list[criterion.Row]:
    """The model's figures as the criterion reads an experiment's rows: Picard from zero by depth, and the other
    starts' AA score and greedy agreement (one evaluation: seed 0)."""
    picard = figures["solvers"].get("picard") or {"depth": [], METRIC: []}
    rows = [
        criterion.Row("local", slug, 0, METRIC, {"depth": d, "start": "zero"}, v)
        for d, v in zip(picard["depth"], picard[METRIC], strict=True)
        if v is not None
    ]
    for name, found in (figures.get("starts") or {}).items():
        for metric in ("aa_cosine", "greedy_agreement"):
            if found.get(metric) is not None:
                condition = {"depth": found["at_depth"], "start": name}
                rows.append(criterion.Row("local", slug, 0, metric, condition, found[metric]))
    return rows


def _figure_text(node: dict, figure: float | None) -> str:
    if figure is None:
        return "no figure"
    if node["op"] == "curve" and node["measure"] in ("excess", "gap_at"):
        return f"{figure:+.3f}"
    if node["of"]["metric"] == "greedy_agreement":
        return _pct(figure)
    return fmt(figure, 4)


def targets(slug: str, figures: dict) -> list[str]:
    """One note per model: each of the depth-curve targets with the measured figure and validated, missed or pending."""
    tree = criterion.validate(depth_targets(slug))
    picard = figures["solvers"].get("picard") or {"depth": []}
    outcome = criterion.evaluate(tree, criterion_rows(slug, figures), [0], "local", picard["depth"])
    curve = {d: v for d, v in zip(picard["depth"], picard.get(METRIC, []), strict=True) if v is not None and d <= 128}
    head = f"{figures['positions']:,} held-out positions, run {figures['run'].rsplit(':', 1)[-1]}"
    if curve:
        best = min(sorted(curve), key=curve.get)
        head += f"; Picard from zero, best depth {best}: {fmt(curve[best], 4)} bits/byte"
    starts = figures.get("starts") or {}
    if starts:
        head += f"; the other starts against zero at depth {max(s['at_depth'] for s in starts.values())}"
    validated = sum(p.status == criterion.VALIDATED for p in outcome.parts)
    parts = []
    for node, part in zip(tree["of"], outcome.parts, strict=True):
        text = f"{part.label}: {_figure_text(node, part.figure)}, {part.status}"
        parts.append(text + (f" ({part.note})" if part.note else ""))
    summary = f"{slug}: {validated} of {len(parts)} depth-curve targets validated ({head})."
    return [f"{summary} Targets: " + "; ".join(parts) + "."]


def _start_rows(slug: str, figures: dict) -> list[dict]:
    """Picard from the other starts at the ladder's depths; the AA score and greedy agreement at their depth."""
    from models_app.convergence import LADDER

    rows = []
    for name, found in (figures.get("starts") or {}).items():
        curve = dict(zip(found["depth"], found[METRIC], strict=True))
        for depth in sorted({d for d in curve if d in LADDER} | {found.get("at_depth")} - {None}):
            at = depth == found.get("at_depth")
            rule = f"fixed {depth}, {START_TEXT.get(name, name)}"
            cells = [_cell(slug, False), _cell("picard", False), _cell(rule, False), _cell(str(depth))]
            cells += [_cell(fmt(curve[depth], 4) if depth in curve else "")] + [_cell("") for _ in range(4)]
            cells += [
                _cell(fmt(found.get("aa_cosine"), 4) if at else ""),
                _cell(_pct(found.get("greedy_agreement")) if at else ""),
            ]
            rows.append({"id": f"{slug}:picard:{name}:d{depth}", "cells": cells})
    return rows


def build_convergence(c: Comparison) -> dict:
    from models_app.convergence import LADDER
    from models_app.convergence_figures import stored_figures

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
                    _cell(""),
                    _cell(""),
                ]
                rows.append({"id": f"{slug}:{solver}:d{depth}", "cells": cells})
            series[f"{slug} · {solver}"] = {
                "x": s["depth"],
                "mean": s[METRIC],
                "sd": [0] * len(s["depth"]),
                "points": [],
            }
        rows += _start_rows(slug, figures)
        notes += targets(slug, figures)
        for p in figures["adaptive"]:
            cells = [_cell(slug, False), _cell(p["solver"], False), _cell(f"adaptive tol {p['tol']:g}", False)]
            cells += [_cell(fmt(p.get("mean_iterations"), 2)), _cell(fmt(p.get(METRIC), 4))]
            cells += [_cell(fmt(p.get("fixed_bits_per_byte_at_mean_depth"), 4)), _cell(""), _cell("")]
            cells += [_cell(_pct(p.get("converged_fraction"))), _cell(""), _cell("")]
            rows.append({"id": f"{slug}:{p['solver']}:tol{p['tol']:g}", "cells": cells})
    qs = ResultRow.objects.filter(experiment=experiment, arm__run__run_id__in=runs)  # every metric the cells use
    return {
        "columns": [
            "Model",
            "Solver",
            "Depth / rule (from a zero start unless named)",
            "Mean iterations",
            "bits/byte",
            "fixed depth at that mean",
            "residual median",
            "residual p95",
            "converged < 0.01 (adaptive: met tol)",
            "AA cosine with the zero start",
            "greedy agreement with the zero start",
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
            "metric": "held-out bits/byte (from a zero start)",
            "focus_from": 4,
            "not_plotted": "The residuals, the share converged and the other starts are in the table, not plotted.",
        },
    }
