"""What a table's plots show, from its data: the overview plot beside every table and captions that claim an
interval only where several seeds give one."""

from __future__ import annotations

import re

from results import stats

_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _seeds(values: dict) -> int:
    return len(values or {})


def caption(plot: dict | None) -> str:
    """One sentence saying what the plot draws, generated from its data."""
    if not plot:
        return ""
    kind = plot["type"]
    if kind == "ratio":
        n = _seeds(plot.get("per_seed"))
        if n >= 2:
            return (
                f"Per-seed ratios ({n} seeds) with their mean and its interval ({stats.interval_label(n)}); the "
                "dotted line at 1 is no difference. The table below holds every plotted number."
            )
        return "One seed, so the ratio has no interval. The table below holds every plotted number."
    if kind == "curve":
        series = plot.get("series", {})
        several = any(any(sd for sd in s.get("sd", []) if sd) for s in series.values())
        what = plot.get("metric", "the metric")
        if plot.get("not_plotted"):
            what = f"{plot['not_plotted']} Plotted: {what}"
        if several:
            return (
                f"{what} by {plot.get('x_key')}: per-seed points with the mean ± SD over seeds. "
                "The table below holds every plotted number."
            )
        return (
            f"{what} by {plot.get('x_key')}: one evaluation per point, so no interval. "
            "The table below holds every plotted number."
        )
    if kind == "depth":
        return "Each point is one seed's run: BLiMP accuracy against its mean depth. The table below holds the numbers."
    if kind == "ladder":
        return "Accuracy per task for each model and token budget, one run each. The table below holds the numbers."
    if kind == "forest":
        rows = plot.get("rows", [])
        interval = any(r["kind"] == "recomputed" and r.get("low") is not None for r in rows)
        published = any(r["kind"] == "published" for r in rows)
        label = plot.get("interval_label") or "interval"
        what = f"The recomputed ratio with its interval ({label})" if interval else "The recomputed ratios"
        beside = (
            " beside the published figure (with its printed interval where the record gives one)" if published else ""
        )
        return (
            f"{what}{beside}; the dotted line marks {plot.get('reference_text', 'no difference')}. "
            "The table below holds the numbers."
        )
    if kind == "dots":
        return f"{plot.get('y_title', '')}: one run, so no interval. The table below holds the numbers."
    return ""


def _published(checks: list[dict], row: str, stat: str) -> dict | None:
    return next((c for c in checks if c.get("row") == row and c.get("stat") == stat), None)


def _numbers(text: str) -> list[float]:
    return [float(x) for x in _NUM.findall(text or "")]


def ratio_forest(body: dict) -> dict | None:
    """The ratio row against its published mean and interval (when the record prints them)."""
    result = body.get("result") or {}
    ratio = result.get("ratio") or {}
    if not ratio.get("n"):
        return None
    n = ratio["n"]
    rows = [
        {
            "label": f"recomputed ({n} seed{'s' if n != 1 else ''})",
            "value": ratio["mean"],
            "low": ratio["ci_low"] if n >= 2 else None,
            "high": ratio["ci_high"] if n >= 2 else None,
            "kind": "recomputed",
        }
    ]
    mean = _published(body["checks"], "ratio", "ratio_mean")
    interval = _published(body["checks"], "ratio", "ci") or _published(body["checks"], "ratio", "ci_normal")
    if mean or interval:
        value = _numbers(mean["published"])[0] if mean and _numbers(mean["published"]) else None
        bounds = _numbers(interval["published"]) if interval else []
        if value is None and len(bounds) == 2:
            value = sum(bounds) / 2
        rows.append(
            {
                "label": "published",
                "value": value,
                "low": bounds[0] if len(bounds) == 2 else None,
                "high": bounds[1] if len(bounds) == 2 else None,
                "kind": "published",
                "status": (interval or mean)["status_text"],
            }
        )
    return {
        "type": "forest",
        "x_title": f"{body.get('treatment') or 'treatment'} / {body.get('baseline') or 'baseline'}",
        "reference": 1.0,
        "reference_text": "a ratio of 1 (no difference)",
        "interval_label": stats.interval_label(n),
        "rows": rows,
    }


def audit_forest(body: dict) -> dict | None:
    """The compute audit's BLiMP ratios at each tolerance against the figures the record prints."""
    rows = []
    for row in body["rows"]:
        if not row["id"].startswith("sweep_"):
            continue
        numbers = _numbers(row["cells"][3]["text"].split(" at ")[0])
        if not numbers:
            continue
        rows.append({"label": f"{row['cells'][0]['text']}: recomputed", "value": numbers[0], "kind": "recomputed"})
        for published in row.get("published", []):
            values = _numbers(published["published"])
            if published.get("stat") == "sweep_ratio" and values:
                rows.append(
                    {
                        "label": f"{row['cells'][0]['text']}: published",
                        "value": values[0],
                        "kind": "published",
                        "status": published["status_text"],
                    }
                )
    if not rows:
        return None
    return {
        "type": "forest",
        "x_title": "BLiMP ratio, adaptive EqLM / explicit model",
        "reference": 1.0,
        "reference_text": "a ratio of 1 (as accurate as the explicit model)",
        "rows": rows,
    }


def council_dots(body: dict) -> dict | None:
    """The live council: bits/byte on the mixed text per decoder."""
    labels, values = [], []
    for row in body["rows"]:
        text = row["cells"][1]["text"]
        if _numbers(text):
            labels.append(row["cells"][0]["text"])
            values.append(float(text))
    if not values:
        return None
    return {"type": "dots", "labels": labels, "values": values, "y_title": "bits/byte on mixed text (lower is better)"}


def overview_plot(body: dict) -> dict | None:
    """The plot shown beside a table on /benchmarks/: ratios against their published values where the table has
    them, otherwise the table's own plot."""
    if body.get("empty"):
        return None
    kind = body.get("kind")
    if kind == "ratio":
        return ratio_forest(body)
    if kind == "audit":
        return audit_forest(body)
    if kind == "council":
        return council_dots(body)
    return body.get("plot")
