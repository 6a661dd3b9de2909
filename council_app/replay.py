"""The replay of the council record: a seed's sample questions turn by turn (players, rule verdicts, oracle), filtered,
and the sample's tallies beside the seed's recorded accuracy."""

from __future__ import annotations

from dataclasses import dataclass, field

from .models import DOMAIN_MATH, Accuracy, RouterChoice, SampleQuestion


@dataclass
class ReplayFilter:
    seed: int
    domain: str = ""
    rule: str = ""
    outcome: str = ""  # "right" | "wrong" | ""
    split: str = ""  # "players" | "rules" | ""
    extra: dict = field(default_factory=dict)

    def params(self) -> dict:
        out = {"seed": self.seed}
        for name in ("domain", "rule", "outcome", "split"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out


def question_view(question: SampleQuestion, champions: dict[str, int]) -> dict:
    """One sample question as the replay shows it: player turns, then rule verdicts, then the derived oracle."""
    players = [
        {"player": po.player, "correct": po.correct, "champion": champions.get(question.domain) == po.player_id}
        for po in question.player_outcomes.all()
    ]
    rules = [{"rule": ro.rule, "winner": ro.winner, "correct": ro.correct} for ro in question.rule_outcomes.all()]
    right = [p for p in players if p["correct"]]
    return {
        "question": question,
        "players": players,
        "rules": rules,
        "oracle": bool(right) if players else None,
        "players_split": 0 < len(right) < len(players),
        "rules_split": len({r["winner"].pk for r in rules}) > 1,
    }


def replay_questions(flt: ReplayFilter) -> list[dict]:
    """The seed's sample questions that pass the filter, in recorded order."""
    champions = {rc.domain: rc.player_id for rc in RouterChoice.objects.all()}
    qs = SampleQuestion.objects.with_outcomes().filter(seed__seed=flt.seed)
    if flt.domain:
        qs = qs.filter(domain=flt.domain)
    views = [question_view(q, champions) for q in qs]
    if flt.rule and flt.outcome:
        wanted = flt.outcome == "right"
        views = [v for v in views if any(r["rule"].key == flt.rule and r["correct"] == wanted for r in v["rules"])]
    elif flt.rule:
        views = [v for v in views if any(r["rule"].key == flt.rule for r in v["rules"])]
    elif flt.outcome:
        wanted = flt.outcome == "right"
        views = [v for v in views if v["rules"] and all(r["correct"] == wanted for r in v["rules"])]
    if flt.split == "players":
        views = [v for v in views if v["players_split"]]
    elif flt.split == "rules":
        views = [v for v in views if v["rules_split"]]
    return views


def sample_tallies(seed_number: int) -> dict:
    """How often each rule and player was right within the seed's sample, beside the seed's recorded maths accuracy.

    The sample is a subset of the maths questions, so its tallies need not equal the recorded accuracies.
    """
    questions = list(SampleQuestion.objects.with_outcomes().filter(seed__seed=seed_number))
    recorded = {
        (a.rule_id, a.player_id, a.domain): a.value
        for a in Accuracy.objects.filter(seed__seed=seed_number, domain__in=["all", DOMAIN_MATH])
    }
    rows: dict[tuple[str, int], dict] = {}
    for q in questions:
        for ro in q.rule_outcomes.all():
            row = rows.setdefault(
                ("rule", ro.rule_id),
                {"label": ro.rule.label, "right": 0, "recorded_math": recorded.get((ro.rule_id, None, DOMAIN_MATH))},
            )
            row["right"] += ro.correct
        for po in q.player_outcomes.all():
            row = rows.setdefault(
                ("player", po.player_id),
                {"label": f"single: {po.player.short_name}", "right": 0, "recorded_math": None},
            )
            row["right"] += po.correct
    n = len(questions)
    out = [{**row, "n": n, "share": row["right"] / n if n else None} for row in rows.values()]
    indices = [q.index for q in questions]
    return {
        "seed": seed_number,
        "n": n,
        "rows": out,
        "first": min(indices, default=None),
        "last": max(indices, default=None),
        "domains": sorted({q.get_domain_display() for q in questions}),
    }
