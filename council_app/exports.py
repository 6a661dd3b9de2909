"""CSV renderings of the council page's tables: each function returns (header, rows) from stored data."""

from __future__ import annotations

from . import services
from .models import SampleQuestion


def seeds_table():
    table = services.seed_table()
    header = ["row", "kind", "key"] + [f"seed_{s}" for s in table["seeds"]] + ["mean"]
    rows = [[r["label"], r["kind"], r["key"], *r["values"], _round(r["mean"], 6)] for r in table["rows"]]
    return header, rows


def domains_table():
    table = services.domain_table()
    header = ["rule", "domain", "n_per_seed"] + [f"seed_{s}" for s in table["seeds"]] + ["mean"]
    sizes = {d["key"]: d["n"] for d in table["domains"]}
    rows = []
    for r in table["rows"]:
        for d in r["domains"]:
            n = "/".join(str(x) for x in sizes.get(d["domain"], []))
            rows.append([r["key"], d["domain"], n, *d["values"], _round(d["mean"], 6)])
    return header, rows


def baselines_table():
    header = [
        "key",
        "arm",
        "accuracy",
        "generations_per_request",
        "cost_vs_council",
        "council_wins",
        "council_losses",
        "z_recorded",
        "z_recomputed",
    ]
    rows = [
        [
            b["arm"].key,
            b["arm"].label,
            b["arm"].accuracy,
            b["arm"].generations_per_request,
            _round(b["cost_vs_council"], 4),
            b["arm"].council_wins,
            b["arm"].council_losses,
            b["arm"].z,
            _round(b["z_derived"], 4),
        ]
        for b in services.baseline_rows()
    ]
    return header, rows


def anchored_table():
    data = services.anchored_rows()
    kinds = data["decomposition_kinds"]
    header = [
        "seed",
        "anchored_vote",
        "plain_router",
        "fallback_router",
        "margin_vs_plain",
        "margin_vs_fallback",
        "paired_wins_vs_plain",
        "paired_losses_vs_plain",
        "paired_z_vs_plain",
        "math_anchored",
        "math_router",
        "general_anchored",
        "general_router",
        *[f"decomposition_{k}" for k in kinds],
    ]
    rows = [
        [
            a.seed.seed,
            a.mechanism,
            a.router,
            a.fallback_router,
            a.margin_vs_plain,
            a.margin_vs_fallback,
            a.paired_wins,
            a.paired_losses,
            a.paired_z,
            a.math_mechanism,
            a.math_router,
            a.general_mechanism,
            a.general_router,
            *[a.decomposition.get(k, "") for k in kinds],
        ]
        for a in data["rows"]
    ]
    return header, rows


def players_table():
    header = [k for k, _ in services.PLAYER_COLUMNS]
    rows = [[getattr(p, k) for k in header] for p in services.Player.objects.all()]
    return header, rows


def questions_table():
    header = ["seed", "index", "domain", "kind", "name", "picked", "correct"]
    rows = []
    for q in SampleQuestion.objects.with_outcomes():
        for po in q.player_outcomes.all():
            rows.append([q.seed.seed, q.index, q.domain, "player", po.player.name, "", po.correct])
        for ro in q.rule_outcomes.all():
            rows.append([q.seed.seed, q.index, q.domain, "rule", ro.rule.key, ro.winner.name, ro.correct])
    return header, rows


TABLES = {
    "seeds": seeds_table,
    "domains": domains_table,
    "baselines": baselines_table,
    "anchored": anchored_table,
    "players": players_table,
    "questions": questions_table,
}


def _round(value, places):
    return None if value is None else round(value, places)
