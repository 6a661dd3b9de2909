"""Read-side services for the council record: the summary, its tables and self-consistency checks (replay: replay.py).

Every number returned comes from stored rows or from plain arithmetic over them (means, differences,
sign-test z); derived figures are labelled as such wherever they are shown.
"""

from __future__ import annotations

import uuid

from django.core.cache import cache

from . import stats
from .models import (
    DOMAIN_GENERAL,
    DOMAIN_MATH,
    Accuracy,
    AnchoredSeed,
    CouncilRecord,
    FairBaseline,
    Player,
    RouterChoice,
    Rule,
    SampleQuestion,
    Seed,
)

COUNCIL_KEY = "council_system"
BASELINE_KEY = "baseline_single_greedy"
SC5_KEY = "self_consistency_k5"
BIG_MODEL_KEY = "capacity_matched_7b_greedy"
DOMAINS = [(DOMAIN_MATH, "maths"), (DOMAIN_GENERAL, "general knowledge")]

# Quoted from the findings facts sheet (F41, "per-seed system margins"), to compare with the stored record.
F41_QUOTED_SEED_MARGINS = {45: 0.0750, 46: 0.0917, 47: 0.0416}
# Quoted from F28 ("MMLU (57 subjects, weighted)"), to compare with the ladder rows.
F28_QUOTED_MMLU = {
    "Qwen2.5-1.5B-Instruct": 0.626,
    "Qwen3-1.7B": 0.583,
    "Qwen2.5-Coder-1.5B-Instruct": 0.520,
    "Qwen2.5-Math-1.5B-Instruct": 0.391,
}

PLAYER_COLUMNS = [
    ("name", "model"),
    ("size_b", "size (B)"),
    ("mmlu_acc", "MMLU"),
    ("arc_challenge_acc", "ARC-Challenge"),
    ("hellaswag_acc", "HellaSwag"),
    ("gsm8k_flexible", "GSM8K (flexible)"),
    ("mixed_arena", "mixed arena"),
    ("config_sha", "config sha"),
    ("git_commit", "commit"),
    ("machine", "machine"),
]


# --- the summary ---------------------------------------------------------------------------------


def baselines_by_key() -> dict[str, FairBaseline]:
    return {b.key: b for b in FairBaseline.objects.all()}


def headline() -> dict:
    """F41 (the council against the designated single model) and F54 (its limit), from stored baseline rows."""
    arms = baselines_by_key()
    council, baseline = arms.get(COUNCIL_KEY), arms.get(BASELINE_KEY)
    sc5, big = arms.get(SC5_KEY), arms.get(BIG_MODEL_KEY)
    result = {"council": council, "baseline": baseline, "sc5": sc5, "big": big, "margin_points": None}
    if council and baseline:
        result["margin_points"] = round((council.accuracy - baseline.accuracy) * 100, 2)
    if council and big:
        result["big_gap_points"] = round((big.accuracy - council.accuracy) * 100, 2)
    return result


def seed_table() -> dict:
    """Rule (and single-player) accuracy by seed over all questions, with the mean over seeds."""
    seeds = list(Seed.objects.all())
    cells = {}
    for acc in Accuracy.objects.filter(domain="all").select_related("rule", "player", "seed"):
        cells[(acc.rule_id, acc.player_id, acc.seed.seed)] = acc.value
    rows = []
    for rule in Rule.objects.all():
        values = [cells.get((rule.pk, None, s.seed)) for s in seeds]
        rows.append(_row(rule.label, "rule", rule.key, values))
    for player in Player.objects.all():
        values = [cells.get((None, player.pk, s.seed)) for s in seeds]
        rows.append(_row(f"single: {player.short_name}", "player", player.name, values))
    return {"seeds": [s.seed for s in seeds], "rows": [r for r in rows if any(v is not None for v in r["values"])]}


def domain_table() -> dict:
    """Rule accuracy per domain and seed (the record has no per-domain figures for single players)."""
    seeds = list(Seed.objects.all())
    cells, sizes = {}, {}
    for acc in Accuracy.objects.of_rules().exclude(domain="all").select_related("seed"):
        cells[(acc.rule_id, acc.domain, acc.seed.seed)] = acc.value
        sizes[(acc.domain, acc.seed.seed)] = acc.n
    rows = []
    for rule in Rule.objects.all():
        by_domain = []
        for domain, _ in DOMAINS:
            values = [cells.get((rule.pk, domain, s.seed)) for s in seeds]
            by_domain.append({"domain": domain, "values": values, "mean": _mean_or_none(values)})
        if any(v is not None for d in by_domain for v in d["values"]):
            rows.append({"label": rule.label, "key": rule.key, "domains": by_domain})
    return {
        "seeds": [s.seed for s in seeds],
        "domains": [{"key": d, "label": label, "n": [sizes.get((d, s.seed)) for s in seeds]} for d, label in DOMAINS],
        "rows": rows,
    }


def baseline_rows() -> list[dict]:
    """The fair baselines with generation cost relative to the council and the z recomputed from wins/losses."""
    arms = list(FairBaseline.objects.all())
    council = next((b for b in arms if b.is_council), None)
    rows = []
    for arm in arms:
        z_derived = None
        if arm.council_wins is not None and arm.council_losses is not None:
            z_derived = stats.paired_z(arm.council_wins, arm.council_losses)
        rows.append(
            {
                "arm": arm,
                "cost_vs_council": (
                    arm.generations_per_request / council.generations_per_request
                    if council and council.generations_per_request
                    else None
                ),
                "z_derived": z_derived,
                "z_agrees": stats.agrees(arm.z, z_derived, stats.decimals(arm.z)) if arm.z is not None else None,
            }
        )
    return rows


def anchored_rows() -> dict:
    rows = list(AnchoredSeed.objects.select_related("seed"))
    fields = ["mechanism", "router", "fallback_router", "margin_vs_plain", "margin_vs_fallback"]
    means = {f: _mean_or_none([getattr(r, f) for r in rows]) for f in fields}
    kinds = sorted({k for r in rows for k in r.decomposition})
    return {"rows": rows, "means": means, "decomposition_kinds": kinds}


def designated_single(baseline: FairBaseline | None) -> Player | None:
    """The player whose mean single accuracy over the seeds equals the designated baseline's recorded accuracy."""
    if baseline is None:
        return None
    matches = []
    for player in Player.objects.all():
        values = list(player.accuracies.filter(domain="all").values_list("value", flat=True))
        if values and stats.agrees(baseline.accuracy, stats.mean(values), stats.decimals(baseline.accuracy)):
            matches.append(player)
    return matches[0] if len(matches) == 1 else None


def seed_margins(single: Player | None) -> list[dict]:
    """Per-seed system margin: the deployed system (router with fallback) minus the designated single model."""
    if single is None:
        return []
    singles = {a.seed.seed: a.value for a in single.accuracies.filter(domain="all").select_related("seed")}
    rows = []
    for anchored in AnchoredSeed.objects.select_related("seed"):
        s = anchored.seed.seed
        if s in singles:
            margin = anchored.fallback_router - singles[s]
            quoted = F41_QUOTED_SEED_MARGINS.get(s)
            rows.append(
                {
                    "seed": s,
                    "system": anchored.fallback_router,
                    "single": singles[s],
                    "margin": margin,
                    "quoted": quoted,
                    "agrees": stats.agrees(quoted, margin, 3) if quoted is not None else None,
                }
            )
    return rows


def _check(label: str, recorded, derived, ok: bool | None, note: str = "") -> dict:
    return {"label": label, "recorded": recorded, "derived": derived, "ok": ok, "note": note}


def _domain_mean_check() -> dict | None:
    """Each rule's overall accuracy against the mean of its two equal-sized domains, over every rule-seed pair."""
    mismatched = 0
    total = 0
    by_domain: dict[tuple[int, int], dict[str, Accuracy]] = {}
    for acc in Accuracy.objects.of_rules():
        by_domain.setdefault((acc.seed_id, acc.rule_id), {})[acc.domain] = acc
    for parts in by_domain.values():
        overall = parts.pop("all", None)
        if overall and len(parts) == 2 and len({p.n for p in parts.values()}) == 1:
            total += 1
            if not stats.agrees(overall.value, stats.mean(p.value for p in parts.values()), 4):
                mismatched += 1
    if not total:
        return None
    return _check(
        "Overall rule accuracy = mean of its two equal-sized domains",
        f"{total} rule-seed pairs",
        f"{mismatched} disagree",
        mismatched == 0,
    )


def _sample_check() -> dict | None:
    """Each sample question's rule picks against whether the picked player was right alone."""
    inconsistent = 0
    outcomes = 0
    for question in SampleQuestion.objects.with_outcomes():
        alone = {po.player_id: po.correct for po in question.player_outcomes.all()}
        for ro in question.rule_outcomes.all():
            outcomes += 1
            if ro.winner_id in alone and alone[ro.winner_id] != ro.correct:
                inconsistent += 1
    if not outcomes:
        return None
    return _check(
        "Sample: a rule is right exactly when the player it picked was right alone",
        f"{outcomes} rule picks",
        f"{inconsistent} disagree",
        inconsistent == 0,
    )


def record_checks(head: dict, single: Player | None, margins: list[dict]) -> list[dict]:
    """Arithmetic the record should satisfy, evaluated on the stored rows; failures are shown, not hidden."""
    checks = []

    def add(label: str, recorded, derived, ok: bool | None, note: str = ""):
        checks.append(_check(label, recorded, derived, ok, note))

    council, baseline = head.get("council"), head.get("baseline")
    anchored = list(AnchoredSeed.objects.select_related("seed"))
    if council and anchored:
        derived = stats.mean(a.fallback_router for a in anchored)
        add(
            "Council accuracy = mean of the per-seed fallback-router accuracies",
            council.accuracy,
            derived,
            stats.agrees(council.accuracy, derived, stats.decimals(council.accuracy)),
        )
    if baseline:
        add(
            "Designated single model = the one player whose per-seed mean equals the baseline's accuracy",
            baseline.accuracy,
            single.short_name if single else None,
            single is not None,
            "" if single else "no single player's mean matches",
        )
    for row in margins:
        if row["quoted"] is not None and not row["agrees"]:
            add(
                f"F41's quoted system margin for seed {row['seed']}",
                row["quoted"],
                row["margin"],
                False,
                "the facts sheet's figure does not follow from the stored accuracies",
            )
    for b in baseline_rows():
        if b["z_agrees"] is not None:
            add(
                f"Paired z vs {b['arm'].label} = (wins − losses) / √(wins + losses)",
                b["arm"].z,
                b["z_derived"],
                b["z_agrees"],
            )
    for a in anchored:
        derived = a.mechanism - a.fallback_router
        add(
            f"Seed {a.seed.seed}: anchored margin vs fallback = anchored − fallback router",
            a.margin_vs_fallback,
            derived,
            stats.agrees(a.margin_vs_fallback, derived, 4),
        )
    checks += [check for check in (_domain_mean_check(), _sample_check()) if check is not None]
    return checks


def coverage() -> dict:
    """What the sample questions cover, to say plainly what the replay can and cannot show."""
    seeds = list(Seed.objects.all())
    per_seed = []
    for s in seeds:
        qs = SampleQuestion.objects.filter(seed=s)
        per_seed.append(
            {
                "seed": s.seed,
                "n_tasks": s.n_tasks,
                "sampled": qs.count(),
                "domains": {d: qs.filter(domain=d).count() for d, _ in DOMAINS},
            }
        )
    return {
        "per_seed": per_seed,
        "recorded_rules": list(Rule.objects.filter(recorded_per_question=True)),
        "unrecorded_rules": list(Rule.objects.filter(recorded_per_question=False).exclude(key="oracle")),
        "oracle": Rule.objects.filter(key="oracle").first(),
        "missing_domains": [label for d, label in DOMAINS if not SampleQuestion.objects.filter(domain=d).exists()],
    }


def ladder_notes() -> list[dict]:
    """Where the ladder's MMLU rows differ from the figures F28 quotes."""
    notes = []
    for player in Player.objects.all():
        quoted = F28_QUOTED_MMLU.get(player.short_name)
        if quoted is not None and player.mmlu_acc is not None and not stats.agrees(quoted, player.mmlu_acc, 3):
            notes.append({"player": player, "ladder": player.mmlu_acc, "quoted": quoted})
    return notes


def sorted_players(sort: str | None, direction: str | None, players: list[Player]) -> tuple[list[Player], str, str]:
    """The summary's ladder rows sorted by one column (unknown columns keep the record's order)."""
    keys = {k for k, _ in PLAYER_COLUMNS}
    players = list(players)
    if sort not in keys:
        return players, "", ""
    direction = "desc" if direction == "desc" else "asc"
    present = [p for p in players if getattr(p, sort) not in (None, "")]
    missing = [p for p in players if getattr(p, sort) in (None, "")]
    present.sort(key=lambda p: getattr(p, sort), reverse=direction == "desc")
    return present + missing, sort, direction


SUMMARY_CACHE_SECONDS = 3600


def bump_revision() -> None:
    """Mark the record changed (every process's cached summary goes stale); called on every save and delete."""
    CouncilRecord.objects.update(revision=uuid.uuid4().hex)


def summary() -> dict:
    """Everything the council page and `GET /api/council/` show, cached under the record's current revision.

    The revision lives in the database, so an edit in any process (the admin, `seed`) is seen by every other
    process on its next request; without a record there is nothing worth caching.
    """
    revision = CouncilRecord.objects.values_list("revision", flat=True).first()
    if revision is None:
        return compute_summary()
    key = f"council:summary:{revision}"
    found = cache.get(key)
    if found is None:
        found = compute_summary()
        cache.set(key, found, SUMMARY_CACHE_SECONDS)
    return found


def compute_summary() -> dict:
    """The summary computed from the stored rows (about 45 queries)."""
    head = headline()
    single = designated_single(head["baseline"])
    margins = seed_margins(single)
    return {
        "record": CouncilRecord.objects.first(),
        "headline": head,
        "designated_single": single,
        "seed_margins": margins,
        "seed_table": seed_table(),
        "domain_table": domain_table(),
        "baselines": baseline_rows(),
        "anchored": anchored_rows(),
        "router": list(RouterChoice.objects.select_related("player")),
        "players": list(Player.objects.all()),
        "checks": record_checks(head, single, margins),
        "coverage": coverage(),
        "ladder_notes": ladder_notes(),
    }


def _row(label: str, kind: str, key: str, values: list) -> dict:
    return {"label": label, "kind": kind, "key": key, "values": values, "mean": _mean_or_none(values)}


def _mean_or_none(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return stats.mean(present) if len(present) == len(values) and present else None
