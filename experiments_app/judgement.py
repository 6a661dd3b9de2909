"""The verdict a reader is shown: the registered criterion's, except that a comparison of two arms that both sit at
chance is inconclusive, never validated (nor missed): its ratio or difference compares noise.

Defined once, here, for every place that shows an experiment's verdict: its page, the experiments list, the API,
the admin, the head-to-head table and the /benchmarks/ overview. The criterion itself (experiments_app.criterion)
is the registration and is left as registered; this is how its outcome is read.

At chance: BLiMP's minimal pairs are two-way choices, so 0.5 is chance; an arm is at chance when its accuracy, the
mean over its rows at the selector's setting, lies within the 95% binomial band of 0.5 for one evaluation of n pairs.
"""

from __future__ import annotations

import math
from dataclasses import replace

from results.models import ResultRow

from . import criterion as criteria

BLIMP = "blimp_accuracy"
BLIMP_CHANCE = 0.5


def chance_note(criterion_verdict: str) -> str:
    return f"both arms at chance on BLiMP (the criterion alone reads “{criterion_verdict}”)"


class ChanceRows:
    """The BLiMP rows of the experiments a criterion reads, fetched once: (arm, condition, value, n) by experiment."""

    def __init__(self, slug: str):
        self.slug = slug
        self._rows: dict[str, list[tuple]] = {}

    def rows(self, experiment: str) -> list[tuple]:
        if experiment not in self._rows:
            self._rows[experiment] = list(
                ResultRow.objects.filter(experiment=experiment, metric=BLIMP, step__isnull=True).values_list(
                    "arm_label", "condition", "value", "n"
                )
            )
        return self._rows[experiment]

    def at_chance(self, selector: dict) -> bool:
        """The arm's BLiMP accuracy, over its seeds, lies within the 95% binomial band of chance."""
        where = selector.get("where") or {}
        found = [
            (value, n)
            for arm, condition, value, n in self.rows(selector.get("experiment") or self.slug)
            if arm == selector.get("arm") and all((condition or {}).get(k) == v for k, v in where.items())
        ]
        if not found:
            return False
        mean = sum(value for value, _ in found) / len(found)
        n = min((n for _, n in found if n), default=0)
        band = 1.96 * math.sqrt(BLIMP_CHANCE * (1 - BLIMP_CHANCE) / n) if n else 0.02
        return abs(mean - BLIMP_CHANCE) <= band


def compares_chance(node: dict, rows: ChanceRows) -> bool:
    """A comparison of two BLiMP arms that both sit at chance."""
    sides = [node.get("of"), node.get("over") or node.get("minus")]
    if not all(isinstance(side, dict) and side.get("metric") == BLIMP for side in sides):
        return False
    return all(rows.at_chance(side) for side in sides)


def _judge(outcome: criteria.Outcome, node: dict, rows: ChanceRows) -> criteria.Outcome:
    op = node["op"]
    if op in criteria.LOGIC or op == "every_seed":
        children = node["of"] if op in criteria.LOGIC else [node["of"]] * len(outcome.parts)
        parts = [_judge(part, child, rows) for part, child in zip(outcome.parts, children, strict=True)]
        status = criteria.combine("any" if op == "any" else "all", [p.status for p in parts])
        return replace(outcome, status=status, parts=parts)
    if outcome.status != criteria.PENDING and compares_chance(node, rows):
        return replace(outcome, status=criteria.INCONCLUSIVE, note=chance_note(outcome.verdict))
    return outcome


def judge(outcome: criteria.Outcome, criterion: dict, slug: str) -> criteria.Outcome:
    """The criterion's outcome as a reader is shown it: each comparison of two arms at chance inconclusive, and
    every node above it combined again from its judged parts."""
    return _judge(outcome, criterion, ChanceRows(slug))
