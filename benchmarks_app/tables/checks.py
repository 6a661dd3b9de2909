"""Published-vs-recomputed checks, in one place: how a printed figure is compared with its recomputed value."""

from __future__ import annotations

import re

from results import stats

fmt = stats.format_figure


_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def check(entry: dict, recomputed) -> dict:
    """Compare one published figure with its recomputed value: match, differs, known problem or unavailable."""
    published = str(entry.get("value", ""))
    known = entry.get("known_problem", "")
    out = {
        "label": entry.get("label", ""),
        "row": entry.get("row", ""),
        "stat": entry.get("stat", ""),
        "published": published,
        "recomputed": None,
        "recomputed_text": "no rows",
        "status": "unavailable",
        "difference": None,
        "known_problem": known,
        "note": entry.get("note", ""),
    }
    if recomputed is None or (isinstance(recomputed, tuple) and None in recomputed):
        out["status"] = "known_problem" if known else "unavailable"
        return out
    numbers = [float(x) for x in _NUM.findall(published)]
    values = list(recomputed) if isinstance(recomputed, tuple) else [recomputed]
    digits = max((stats.decimals_of(x) for x in _NUM.findall(published)), default=4)
    shown = max(digits, 4) if entry.get("exact") else 4
    out["recomputed"] = values if len(values) > 1 else values[0]
    out["recomputed_text"] = "–".join(fmt(v, shown) for v in values)
    if len(numbers) != len(values):
        out["status"] = "known_problem" if known else "unavailable"
        return out
    agree = all(stats.agrees(p, v, digits) for v, p in zip(values, numbers, strict=True))
    diffs = [v - p for v, p in zip(values, numbers, strict=True)]
    out["difference"] = max(diffs, key=abs)
    # A documented problem keeps its mark even when the bare number happens to agree (F44's 0.72 is right,
    # its "at 2.44 iterations" is not).
    out["status"] = "known_problem" if known else ("match" if agree else "differs")
    out["agrees"] = agree
    return out


def _range(values: dict[int, float]):
    return (min(values.values()), max(values.values())) if values else None


STATUS_TEXT = {
    "match": "✓ matches",
    "differs": "differs",
    "known_problem": "known problem",
    "unavailable": "not recomputable",
}


def place_checks(body: dict) -> dict:
    """Put each check under the table row it names; checks naming no row are kept as `unplaced_checks`."""
    by_row: dict[str, list] = {}
    for item in body["checks"]:
        item["status_text"] = STATUS_TEXT[item["status"]]
        by_row.setdefault(item["row"], []).append(item)
    for row in body["rows"]:
        row["published"] = by_row.pop(row["id"], [])
    body["unplaced_checks"] = [item for items in by_row.values() for item in items]
    return body
