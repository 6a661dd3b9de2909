"""The live council on held-out mixed text (bench/council.py): bits/byte per domain for every decoder, newest run."""

from __future__ import annotations

from results.models import ResultRow, Run

from ..models import Comparison
from .cells import _cell, fmt
from .queries import provenance

DOMAINS = [("mixed", "mixed"), ("kjv", "KJV"), ("code", "code")]
DEFAULT_ARM = "equilibrium (defaults)"
AVERAGE_ARM = "average (beta=0)"
MEMBER_SUFFIX = " alone"
MEMORY_MIXES = [("heldout-128", "128-byte"), ("heldout-512", "512-byte")]


def memory_note(by_mix: dict[str, dict[str, float]]) -> str | None:
    """The council with memory at its defaults against the fixed-share mixture and the oracle on each held-out mix."""
    parts = []
    for mix, title in MEMORY_MIXES:
        figures = by_mix.get(mix, {})
        memory = next((d for d in figures if d.startswith("memory (defaults")), None)
        mixture = next((d for d in figures if d.startswith("fixed-share mixture")), None)
        oracle = next((d for d in figures if d.startswith("oracle")), None)
        if memory is None or mixture is None or oracle is None:
            continue
        if not parts:
            parts.append(f"The council with {memory}")
        parts.append(
            f"{fmt(figures[memory], 4)} bits/byte on the {title} mix against {fmt(figures[mixture], 4)} for the "
            f"fixed-share mixture and {fmt(figures[oracle], 4)} for the oracle"
        )
    return f"{parts[0]}: {'; '.join(parts[1:])}." if parts else None


def weights_text(by_domain: dict[str, dict[int, float]]) -> str:
    """Mean influence weights in member order, per domain: "0.54/0.46 · 0.52/0.48"."""
    parts = ["/".join(f"{w:.2f}" for _, w in sorted(by_domain[d].items())) for d in ("kjv", "code") if d in by_domain]
    return " · ".join(parts)


def build_council(c: Comparison) -> dict:
    """One row per decoder (members alone, averaging, the equilibrium at defaults and over the grid, the oracle)."""
    exp = c.treatment_experiment
    run = Run.objects.filter(experiment=exp).order_by("-created_at", "-pk").first()
    qs = ResultRow.objects.filter(experiment=exp, arm__run=run) if run else ResultRow.objects.none()
    values: dict[str, dict[str, float]] = {}
    weights: dict[str, dict[str, dict[int, float]]] = {}  # arm -> domain -> member index -> mean weight
    by_mix: dict[str, dict[str, float]] = {}  # mix -> decoder -> mixed bits/byte
    for row in qs.order_by("pk").values("arm_label", "metric", "condition", "value"):
        arm = values.setdefault(row["arm_label"], {})
        cond = row["condition"]
        if row["metric"] == "mean_weight":
            weights.setdefault(row["arm_label"], {}).setdefault(cond.get("domain", ""), {})[
                int(cond.get("member_index", 0))
            ] = row["value"]
            continue
        key = cond.get("domain", "") if row["metric"] == "bits_per_byte" else row["metric"]
        arm[key] = row["value"]
        if key == "mixed" and "mix" in cond:
            by_mix.setdefault(cond["mix"], {})[cond.get("decoder", row["arm_label"])] = row["value"]
    members = [arm for arm in values if arm.endswith(MEMBER_SUFFIX)]
    best_member = min((values[m].get("mixed") for m in members if "mixed" in values[m]), default=None)
    rows = []
    for arm, figures in values.items():
        cells = [_cell(arm, False)] + [_cell(fmt(figures.get(d), 4)) for d, _ in DOMAINS]
        mixed = figures.get("mixed")
        delta = mixed - best_member if mixed is not None and best_member is not None else None
        cells.append(_cell("" if delta is None else f"{delta:+.4f}"))
        cells.append(
            _cell(fmt(figures.get("equilibrium_iterations"), 1) if "equilibrium_iterations" in figures else "")
        )
        cells.append(_cell(fmt(figures.get("ms_per_token"), 2) if "ms_per_token" in figures else ""))
        cells.append(_cell(weights_text(weights.get(arm, {})), False))
        rows.append({"id": arm, "cells": cells})
    notes = []
    game, average = values.get(DEFAULT_ARM, {}).get("mixed"), values.get(AVERAGE_ARM, {}).get("mixed")
    if game is not None and best_member is not None and average is not None:
        verdict = "holds" if game < best_member and game < average else "is missed"
        notes.append(
            f"Goal (the equilibrium beats either member and averaging on the mixed text) {verdict}: "
            f"{fmt(game, 4)} bits/byte against {fmt(best_member, 4)} for the best member alone and "
            f"{fmt(average, 4)} for averaging."
        )
    note = memory_note(by_mix)
    if note:
        notes.append(note)
    times = {arm: f["ms_per_token"] for arm, f in values.items() if "ms_per_token" in f}
    single = next((t for arm, t in times.items() if arm.endswith(MEMBER_SUFFIX)), None)
    if single and DEFAULT_ARM in times:
        notes.append(f"Cost: the council takes {times[DEFAULT_ARM] / single:.2f}× one member's time per token.")
    remembering = next((arm for arm in times if arm.startswith("memory (defaults")), None)
    if remembering and DEFAULT_ARM in times:
        ratio = times[remembering] / times[DEFAULT_ARM]
        notes.append(f"With memory at its defaults it takes {ratio:.2f}× the memoryless council's time per token.")
    if run is not None:
        notes.append(f"Run {run.run_id} (commit {run.git_commit[:12] or 'unknown'}).")
    return {
        "columns": [
            "Decoder",
            *(f"bits/byte, {label}" for _, label in DOMAINS),
            "mixed vs best member",
            "game iterations",
            "ms/token",
            "mean weights (KJV · code)",
        ],  # fmt: skip
        "rows": rows,
        "checks": [],
        "notes": notes,
        "interval_note": "One run on a fixed sample of passages; no interval.",
        "empty": not rows,
        "provenance": provenance(qs),
        "plot": None,
    }
