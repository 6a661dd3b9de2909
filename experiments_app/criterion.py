"""Success criteria in a small declared form, and the verdict they give on a set of result rows (no Django).

A criterion is a tree of JSON objects, each with an ``op``:

- ``{"op": "all", "of": [...]}`` / ``{"op": "any", "of": [...]}``: AND / OR of conditions;
- ``{"op": "every_seed", "of": condition}``: the condition holds for each seed on its own;
- ``{"op": "ratio", "of": SEL, "over": SEL, ...TEST}``: per seed, of / over (paired by seed);
- ``{"op": "difference", "of": SEL, "minus": SEL, "abs": false, ...TEST}``: per seed, of - minus (with ``abs``,
  |of - minus|, so that ``max`` bounds every seed's gap whichever way it goes);
- ``{"op": "value", "of": SEL, ...TEST}``: per seed, a stored row's value (any metric: tokens/s too);
- ``{"op": "curve", "of": SEL, "measure": M, "depth": d, "to_depth": D, "better": "lower", ...TEST}``: per seed,
  a measure of the metric by depth: ``at`` (the value at depth d), ``best`` (the best value up to D),
  ``gap_at`` (value at d minus the best up to D), ``excess`` (the largest excess over the best depth's value,
  from the best depth to D).

SEL = ``{"arm": label, "metric": name, "where": {condition keys}, "experiment": slug (default: this one)}``
picks one row per seed (its condition holds every key of ``where``; ``seed`` is matched by the row's seed).

TEST = ``{"stat": "mean" | "ci_low" | "ci_high" | "min" | "max", "cmp": ">=" | ">" | "<=" | "<", "value": x}``:
the per-seed figures are reduced by ``stat`` (the interval is benchmarks_app.stats' percentile bootstrap over
seeds, 95%, 10,000 resamples, seeded; with three seeds it is their min–max) and compared with ``value``.
Any node may carry a ``label`` (the hypothesis it tests), shown with its own verdict.

A condition is *pending* while a row it needs for one of the seeds is missing, else *validated* or *missed*.
AND is missed as soon as one part is missed, OR validated as soon as one part is validated (Kleene logic), so
more rows never turn a decided part around.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from benchmarks_app import stats

from .criterion_text import describe, describe_selector

VALIDATED, MISSED, PENDING = "validated", "missed", "pending"
VERDICT_TEXT = {VALIDATED: "validated", MISSED: "formally missed", PENDING: "pending"}
COMPARATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
STATS = ("mean", "ci_low", "ci_high", "min", "max")
MEASURES = ("at", "best", "gap_at", "excess")
LOGIC = ("all", "any")
OPS = ("all", "any", "every_seed", "ratio", "difference", "value", "curve")
INTERVAL_TEXT = (
    "95% percentile bootstrap over seeds (10,000 resamples, seeded RNG); with three seeds it is the min–max of "
    "the per-seed figures, with one seed that seed's figure."
)


class CriterionError(ValueError):
    """The criterion is malformed; `path` says where (``of[1].over.metric``)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path or 'criterion'}: {message}")
        self.path = path or "criterion"
        self.message = message


@dataclass(frozen=True)
class Row:
    """One stored measurement, as the criterion sees it."""

    experiment: str
    arm: str
    seed: int | None
    metric: str
    condition: dict
    value: float


@dataclass
class Outcome:
    """A node's verdict: its status, the figure it compared and how, and its parts."""

    status: str
    text: str
    label: str = ""
    figure: float | None = None
    per_seed: dict[int, float] = field(default_factory=dict)
    interval: tuple[float | None, float | None] | None = None
    note: str = ""
    parts: list[Outcome] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return VERDICT_TEXT[self.status]

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "verdict": self.verdict,
            "label": self.label,
            "text": self.text,
            "figure": self.figure,
            "per_seed": {str(s): v for s, v in sorted(self.per_seed.items())},
            "interval": list(self.interval) if self.interval else None,
            "note": self.note,
            "parts": [p.as_dict() for p in self.parts],
        }


# --- validation ------------------------------------------------------------------------------------------------


def _selector(sel, path: str, arms: Sequence[str]) -> dict:
    if not isinstance(sel, dict):
        raise CriterionError(path, "a selector {arm, metric, where}")
    unknown = sorted(set(sel) - {"arm", "metric", "where", "experiment"})
    if unknown:
        raise CriterionError(f"{path}.{unknown[0]}", "unknown key")
    if not isinstance(sel.get("arm"), str) or not sel["arm"]:
        raise CriterionError(f"{path}.arm", "an arm label")
    if not sel.get("experiment") and arms and sel["arm"] not in arms:
        raise CriterionError(f"{path}.arm", f"no arm {sel['arm']!r} in this experiment ({', '.join(arms)})")
    if not isinstance(sel.get("metric"), str) or not sel["metric"]:
        raise CriterionError(f"{path}.metric", "a metric name")
    where = sel.get("where", {})
    if not isinstance(where, dict) or not all(isinstance(v, str | int | float | bool) for v in where.values()):
        raise CriterionError(f"{path}.where", "an object of plain condition values")
    if "seed" in where:
        raise CriterionError(f"{path}.where", "the seed is matched per seed, not named here")
    out = {"arm": sel["arm"], "metric": sel["metric"], "where": dict(where)}
    if sel.get("experiment"):
        out["experiment"] = str(sel["experiment"])
    return out


def _test(node: dict, at: str) -> dict:
    stat = node.get("stat", "mean")
    if stat not in STATS:
        raise CriterionError(f"{at}stat", f"one of {', '.join(STATS)}")
    if node.get("cmp") not in COMPARATORS:
        raise CriterionError(f"{at}cmp", f"one of {' '.join(COMPARATORS)}")
    value = node.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CriterionError(f"{at}value", "a number")
    return {"stat": stat, "cmp": node["cmp"], "value": float(value)}


def validate(criterion, arms: Sequence[str] = (), path: str = "") -> dict:
    """A normalised copy of the criterion; CriterionError names the first malformed key."""
    if not isinstance(criterion, dict):
        raise CriterionError(path, "an object with an op")
    op = criterion.get("op")
    if op not in OPS:
        raise CriterionError(f"{path}.op".lstrip("."), f"one of {', '.join(OPS)}")
    allowed = {"op", "label"}
    out: dict = {"op": op}
    if criterion.get("label"):
        out["label"] = str(criterion["label"])
    at = (path + ".") if path else ""
    if op in LOGIC:
        parts = criterion.get("of")
        if not isinstance(parts, list) or not parts:
            raise CriterionError(f"{at}of", "a non-empty list of conditions")
        out["of"] = [validate(p, arms, f"{at}of[{i}]") for i, p in enumerate(parts)]
        allowed |= {"of"}
    elif op == "every_seed":
        out["of"] = validate(criterion.get("of"), arms, f"{at}of")
        allowed |= {"of"}
    else:
        out["of"] = _selector(criterion.get("of"), f"{at}of", arms)
        allowed |= {"of", "stat", "cmp", "value"}
        if op == "ratio":
            out["over"] = _selector(criterion.get("over"), f"{at}over", arms)
            allowed.add("over")
        elif op == "difference":
            out["minus"] = _selector(criterion.get("minus"), f"{at}minus", arms)
            out["abs"] = bool(criterion.get("abs", False))
            allowed |= {"minus", "abs"}
        elif op == "curve":
            allowed |= {"measure", "depth", "to_depth", "better"}
            measure = criterion.get("measure")
            if measure not in MEASURES:
                raise CriterionError(f"{at}measure", f"one of {', '.join(MEASURES)}")
            out["measure"] = measure
            for key in ("depth", "to_depth"):
                value = criterion.get(key)
                needed = key == "depth" and measure in ("at", "gap_at")
                if value is None and not needed:
                    continue
                if type(value) is not int or value < 1:
                    raise CriterionError(f"{at}{key}", "a depth (a positive integer)")
                out[key] = value
            if "depth" in out["of"]["where"]:
                raise CriterionError(f"{at}of.where", "a curve runs over depth: leave depth out of where")
            better = criterion.get("better", "lower")
            if better not in ("lower", "higher"):
                raise CriterionError(f"{at}better", "lower or higher")
            out["better"] = better
        out.update(_test(criterion, at))
    unknown = sorted(set(criterion) - allowed)
    if unknown:
        raise CriterionError(f"{at}{unknown[0]}", "unknown key")
    return out


def arms_named(criterion: dict) -> set[str]:
    """Every arm of this experiment a (valid) criterion reads."""
    found = set()
    for key in ("of", "over", "minus"):
        part = criterion.get(key)
        if isinstance(part, list):
            for item in part:
                found |= arms_named(item)
        elif isinstance(part, dict) and "op" in part:
            found |= arms_named(part)
        elif isinstance(part, dict) and not part.get("experiment"):
            found.add(part["arm"])
    return found


def experiments_named(criterion: dict) -> set[str]:
    """Other experiments whose rows a criterion reads (selectors with an `experiment`)."""
    found = set()
    for key in ("of", "over", "minus"):
        part = criterion.get(key)
        items = part if isinstance(part, list) else [part]
        for item in items:
            if isinstance(item, dict) and "op" in item:
                found |= experiments_named(item)
            elif isinstance(item, dict) and item.get("experiment"):
                found.add(item["experiment"])
    return found


# --- evaluation --------------------------------------------------------------------------------------------------


class RowIndex:
    """Rows by (experiment, arm, metric), so each selector scans only its own."""

    def __init__(self, rows: Iterable[Row], experiment: str):
        self.experiment = experiment
        self.by_key: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
        for row in rows:
            self.by_key[(row.experiment, row.arm, row.metric)].append(row)

    def matching(self, sel: dict, seed: int) -> list[Row]:
        rows = self.by_key.get((sel.get("experiment") or self.experiment, sel["arm"], sel["metric"]), [])
        where = sel["where"]
        return [
            r for r in rows if r.seed == seed and all(r.condition.get(k) == v for k, v in where.items() if k != "seed")
        ]


@dataclass
class Context:
    rows: RowIndex
    seeds: list[int]
    depths: list[int]  # the depths the evaluation measures: a curve is complete when it has each of them


def _one(ctx: Context, sel: dict, seed: int) -> tuple[float | None, str]:
    rows = ctx.rows.matching(sel, seed)
    if not rows:
        return None, f"no row yet for {describe_selector(sel)}, seed {seed}"
    distinct = {r.value for r in rows}
    if len(distinct) > 1:
        conditions = sorted({str(sorted(r.condition.items())) for r in rows})
        return None, f"{len(rows)} rows match {describe_selector(sel)}, seed {seed}: narrow where ({conditions[:2]})"
    return rows[0].value, ""


def _curve(ctx: Context, node: dict, seed: int) -> tuple[float | None, str]:
    sel = node["of"]
    curve: dict[int, float] = {}
    for row in ctx.rows.matching(sel, seed):
        depth = row.condition.get("depth")
        if isinstance(depth, int):
            curve[depth] = row.value
    limit = node.get("to_depth") or max([*ctx.depths, *curve, 0])
    needed = {d for d in ctx.depths if d <= limit} | ({node["depth"]} if node.get("depth") else set())
    if node.get("to_depth"):
        needed.add(node["to_depth"])
    missing = sorted(needed - set(curve))
    if missing or not curve:
        shown = ", ".join(map(str, missing[:6])) + ("…" if len(missing) > 6 else "")
        return None, f"{describe_selector(sel)}, seed {seed}: no row yet at depth {shown or 'any'}"
    span = {d: v for d, v in curve.items() if d <= limit}
    pick = min if node["better"] == "lower" else max
    best_depth = pick(sorted(span), key=lambda d: span[d])
    best = span[best_depth]
    sign = 1.0 if node["better"] == "lower" else -1.0
    measure = node["measure"]
    if measure == "at":
        return curve[node["depth"]], ""
    if measure == "best":
        return best, ""
    if measure == "gap_at":
        return sign * (curve[node["depth"]] - best), ""
    after = [sign * (v - best) for d, v in span.items() if d >= best_depth]
    return max(after), ""


def _per_seed(ctx: Context, node: dict) -> tuple[dict[int, float], list[str]]:
    values: dict[int, float] = {}
    notes: list[str] = []
    for seed in ctx.seeds:
        if node["op"] == "curve":
            value, note = _curve(ctx, node, seed)
        else:
            value, note = _one(ctx, node["of"], seed)
            if value is not None and node["op"] in ("ratio", "difference"):
                other, note = _one(ctx, node["over" if node["op"] == "ratio" else "minus"], seed)
                if other is None:
                    value = None
                elif node["op"] == "ratio":
                    if other == 0:
                        value, note = None, f"seed {seed}: the denominator is 0"
                    else:
                        value = value / other
                else:
                    value = abs(value - other) if node.get("abs") else value - other
        if value is None:
            notes.append(note)
        else:
            values[seed] = value
    return values, notes


def _reduce(values: dict[int, float], stat: str) -> tuple[float | None, tuple[float | None, float | None]]:
    ordered = [values[s] for s in sorted(values)]
    low, high = stats.bootstrap_ci(ordered)
    figure = {
        "mean": stats.mean(ordered),
        "ci_low": low,
        "ci_high": high,
        "min": min(ordered) if ordered else None,
        "max": max(ordered) if ordered else None,
    }[stat]
    return figure, (low, high)


def combine(op: str, statuses: list[str]) -> str:
    if op == "any":
        if VALIDATED in statuses:
            return VALIDATED
        return PENDING if PENDING in statuses else MISSED
    if MISSED in statuses:
        return MISSED
    return PENDING if PENDING in statuses else VALIDATED


def _evaluate(node: dict, ctx: Context) -> Outcome:
    op = node["op"]
    label = node.get("label", "")
    if op in LOGIC:
        parts = [_evaluate(p, ctx) for p in node["of"]]
        return Outcome(combine(op, [p.status for p in parts]), describe(node), label, parts=parts)
    if op == "every_seed":
        parts = []
        for seed in ctx.seeds:
            part = _evaluate(node["of"], Context(ctx.rows, [seed], ctx.depths))
            part.label = f"seed {seed}"
            parts.append(part)
        return Outcome(combine("all", [p.status for p in parts]), describe(node), label, parts=parts)
    values, notes = _per_seed(ctx, node)
    text = describe(node)
    if notes:
        return Outcome(PENDING, text, label, per_seed=values, note="; ".join(notes[:3]))
    figure, interval = _reduce(values, node["stat"])
    held = figure is not None and COMPARATORS[node["cmp"]](figure, node["value"])
    return Outcome(VALIDATED if held else MISSED, text, label, figure, values, interval)


def evaluate(
    criterion: dict, rows: Iterable[Row], seeds: Sequence[int], experiment: str, depths: Sequence[int] = ()
) -> Outcome:
    """The verdict of a validated criterion on these rows, for the experiment's seeds and evaluated depths."""
    if not seeds:
        raise CriterionError("seeds", "an experiment needs at least one seed")
    ctx = Context(RowIndex(rows, experiment), sorted(seeds), sorted(depths))
    return _evaluate(criterion, ctx)
