"""The head-to-head on the portal's own models: each of the programme's claims (F24, F44, F45, exp31) beside the same
comparison made by a pre-registered experiment on the portal's models.

One row per measure a claim is judged on. The local figure, its interval over seeds and its verdict are the
experiment's own criterion evaluated on its stored rows and read as every page reads it (experiments_app.services.
judged_verdict: a comparison of two arms at chance is inconclusive), so this table and the experiment's page can never
disagree. The programme's figure is the same test evaluated on the programme's
stored rows (spec `programme`: a criterion node whose selectors name the programme's experiments), and its published
figures are the ones the programme's own table declares (spec `table`, `published`: labels of that table's entries),
each checked against its recomputed value by that table's builder.
"""

from __future__ import annotations

from results import stats
from results.models import ResultRow

from ..models import Comparison
from .cells import _cell, fmt


def _leaves(outcome) -> list:
    return outcome.parts if outcome.parts else [outcome]


def _interval_text(outcome) -> str:
    if outcome.figure is None:
        return "no rows yet" if not outcome.note else outcome.note
    text = fmt(outcome.figure)
    if outcome.interval and None not in outcome.interval:
        text += f" [{fmt(outcome.interval[0])}, {fmt(outcome.interval[1])}]"
    return text


def _per_seed(outcome) -> str:
    return " · ".join(f"s{seed}: {fmt(value, 4)}" for seed, value in sorted(outcome.per_seed.items())) or "–"


def _programme_outcome(node: dict | None, seeds: list[int]):
    """The programme's own rows judged by the same test, or None where the programme did not measure it."""
    from experiments_app import criterion as criteria

    if node is None:
        return None
    node = criteria.validate(node)
    names = criteria.experiments_named(node)
    rows = [
        criteria.Row(e, a, s, m, c or {}, v)
        for e, a, s, m, c, v in ResultRow.objects.filter(experiment__in=names, step__isnull=True).values_list(
            "experiment", "arm_label", "seed", "metric", "condition", "value"
        )
    ]
    return criteria.evaluate(node, rows, seeds, experiment=sorted(names)[0] if names else "")


def _published_checks(table_slug: str, labels: list[str], row_id: str) -> list[dict]:
    """The programme table's own published-vs-recomputed checks for these labels, placed on this row."""
    from . import build_table

    comparison = Comparison.objects.filter(slug=table_slug).first()
    if comparison is None:
        return []
    body = build_table(comparison)
    checks = [*body.get("unplaced_checks", []), *(c for row in body["rows"] for c in row.get("published", []))]
    # `source_table` marks a copy: the check is counted once, on its own table.
    return [
        {**c, "row": row_id, "label": f"{table_slug}: {c['label']}", "source_table": table_slug}
        for c in checks
        if c["label"] in labels
    ]


def _cost(flops: list[tuple[str, dict, float]], arm_models: dict, selector: dict) -> tuple[str, str]:
    """(FLOPs per token, parameters) of the arm a selector reads, at the selector's setting (mean over seeds)."""
    where = selector.get("where", {})
    values = [
        value
        for arm, condition, value in flops
        if arm == selector["arm"] and all(condition.get(k) == v for k, v in where.items())
    ]
    cost = f"{sum(values) / len(values):,.0f}" if values else "–"
    params = arm_models.get(selector["arm"], {}).get("parameters")
    return cost, f"{params:,}" if params else "–"


def _leaf_row(row_id: str, first: bool, leaf, node: dict, programme, cost) -> dict:
    """One measure: the programme's figure and verdict beside the portal's, with each arm's cost."""
    eq_cost, eq_params = cost(node["of"])
    base_sel = node.get("over") or node.get("minus")
    base_cost, base_params = cost(base_sel) if base_sel else ("–", "–")
    return {
        "id": row_id,
        "cells": [
            _cell(row_id.rsplit("-", 1)[0] if first else "", False),
            _cell(leaf.label or leaf.text, False),
            _cell(_interval_text(programme) if programme else "not measured by the programme", False),
            _cell(programme.verdict if programme else "–", False),
            _cell(_interval_text(leaf), False),
            _cell(_per_seed(leaf), False),
            _verdict_cell(leaf),
            _cell(f"{eq_cost} · {base_cost}", False),
            _cell(f"{eq_params} · {base_params}", False),
        ],
    }


def _summary_row(row_id: str, claim: str, label: str, programme_text: str, part) -> dict:
    """A claim's combined verdict (several measures) or the experiment's overall one."""
    cells = [_cell(claim, False), _cell(label, False), _cell("", False), _cell(programme_text, False)]
    cells += [_cell("", False)] * 2 + [_cell(part.verdict, False, status=part.status)] + [_cell("", False)] * 2
    return {"id": row_id, "cells": cells}


def _setting_rows(setting: dict, part, part_node: dict, seeds: list[int], cost) -> tuple[list, list, list, list]:
    """One claim's rows: (rows, published checks, programme seed counts, portal seed counts)."""
    from experiments_app import criterion as criteria

    rows, checks, programme_ns, portal_ns, programme_parts = [], [], [], [], []
    programme_nodes = setting.get("programme", [])
    leaf_nodes = _leaves_of(part_node)
    for index, leaf in enumerate(_leaves(part)):
        programme = _programme_outcome(programme_nodes[index] if index < len(programme_nodes) else None, seeds)
        programme_parts.append(programme)
        if programme is not None:
            programme_ns.append(len(programme.per_seed))
        portal_ns.append(len(leaf.per_seed))
        row_id = f"{setting['finding']}-{index}"
        rows.append(_leaf_row(row_id, index == 0, leaf, leaf_nodes[index], programme, cost))
        if index == 0 and setting.get("table"):
            checks += _published_checks(setting["table"], setting.get("published", []), row_id)
    if len(leaf_nodes) > 1:
        known = [p.status for p in programme_parts if p is not None]
        combined = criteria.combine(_part_op(part_node), known) if known else ""
        text = criteria.VERDICT_TEXT[combined] + " (on what it measured)" if combined else "–"
        rows.append(_summary_row(f"{setting['finding']}-all", "", part.label, text, part))
    return rows, checks, programme_ns, portal_ns


def build_head_to_head(c: Comparison) -> dict:
    from experiments_app import criterion as criteria
    from experiments_app import services as experiments
    from experiments_app.models import Experiment

    spec = c.spec or {}
    experiment = Experiment.objects.filter(slug=spec.get("experiment") or c.treatment_experiment).first()
    if experiment is None:
        return {"columns": _columns([], []), "rows": [], "checks": [], "notes": [], "interval_note": "",
                "empty": True, "provenance": [], "plot": None}  # fmt: skip
    rows_all = experiments.rows_for(experiment)
    # The verdict the experiment's page shows: a comparison of two arms at chance is inconclusive.
    outcome = experiments.judged_verdict(experiment, rows_all)
    arm_models = experiments.arm_models(experiment)
    flops = [(r.arm, r.condition, r.value) for r in rows_all
             if r.experiment == experiment.slug and r.metric == "flops_per_token"]  # fmt: skip

    def cost(selector: dict) -> tuple[str, str]:
        return _cost(flops, arm_models, selector)

    rows, checks, programme_ns, portal_ns = [], [], [], []
    for setting in spec.get("settings", []):
        if setting["part"] >= len(outcome.parts):
            continue
        part_node = experiment.criterion["of"][setting["part"]]
        seeds = setting.get("seeds", experiment.seeds)
        body = _setting_rows(setting, outcome.parts[setting["part"]], part_node, seeds, cost)
        for into, items in zip((rows, checks, programme_ns, portal_ns), body, strict=True):
            into += items
    rows.append(_summary_row("overall", "All four", outcome.label, "", outcome))
    return {
        "columns": _columns(programme_ns, portal_ns),
        "rows": rows,
        "checks": checks,
        "notes": _notes(experiment, rows_all),
        "interval_note": criteria.INTERVAL_TEXT,
        "empty": not any(r.experiment == experiment.slug for r in rows_all),
        "provenance": _provenance(experiment.slug),
        "plot": None,
        "outcome": outcome.as_dict(),
    }


def _notes(experiment, rows_all) -> list[str]:
    notes = [
        f"The local figures are the pre-registered experiment {experiment.slug!r} "
        f"(/benchmarks/experiments/{experiment.slug}/), its verdicts computed by its own criterion from its rows; "
        f"the programme's are the same tests on the programme's stored rows. {experiment.hypothesis.split(chr(10))[0]}"
    ]
    absolute = _absolute_figures(experiment.slug, rows_all)
    if absolute:
        notes.append(
            "Each arm at depth 12, mean over seeds from the rows (bits/byte on the whole held-out slice; BLiMP "
            f"accuracy, where 0.5 is chance for its two-way choices): {absolute}. Where every arm is near chance on "
            "BLiMP, its ratios compare noise, and the bits/byte rows carry the comparison."
        )
    return notes


def _columns(programme_ns: list[int], portal_ns: list[int]) -> list[str]:
    """The table's heads; each interval column says what its intervals are (a range of 3 seeds is not a CI)."""
    return [
        "Claim",
        "Measure",
        f"Programme: from its rows [{stats.interval_heading(programme_ns)}]",
        "Programme verdict",
        f"Portal's models [{stats.interval_heading(portal_ns)}]",
        "Portal per seed",
        "Portal verdict",
        "FLOPs/token (EqLM · explicit)",
        "Parameters (EqLM · explicit)",
    ]


def _verdict_cell(leaf) -> dict:
    """The portal's verdict on one measure; a comparison of two arms at chance quotes the criterion's own word."""
    if leaf.status == "inconclusive":
        return _cell(f"inconclusive: {leaf.note}", False, status=leaf.status)
    return _cell(leaf.verdict, False, status=leaf.status)


def _absolute_figures(slug: str, rows) -> str:
    parts = []
    for arm in sorted({r.arm for r in rows if r.experiment == slug}):
        means = {}
        for metric in ("heldout_bits_per_byte", "blimp_accuracy"):
            values = [
                r.value
                for r in rows
                if r.experiment == slug and r.arm == arm and r.metric == metric and r.condition.get("depth") == 12
            ]
            means[metric] = fmt(sum(values) / len(values), 3) if values else "–"
        parts.append(f"{arm} {means['heldout_bits_per_byte']} bits/byte, BLiMP {means['blimp_accuracy']}")
    return "; ".join(parts)


def _leaves_of(node: dict) -> list[dict]:
    return node["of"] if node["op"] in ("all", "any") else [node]


def _part_op(node: dict) -> str:
    return node["op"] if node["op"] in ("all", "any") else "all"


def _provenance(slug: str) -> list[dict]:
    from .queries import provenance

    return provenance(ResultRow.objects.filter(experiment=slug, step__isnull=True))
