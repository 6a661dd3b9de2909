"""Live tables: every declared comparison computed at request time from stored rows (cached until the next ingest).

One module per kind of table (ratio, curve, adaptive, audit, ladder, council, convergence, head_to_head), the
queries they share in queries.py, their cells in cells.py, and every published-vs-recomputed check in checks.py. A new
kind: a builder module returning the same body, registered in BUILDERS.
"""

from __future__ import annotations

from django.core.cache import cache

from results.records import tables_cache_version

from ..models import Comparison
from .adaptive import build_adaptive
from .audit import build_audit
from .checks import STATUS_TEXT, check, place_checks
from .convergence import build_convergence
from .council import build_council
from .curve import build_curve
from .head_to_head import build_head_to_head
from .ladder import build_ladder
from .plots import caption, overview_plot
from .queries import (
    compare,
    finding_links,
    full_provenance,
    parse_side,
    per_seed,
    provenance,
    side_rows,
    uploads_in,
)
from .ratio import build_ratio, ratio_plot

__all__ = [
    "BUILDERS",
    "STATUS_TEXT",
    "build_table",
    "check",
    "compare",
    "comparison_stamp",
    "parse_side",
    "per_seed",
    "provenance",
    "ratio_plot",
    "side_rows",
    "table_csv_rows",
]

BUILDERS = {
    Comparison.Kind.RATIO: build_ratio,
    Comparison.Kind.CURVE: build_curve,
    Comparison.Kind.ADAPTIVE: build_adaptive,
    Comparison.Kind.AUDIT: build_audit,
    Comparison.Kind.LADDER: build_ladder,
    Comparison.Kind.COUNCIL: build_council,
    Comparison.Kind.CONVERGENCE: build_convergence,
    Comparison.Kind.HEAD_TO_HEAD: build_head_to_head,
}


def build_table(comparison: Comparison, *, use_cache: bool = True) -> dict:
    """The whole table for one declared comparison, computed from rows (cached per ingest version)."""
    key = f"benchmarks:table:{comparison.slug}:{comparison_stamp(comparison)}:{tables_cache_version()}"
    if use_cache:
        cached = cache.get(key)
        if cached is not None:
            return cached
    body = place_checks(BUILDERS[comparison.kind](comparison))
    body.update(
        {
            "slug": comparison.slug,
            "title": comparison.title,
            "kind": comparison.kind,
            "description": comparison.description,
            "notes": [*([comparison.notes] if comparison.notes else []), *body["notes"]],
            "findings": finding_links(comparison.findings),
            "treatment": comparison.treatment if comparison.treatment_experiment else "",
            "baseline": comparison.baseline if comparison.baseline_experiment else "",
            "metric": comparison.metric,
            "full_provenance": full_provenance(body["provenance"]),
            "uploads": uploads_in(body["provenance"]),
            # Checks copied from another table (the head-to-head quotes the programme's) count on that table only.
            "counts": {
                status: sum(1 for item in body["checks"] if item["status"] == status and not item.get("source_table"))
                for status in STATUS_TEXT
            },
        }
    )
    body["plot_caption"] = caption(body["plot"])
    body["overview_plot"] = overview_plot(body)
    body["overview_caption"] = caption(body["overview_plot"])
    body["plot_data_id"] = f"plot-data-{comparison.slug}"
    if use_cache:
        cache.set(key, body, 300)
    return body


def comparison_stamp(comparison: Comparison) -> str:
    """Changes whenever an admin edits the declaration, so an edited table is never served stale."""
    import hashlib

    fields = [getattr(comparison, f.attname) for f in Comparison._meta.concrete_fields]
    return hashlib.sha1(repr(fields).encode()).hexdigest()[:16]


def table_csv_rows(table: dict) -> list[list[str]]:
    header = [*table["columns"], "Published", "Published check"]
    out = [header]
    for row in table["rows"]:
        published = "; ".join(f"{p['label']}: {p['published']}" for p in row.get("published", []))
        status = "; ".join(f"{p['status_text']} (recomputed {p['recomputed_text']})" for p in row.get("published", []))
        out.append([cell["text"] for cell in row["cells"]] + [published, status])
    for p in table.get("unplaced_checks", []):
        out.append([p["label"]] + [""] * (len(table["columns"]) - 1) + [p["published"], p["status_text"]])
    return out
