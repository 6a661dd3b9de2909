"""The queries the tables are computed from: one side's rows, per-seed means, provenance, a comparison."""

from __future__ import annotations

from django.db.models import Avg

from .. import stats
from ..models import ResultRow
from ..records import condition_key


def finding_links(codes: list[str]) -> list[dict]:
    return [{"code": code, "url": f"/findings/{code}/"} for code in codes or []]


def side_rows(experiment: str, arm: str, metric: str, condition: dict | None = None, seeds=None):
    qs = ResultRow.objects.for_side(experiment, arm, metric, condition_key(condition))
    if seeds:
        qs = qs.filter(seed__in=seeds)
    return qs


def per_seed(experiment: str, arm: str, metric: str, condition: dict | None = None, seeds=None) -> dict[int, float]:
    """{seed: mean value} for one side, aggregated in SQL."""
    return side_rows(experiment, arm, metric, condition, seeds).per_seed_means()


def provenance(qs) -> list[dict]:
    """Every stored row behind a table: run, seed, value, config hash, commit, source file and pointer.

    Whole, never cut: the page paginates it and says which rows it shows; the rows CSV holds all of them.
    """
    rows = qs.select_related("arm__run", "source_file").order_by("seed", "experiment", "arm_label", "pk")
    return [
        {
            "run": r.arm.run.run_id,
            "run_url": f"/benchmarks/runs/{r.arm.run.run_id}/",
            "experiment": r.experiment,
            "arm": r.arm_label,
            "seed": r.seed,
            "seed_inferred": r.arm.run.seed_inferred,
            "metric": r.metric,
            "condition": r.condition,
            "value": r.value,
            "n": r.n,
            "config_hash": r.arm.run.config_hash,
            "git_commit": r.arm.run.git_commit,
            "source": (r.source_file.path_hint or r.source_file.original_name) if r.source_file else "",
            "pointer": r.source_pointer,
        }
        for r in rows
    ]


def parse_side(text: str) -> tuple[str, str]:
    """ "exp32:C1" -> ("exp32", "C1"); the arm may itself contain colons after the first one."""
    if not isinstance(text, str) or ":" not in text:
        raise ValueError("expected <experiment>:<arm>")
    experiment, arm = text.split(":", 1)
    if not experiment or not arm:
        raise ValueError("expected <experiment>:<arm>")
    return experiment, arm


def compare(
    treatment: tuple[str, str],
    baseline: tuple[str, str],
    metric: str,
    *,
    condition: dict | None = None,
    baseline_condition: dict | None = None,
    method: str = "bootstrap",
    resamples: int = stats.DEFAULT_RESAMPLES,
    rng_seed: int = stats.DEFAULT_RNG_SEED,
    seeds=None,
    with_provenance: bool = True,
) -> dict:
    """Treatment vs baseline on one metric, paired by seed: the compare API's body."""
    t_qs = side_rows(*treatment, metric, condition, seeds)
    b_qs = side_rows(*baseline, metric, baseline_condition, seeds)
    result = stats.compare_per_seed(
        t_qs.per_seed_means(), b_qs.per_seed_means(), method=method, resamples=resamples, rng_seed=rng_seed
    )
    result["treatment"]["side"] = ":".join(treatment)
    result["baseline"]["side"] = ":".join(baseline)
    result["metric"] = metric
    if with_provenance:
        result["provenance"] = provenance(t_qs) + provenance(b_qs)
    return result


def _condition_value(key: str, name: str) -> float:
    import json

    value = json.loads(key)[name]
    return float(value)


def _grouped(experiment: str, metrics: list[str]) -> dict[tuple[str, str, str], dict[int, float]]:
    """{(arm, condition_key, metric): {seed: mean}} for a whole experiment in one GROUP BY query."""
    out: dict[tuple[str, str, str], dict[int, float]] = {}
    rows = (
        ResultRow.objects.filter(experiment=experiment, metric__in=metrics, step__isnull=True, seed__isnull=False)
        .values("arm_label", "condition_key", "metric", "seed")
        .annotate(v=Avg("value"))
        .order_by()
    )
    for r in rows:
        out.setdefault((r["arm_label"], r["condition_key"], r["metric"]), {})[r["seed"]] = r["v"]
    return out
