"""The queries the tables are computed from: one side's rows, per-seed means, provenance, a comparison."""

from __future__ import annotations

from django.db.models import Avg

from results import stats
from results.models import ResultRow
from results.records import condition_key


def finding_links(codes: list[str]) -> list[dict]:
    return [{"code": code, "url": f"/findings/{code}/"} for code in codes or []]


def is_recorded(value) -> bool:
    """A hash or commit the source file states ("unknown" is the programme's word for one it did not record)."""
    return bool(value) and str(value).strip().lower() not in ("unknown", "none", "null")


def full_provenance(rows: list[dict]) -> bool:
    """Every row behind a table names its config hash and its commit."""
    return bool(rows) and all(is_recorded(r["config_hash"]) and is_recorded(r["git_commit"]) for r in rows)


def uploads_in(rows: list[dict]) -> list[dict]:
    """The uploaded files among a table's rows: who, when, which file, how many rows and which seeds."""
    found: dict[tuple, dict] = {}
    for r in rows:
        if not r.get("uploaded"):
            continue
        key = (r["uploaded_by"], r["uploaded_at"], r["source"])
        item = found.setdefault(key, {"by": key[0], "at": key[1], "source": key[2], "rows": 0, "seeds": set()})
        item["rows"] += 1
        if r["seed"] is not None:
            item["seeds"].add(r["seed"])
    return [{**item, "seeds": sorted(item["seeds"])} for item in found.values()]


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
    fields = ("arm__run__run_id", "experiment", "arm_label", "seed", "arm__run__seed_inferred", "metric", "condition",
              "value", "n", "arm__run__config_hash", "arm__run__git_commit", "source_file__path_hint",
              "source_file__original_name", "source_pointer", "source_file__uploader__username",
              "source_file__created_at")  # fmt: skip
    rows = qs.order_by("seed", "experiment", "arm_label", "pk").values_list(*fields)
    return [
        {
            "run": run,
            "run_url": f"/benchmarks/runs/{run}/",
            "experiment": experiment,
            "arm": arm,
            "seed": seed,
            "seed_inferred": seed_inferred,
            "metric": metric,
            "condition": condition,
            "value": value,
            "n": n,
            "config_hash": config_hash,
            "git_commit": git_commit,
            "source": path_hint or original_name or "",
            "pointer": pointer,
            # A row a staff member uploaded: who and when (an upload carries no config hash or commit of its own).
            "uploaded": bool(uploader),
            "uploaded_by": uploader or "",
            "uploaded_at": uploaded_at.isoformat(timespec="minutes") if uploader and uploaded_at else "",
        }
        for (
            run,
            experiment,
            arm,
            seed,
            seed_inferred,
            metric,
            condition,
            value,
            n,
            config_hash,
            git_commit,
            path_hint,
            original_name,
            pointer,
            uploader,
            uploaded_at,
        ) in rows  # fmt: skip
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
