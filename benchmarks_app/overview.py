"""The /benchmarks/ overview: one row per table (claim, headline figure, verdict, link), the programme's first.

Built from the tables' computed bodies; an empty table gets no row (it is named as awaiting rows instead),
and a check a table copies from another is counted once, on its own table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .models import Comparison
from .tables import STATUS_TEXT

# The kinds of table that measure the portal's own models rather than recompute the programme's record.
PORTAL_KINDS = {Comparison.Kind.CONVERGENCE, Comparison.Kind.COUNCIL, Comparison.Kind.HEAD_TO_HEAD}
# The published figure each programme table leads with (its label among the table's checks).
HEADLINE_CHECK = {
    "f18-h1-three-seed": "mean ratio",
    "f20-h1-121m": "mean ratio",
    "f24-anytime": "mean ratio",
    "f45-equal-compute": "mean ratio",
    "f24-budget-sweep": "s43 at budget 12",
    "exp31-adaptive-depth": "adaptive / explicit (seeds 43/44)",
    "f44-compute-audit": "ratio at equal FLOPs",
    "f55-ladder": "Tied EqLM 158M resident at 2.5B: mean6",
}


def is_portal_table(table: dict) -> bool:
    return table["kind"] in PORTAL_KINDS or table["slug"].startswith("local")


def headline(table: dict) -> dict | None:
    """The published figure a row leads with, recomputed: the declared check, else the table's first check."""
    checks = [c for c in table["checks"] if not c.get("source_table")]
    wanted = HEADLINE_CHECK.get(table["slug"])
    chosen = next((c for c in checks if c["label"] == wanted), checks[0] if checks else None)
    if chosen is None and table.get("outcome"):  # a pre-registered experiment's overall verdict
        return {"label": "the portal's verdict", "value": table["outcome"]["verdict"], "published": ""}
    if chosen is None:
        return None
    return {"label": chosen["label"], "value": chosen["recomputed_text"], "published": chosen["published"]}


def verdict(table: dict) -> dict:
    """How the table's published figures fare against the rows: a word and a badge class."""
    counts = table["counts"]
    total = sum(counts.values())
    if not total:
        quoted = sum(1 for c in table["checks"] if c.get("source_table"))
        if quoted:  # the head-to-head quotes the programme's checks; they count on their own tables
            return {"text": f"quotes {quoted} published figures, checked on their own tables", "badge": "neutral"}
        return {"text": "no published figure to check", "badge": "neutral"}
    if counts["differs"]:
        return {"text": f"{counts['differs']} of {total} published figures differ", "badge": "bad"}
    if counts["known_problem"]:
        return {
            "text": f"{counts['match']} of {total} match; {counts['known_problem']} known problem"
            + ("s" if counts["known_problem"] > 1 else ""),
            "badge": "warn",
        }
    if counts["unavailable"]:
        return {
            "text": f"{counts['match']} of {total} match; {counts['unavailable']} not recomputable",
            "badge": "neutral",
        }
    return {"text": f"all {total} published figures match", "badge": "ok"}


CLAIM_CHARS = 180

# {code: title} of the findings the tables cite. The findings app, a layer above (its pages read these tables),
# tells the overview how to read them when Django starts (findings_app.apps); without it a claim is the table's own.
_readers: list[Callable[[Iterable[str]], dict[str, str]]] = []


def read_finding_titles_with(reader: Callable[[Iterable[str]], dict[str, str]]) -> None:
    _readers[:] = [reader]


def _finding_titles(codes: set[str]) -> dict[str, str]:
    return _readers[0](codes) if _readers else {}


def claim(table: dict, finding_titles: dict[str, str]) -> str:
    """What the table tests: for the programme's, its first finding's title; else its description's first clause."""
    if not is_portal_table(table):
        for link in table["findings"]:
            if link["code"] in finding_titles:
                return finding_titles[link["code"]]
    text = (table["description"] or table["title"]).split(". ")[0].rstrip(".")
    if len(text) > CLAIM_CHARS:
        cut = max(text.rfind(": ", 0, CLAIM_CHARS), text.rfind(", ", 0, CLAIM_CHARS))
        text = text[: cut if cut > 40 else CLAIM_CHARS].rstrip(" ,:") + " …"
    return text if text.endswith("…") else text + "."


def overview(tables: list[dict]) -> dict:
    """The overview's two sections, the tables awaiting rows, the badge totals and the fully traced tables."""
    titles = _finding_titles({link["code"] for t in tables for link in t["findings"]})
    programme, portal, awaiting = [], [], []
    for table in tables:
        if table["empty"]:
            awaiting.append(table)
            continue
        row = {
            "slug": table["slug"],
            "title": table["title"],
            "claim": claim(table, titles),
            "headline": headline(table),
            "verdict": verdict(table),
            "findings": table["findings"],
            "full_provenance": table["full_provenance"],
            "uploads": table.get("uploads", []),
        }
        (portal if is_portal_table(table) else programme).append(row)
    shown = [t for t in tables if not t["empty"]]
    return {
        "programme": programme,
        "portal": portal,
        "awaiting": awaiting,
        "totals": {status: sum(t["counts"][status] for t in shown) for status in STATUS_TEXT},
        "full_provenance": [t for t in shown if t["full_provenance"]],
        "partial_provenance": [t for t in shown if not t["full_provenance"]],
    }
