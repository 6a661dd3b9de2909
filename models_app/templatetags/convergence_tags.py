"""{% convergence_panel slug %}: the model's stored quality-and-convergence figures as charts and tables (/demo/)."""

import logging

from django import template

register = template.Library()
log = logging.getLogger(__name__)
DEFAULT_TOL = "0.01"


def depth_rows(figures: dict) -> list[dict]:
    """One row per depth with a cell per solver: bits/byte, residual median and p95, % converged at 0.01."""
    solvers = figures.get("solvers") or {}
    depths = sorted({d for s in solvers.values() for d in s["depth"]})
    rows = []
    for depth in depths:
        cells = []
        for series in solvers.values():
            i = series["depth"].index(depth) if depth in series["depth"] else None
            converged = series["converged"].get(DEFAULT_TOL) or [None] * len(series["depth"])
            share = converged[i] if i is not None else None
            cells.append(
                {
                    "bits_per_byte": series["heldout_bits_per_byte"][i] if i is not None else None,
                    "median": series["residual_median"][i] if i is not None else None,
                    "p95": series["residual_p95"][i] if i is not None else None,
                    "converged_percent": None if share is None else 100 * share,
                }
            )
        rows.append({"depth": depth, "cells": cells})
    return rows


def adaptive_rows(figures: dict) -> list[dict]:
    rows = []
    for point in figures.get("adaptive") or []:
        share = point.get("converged_fraction")
        rows.append({**point, "converged_percent": None if share is None else 100 * share})
    return rows


# The start comparison remakes the run just made three times in the reader's tab: at most this many tokens each.
STARTS_COMPARED = 48


@register.inclusion_tag("models_app/_convergence.html")
def convergence_panel(slug: str) -> dict:
    from models_app.convergence_figures import stored_figures

    try:
        figures = stored_figures(slug) if slug else {}
    except Exception:  # the panel is optional; the dial must still work
        log.exception("could not read the convergence rows of %s", slug)
        figures = {}
    return {
        "slug": slug,
        "figures": figures,
        "solvers": list((figures.get("solvers") or {}).keys()),
        "rows": depth_rows(figures) if figures else [],
        "adaptive": adaptive_rows(figures),
        "starts_compared": STARTS_COMPARED,
    }
