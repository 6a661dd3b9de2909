"""Live tables: every declared comparison computed at request time from stored rows (cached until the next ingest)."""

from __future__ import annotations

import re

from django.core.cache import cache
from django.db.models import Avg

from . import stats
from .models import Comparison, ResultRow
from .services import condition_key, tables_cache_version

fmt = stats.format_figure


def finding_links(codes: list[str]) -> list[dict]:
    return [{"code": code, "url": f"/findings/{code}/"} for code in codes or []]


# --- queries ------------------------------------------------------------------------------------------


def side_rows(experiment: str, arm: str, metric: str, condition: dict | None = None, seeds=None):
    qs = ResultRow.objects.for_side(experiment, arm, metric, condition_key(condition))
    if seeds:
        qs = qs.filter(seed__in=seeds)
    return qs


def per_seed(experiment: str, arm: str, metric: str, condition: dict | None = None, seeds=None) -> dict[int, float]:
    """{seed: mean value} for one side, aggregated in SQL."""
    return side_rows(experiment, arm, metric, condition, seeds).per_seed_means()


def provenance(qs, limit: int = 200) -> list[dict]:
    """The stored rows behind a cell: run, seed, value, config hash, commit, source file and pointer."""
    rows = qs.select_related("arm__run", "source_file").order_by("seed", "experiment", "arm_label")[:limit]
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


# --- published-vs-recomputed checks ----------------------------------------------------------------------

_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def check(entry: dict, recomputed) -> dict:
    """Compare one published figure with its recomputed value: match, differs, known problem or unavailable."""
    published = str(entry.get("value", ""))
    known = entry.get("known_problem", "")
    out = {
        "label": entry.get("label", ""),
        "row": entry.get("row", ""),
        "published": published,
        "recomputed": None,
        "recomputed_text": "no rows",
        "status": "unavailable",
        "difference": None,
        "known_problem": known,
        "note": entry.get("note", ""),
    }
    if recomputed is None or (isinstance(recomputed, tuple) and None in recomputed):
        out["status"] = "known_problem" if known else "unavailable"
        return out
    numbers = [float(x) for x in _NUM.findall(published)]
    values = list(recomputed) if isinstance(recomputed, tuple) else [recomputed]
    digits = max((stats.decimals_of(x) for x in _NUM.findall(published)), default=4)
    shown = max(digits, 4) if entry.get("exact") else 4
    out["recomputed"] = values if len(values) > 1 else values[0]
    out["recomputed_text"] = "–".join(fmt(v, shown) for v in values)
    if len(numbers) != len(values):
        out["status"] = "known_problem" if known else "unavailable"
        return out
    agree = all(abs(v - p) <= 0.5 * 10 ** (-digits) + 1e-9 for v, p in zip(values, numbers, strict=True))
    diffs = [v - p for v, p in zip(values, numbers, strict=True)]
    out["difference"] = max(diffs, key=abs)
    # A documented problem keeps its mark even when the bare number happens to agree (F44's 0.72 is right,
    # its "at 2.44 iterations" is not).
    out["status"] = "known_problem" if known else ("match" if agree else "differs")
    out["agrees"] = agree
    return out


def _range(values: dict[int, float]):
    return (min(values.values()), max(values.values())) if values else None


# --- table builders ----------------------------------------------------------------------------------------


def _cell(text: str, num: bool = True, **extra) -> dict:
    return {"text": text, "num": num, **extra}


def _summary_cell(values: dict[int, float], scale: float = 1.0) -> dict:
    summary = stats.summarize({s: v * scale for s, v in values.items()})
    if summary.n == 0:
        return _cell("no rows", num=False, empty=True)
    text = fmt(summary.mean) + (f" ± {fmt(summary.sd)}" if summary.sd is not None else "")
    return _cell(text, mean=summary.mean, sd=summary.sd, n=summary.n)


def _per_seed_text(values: dict, decimals: int = 4) -> str:
    return " · ".join(f"{'no seed' if seed == -1 else f's{seed}'}: {fmt(v, decimals)}"
                      for seed, v in sorted(values.items())) or "–"  # fmt: skip


def _ratio_cell(ratio: dict) -> dict:
    if not ratio["n"]:
        return _cell("no paired seeds", num=False, empty=True)
    text = f"{fmt(ratio['mean'])} [{fmt(ratio['ci_low'])}, {fmt(ratio['ci_high'])}]"
    return _cell(text, mean=ratio["mean"], sd=ratio["sd"], ci_low=ratio["ci_low"], ci_high=ratio["ci_high"])


def _stat_options(comparison: Comparison) -> dict:
    spec = comparison.statistic or {}
    return {
        "method": spec.get("interval", "bootstrap"),
        "resamples": int(spec.get("resamples", stats.DEFAULT_RESAMPLES)),
        "rng_seed": int(spec.get("rng_seed", stats.DEFAULT_RNG_SEED)),
    }


def build_ratio(c: Comparison) -> dict:
    opts = _stat_options(c)
    treatment, baseline = (c.treatment_experiment, c.treatment_arm), (c.baseline_experiment, c.baseline_arm)
    cond = (c.spec or {}).get("condition")
    result = compare(treatment, baseline, c.metric, condition=cond, **opts)
    rows = [
        {
            "id": "treatment",
            "cells": [
                _cell("Treatment", False),
                _cell(c.treatment, False),
                _summary_cell({int(k): v for k, v in result["treatment"]["per_seed"].items()}),
                _cell(str(result["treatment"]["n"])),
                _cell(_per_seed_text({int(k): v for k, v in result["treatment"]["per_seed"].items()}), False),
            ],
        },
        {
            "id": "baseline",
            "cells": [
                _cell("Baseline", False),
                _cell(c.baseline, False),
                _summary_cell({int(k): v for k, v in result["baseline"]["per_seed"].items()}),
                _cell(str(result["baseline"]["n"])),
                _cell(_per_seed_text({int(k): v for k, v in result["baseline"]["per_seed"].items()}), False),
            ],
        },
        {
            "id": "ratio",
            "cells": [
                _cell("Ratio (mean of per-seed ratios) [95% CI]", False),
                _cell(f"{c.treatment} / {c.baseline}", False),
                _ratio_cell(result["ratio"]),
                _cell(str(result["ratio"]["n"])),
                _cell(_per_seed_text({int(k): v for k, v in result["ratio"]["per_seed"].items()}), False),
            ],
        },
    ]
    checks = []
    for entry in c.published or []:
        checks.append(check(entry, _evaluate_ratio_entry(c, entry, result, opts)))
    notes = []
    unpaired = result["unpaired"]
    if unpaired["missing_in_treatment"]:
        notes.append(f"Seeds {unpaired['missing_in_treatment']} have baseline rows but no treatment rows (unpaired).")
    if unpaired["missing_in_baseline"]:
        notes.append(f"Seeds {unpaired['missing_in_baseline']} have treatment rows but no baseline rows (unpaired).")
    return {
        "columns": ["Row", "Experiment:arm", f"{c.metric} (mean ± SD)", "n seeds", "Per seed"],
        "rows": rows,
        "checks": checks,
        "notes": notes,
        "interval_note": result["ratio"]["description"],
        "empty": not (result["treatment"]["n"] or result["baseline"]["n"]),
        "provenance": result["provenance"],
        "plot": ratio_plot(result),
        "result": {k: v for k, v in result.items() if k != "provenance"},
    }


def ratio_plot(result: dict) -> dict:
    """The ratio plot's data (per-seed ratios, mean, CI and both sides) from a `compare` result."""
    return {
        "type": "ratio",
        "per_seed": result["ratio"]["per_seed"],
        "mean": result["ratio"]["mean"],
        "ci": [result["ratio"]["ci_low"], result["ratio"]["ci_high"]],
        "treatment": result["treatment"]["per_seed"],
        "baseline": result["baseline"]["per_seed"],
    }


def _evaluate_ratio_entry(c: Comparison, entry: dict, result: dict, opts: dict):
    stat = entry.get("stat", "ratio_mean")
    if entry.get("metric") or entry.get("seeds") or entry.get("arm"):
        treatment = (c.treatment_experiment, entry.get("arm") or c.treatment_arm)
        if entry.get("side") == "baseline":
            treatment = (c.baseline_experiment, entry.get("arm") or c.baseline_arm)
        result = compare(
            treatment,
            (c.baseline_experiment, c.baseline_arm),
            entry.get("metric") or c.metric,
            seeds=entry.get("seeds"),
            with_provenance=False,
            **opts,
        )
        if entry.get("side") == "baseline":
            result = {**result, "baseline": result["treatment"]}
    scale = float(entry.get("scale", 1.0))
    side = result.get(entry.get("side", "treatment"), {})
    values = {int(k): v * scale for k, v in side.get("per_seed", {}).items()}
    ratio = result["ratio"]
    if stat == "mean":
        return stats.mean(list(values.values())) if values else None
    if stat == "sd":
        return stats.sample_sd(list(values.values()))
    if stat == "range":
        return _range(values)
    if stat == "per_seed":
        return values.get(int(entry["seed"]))
    if stat == "ratio_mean":
        return ratio["mean"]
    if stat == "ratio_sd":
        return ratio["sd"]
    if stat == "ci_low":
        return ratio["ci_low"]
    if stat == "ci_high":
        return ratio["ci_high"]
    if stat == "ci":
        return (ratio["ci_low"], ratio["ci_high"]) if ratio["n"] else None
    if stat == "ratio_per_seed":
        return ratio["per_seed"].get(str(entry["seed"]))
    if stat == "ratio_min":
        return min(ratio["per_seed"].values()) if ratio["per_seed"] else None
    return None


def build_curve(c: Comparison) -> dict:
    """A metric over one condition key (budget, depth): per arm and x, mean ± SD over seeds, optional ratio."""
    spec = c.spec or {}
    x_key = spec.get("x_key", "budget")
    qs = ResultRow.objects.filter(experiment=c.treatment_experiment, metric=c.metric, condition_key__contains=x_key)
    if c.treatment_arm:
        qs = qs.filter(arm_label=c.treatment_arm)
    groups: dict[tuple[str, float], dict[int, float]] = {}
    by_run = spec.get("series_by") == "run"  # e.g. local evaluations on different BLiMP subsets stay apart
    for entry in qs.by_condition_and_seed(by_run=by_run):
        try:
            x = _condition_value(entry["condition_key"], x_key)
        except (KeyError, ValueError):
            continue
        series = f"{entry['arm_label']} · {entry['arm__run__run_id']}" if by_run else entry["arm_label"]
        groups.setdefault((series, x), {})[entry["seed"] if entry["seed"] is not None else -1] = entry["v"]
    baseline = {}
    if c.baseline_experiment:
        baseline = per_seed(c.baseline_experiment, c.baseline_arm, c.metric)
    opts = _stat_options(c)
    rows, series = [], {}
    for (arm, x), values in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        cells = [_cell(arm, False), _cell(_x_text(x)), _summary_cell(values), _cell(str(len(values)))]
        cells.append(_cell(_per_seed_text(values, 3), False))
        ratio = None
        if baseline:
            ratio = stats.compare_per_seed(values, baseline, **opts)["ratio"]
            cells.append(_ratio_cell(ratio))
        rows.append({"id": f"{arm}@{_x_text(x)}", "cells": cells})
        summary = stats.summarize(values)
        s = series.setdefault(arm, {"x": [], "mean": [], "sd": [], "points": []})
        s["x"].append(x)
        s["mean"].append(summary.mean)
        s["sd"].append(summary.sd)
        s["points"].extend({"x": x, "seed": seed, "value": v} for seed, v in values.items())
    checks = []
    for entry in c.published or []:
        key = (entry.get("arm") or c.treatment_arm, float(entry["x"])) if "x" in entry else None
        values = groups.get(key, {}) if key else {}
        if entry.get("stat") == "per_seed":
            recomputed = values.get(int(entry["seed"]))
        else:
            recomputed = stats.mean(list(values.values())) if values else None
        checks.append(check({**entry, "row": entry.get("row") or (f"{key[0]}@{_x_text(key[1])}" if key else "")},
                            recomputed))  # fmt: skip
    columns = ["Arm", x_key, f"{c.metric} (mean ± SD)", "n seeds", "Per seed"]
    if baseline:
        columns.append(f"Ratio vs {c.baseline} [95% CI]")
    return {
        "columns": columns,
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": stats.describe_interval(opts["method"], 3) if baseline else "",
        "empty": not rows,
        "provenance": provenance(qs),
        "plot": {"type": "curve", "x_key": x_key, "series": series, "metric": c.metric},
    }


def _condition_value(key: str, name: str) -> float:
    import json

    value = json.loads(key)[name]
    return float(value)


def _x_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


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


def build_adaptive(c: Comparison) -> dict:
    """exp31: explicit vs uniform vs adaptive depth, each with mean depth and a ratio vs explicit."""
    spec = c.spec or {}
    exp = c.treatment_experiment
    explicit_arm = spec.get("explicit_arm", "explicit_fixed")
    arms = spec.get("arms", ["explicit_fixed", "eqlm_uniform", "eqlm_adaptive_matched"])
    sweep_arm = spec.get("sweep_arm", "eqlm_adaptive")
    opts = _stat_options(c)
    grouped = _grouped(exp, ["blimp_accuracy", "mean_depth"])

    def values(arm, cond, metric="blimp_accuracy", seeds=None):
        found = grouped.get((arm, condition_key(cond), metric), {})
        return {s: v for s, v in found.items() if not seeds or s in seeds}

    explicit = values(explicit_arm, None)
    multiples = sorted(
        {int(_condition_value(key, "tolerance_multiple")) for (arm, key, _m) in grouped if arm == sweep_arm and key}
    )
    entries = [(arm, None) for arm in arms] + [(sweep_arm, {"tolerance_multiple": m}) for m in multiples]
    rows, points, lookup = [], [], {}
    for arm, cond in entries:
        blimp = values(arm, cond)
        depth = values(arm, cond, "mean_depth")
        ratio = stats.compare_per_seed(blimp, explicit, **opts)["ratio"]
        label = arm if cond is None else f"{arm} (tolerance × {cond['tolerance_multiple']})"
        row_id = arm if cond is None else f"{arm}x{cond['tolerance_multiple']}"
        lookup[row_id] = (arm, cond)
        rows.append(
            {
                "id": row_id,
                "cells": [
                    _cell(label, False),
                    _summary_cell(blimp),
                    _summary_cell(depth),
                    _cell(str(len(blimp))),
                    _ratio_cell(ratio) if arm != explicit_arm else _cell("1 (baseline)"),
                    _cell(_per_seed_text(blimp, 3), False),
                ],
            }
        )
        for seed, v in blimp.items():
            if seed in depth:
                points.append({"arm": label, "seed": seed, "depth": depth[seed], "blimp": v})
    checks = []
    for entry in c.published or []:
        arm, cond = lookup.get(entry.get("row", ""), (entry.get("row"), None))
        seeds = entry.get("seeds")
        metric = entry.get("metric", "blimp_accuracy")
        found = values(arm, cond, metric, seeds)
        base = values(explicit_arm, None, metric, seeds)
        if entry.get("stat") == "ratio_mean":
            recomputed = stats.paired_ratios(found, base).ratios
            recomputed = stats.mean(list(recomputed.values())) if recomputed else None
        elif entry.get("stat") == "ratio_per_seed":
            recomputed = stats.paired_ratios(found, base).ratios.get(int(entry["seed"]))
        else:
            recomputed = stats.mean(list(found.values())) if found else None
        checks.append(check(entry, recomputed))
    prov = ResultRow.objects.filter(experiment=exp, metric__in=["blimp_accuracy", "mean_depth"], step__isnull=True)
    return {
        "columns": [
            "Arm",
            "BLiMP (mean ± SD)",
            "Mean depth (iterations)",
            "n seeds",
            "Ratio vs explicit [95% CI]",
            "Per seed",
        ],  # fmt: skip
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": stats.describe_interval(opts["method"], len(explicit)),
        "empty": not explicit,
        "provenance": provenance(prov),
        "plot": {"type": "depth", "points": points},
    }


def build_audit(c: Comparison) -> dict:
    """F44: per-iteration compute ratio and the iterations an EqLM gets at an explicit model's FLOPs."""
    spec = c.spec or {}
    exp = c.treatment_experiment
    depth_exp = spec.get("depth_experiment", "exp31")
    layers = int(spec.get("explicit_layers", 12))

    stored = {
        (r["arm_label"], r["metric"]): r["value"]
        for r in ResultRow.objects.filter(experiment=exp, step__isnull=True, condition_key="")
        .order_by("pk")
        .values("arm_label", "metric", "value")
    }
    depth_rows = _grouped(depth_exp, ["blimp_accuracy", "mean_depth"])

    def value(arm, metric):
        return stored.get((arm, metric))

    def depth_values(arm, metric, cond, seeds):
        found = depth_rows.get((arm, condition_key(cond), metric), {})
        return {s: v for s, v in found.items() if not seeds or s in seeds}

    metrics = ["params_total_M", "params_embeddings_M", "params_block_M", "compute_units_per_block_M"]
    rows = []
    for metric in metrics:
        e, x = value("eqlm", metric), value("explicit", metric)
        rows.append({"id": metric, "cells": [_cell(metric, False), _cell(fmt(e, 2)), _cell(fmt(x, 2)),
                                             _cell(fmt(e / x if e and x else None))]})  # fmt: skip
    e, x = value("eqlm", "compute_units_per_block_M"), value("explicit", "compute_units_per_block_M")
    ratio = e / x if e and x else None
    equal_flops = layers / ratio if ratio else None
    rows.append({"id": "ratio_per_step", "cells": [_cell("compute ratio per iteration (EqLM / explicit layer)", False),
                 _cell(""), _cell(""), _cell(fmt(ratio))]})  # fmt: skip
    rows.append({"id": "iterations_at_equal_flops", "cells": [
        _cell(f"EqLM iterations at the FLOPs of {layers} explicit layers", False), _cell(""), _cell(""),
        _cell(fmt(equal_flops))]})  # fmt: skip
    # Ratio at the shallowest tolerance-sweep point, paired with the explicit model by seed.
    sweep_rows = []
    for multiple in spec.get("sweep_multiples", [8, 4]):
        cond = {"tolerance_multiple": multiple}
        for label, seeds in (("seeds 43/44", [43, 44]), ("all seeds", None)):
            blimp = depth_values("eqlm_adaptive", "blimp_accuracy", cond, seeds)
            depth = depth_values("eqlm_adaptive", "mean_depth", cond, seeds)
            explicit = depth_values("explicit_fixed", "blimp_accuracy", None, seeds)
            r = stats.compare_per_seed(blimp, explicit)["ratio"]
            row_id = f"sweep_x{multiple}_{'4344' if seeds else 'all'}"
            text = f"{fmt(r['mean'])} at mean depth {fmt(stats.mean(list(depth.values())) if depth else None, 2)}"
            per = " · ".join(f"s{s}: {fmt(v, 4)}" for s, v in r["per_seed"].items())
            rows.append({"id": row_id, "cells": [_cell(f"BLiMP ratio, tolerance × {multiple} ({label})", False),
                         _cell(per, False), _cell(""), _cell(text)]})  # fmt: skip
            sweep_rows.append((row_id, r, depth))
    checks = []
    lookup = {row_id: (r, depth) for row_id, r, depth in sweep_rows}
    for entry in c.published or []:
        stat = entry.get("stat")
        if stat == "ratio_per_step":
            recomputed = ratio
        elif stat == "iterations_at_equal_flops":
            recomputed = equal_flops
        elif stat in ("sweep_ratio", "sweep_ratio_per_seed", "sweep_depth") and entry.get("row") in lookup:
            r, depth = lookup[entry["row"]]
            if stat == "sweep_ratio":
                recomputed = r["mean"]
            elif stat == "sweep_depth":
                recomputed = stats.mean(list(depth.values())) if depth else None
            else:
                recomputed = r["per_seed"].get(str(entry["seed"]))
        elif stat == "value":
            recomputed = value(entry["arm"], entry["metric"])
        else:
            recomputed = None
        checks.append(check(entry, recomputed))
    return {
        "columns": ["Quantity", "EqLM (tied)", "Explicit", "Recomputed"],
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": "",
        "empty": ratio is None,
        "provenance": provenance(ResultRow.objects.filter(experiment=exp)),
        "plot": None,
    }


def build_ladder(c: Comparison) -> dict:
    """F55: the benchmark ladder, with each stored mean6 recomputed from its six task rows."""
    spec = c.spec or {}
    exp = c.treatment_experiment
    tasks = spec.get("tasks", ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq"])
    extra = spec.get("extra_tasks", ["lambada_openai"])
    table: dict[tuple[str, str], dict] = {}
    order: list[tuple[str, str]] = []
    for row in (
        ResultRow.objects.filter(experiment=exp).order_by("pk").values("arm_label", "metric", "condition", "value")
    ):
        key = (row["arm_label"], str(row["condition"].get("tokens", "")))
        if key not in table:
            table[key] = {}
            order.append(key)
        name = "mean6" if row["metric"] == "ladder_mean6" else row["condition"].get("task")
        table[key][name] = row["value"]
    rows, checks = [], []
    for model, tokens in order:
        values = table[(model, tokens)]
        six = [values[t] for t in tasks if t in values]
        recomputed = sum(six) / len(six) if len(six) == len(tasks) else None
        row_id = f"{model}@{tokens}"
        cells = [_cell(model, False), _cell(tokens, False)]
        cells += [_cell(fmt(values.get(t), 3)) for t in tasks + extra]
        cells += [_cell(fmt(values.get("mean6"), 3)), _cell(fmt(recomputed))]
        rows.append({"id": row_id, "cells": cells})
        if "mean6" in values:
            stored = {"label": f"{model} at {tokens}: mean6", "row": row_id, "value": f"{values['mean6']:.3f}"}
            checks.append(check(stored, recomputed))
    for entry in c.published or []:
        checks.append(check(entry, None))
    return {
        "columns": ["Model", "Tokens", *tasks, *extra, "mean6 (stored)", "mean6 (recomputed from six tasks)"],
        "rows": rows,
        "checks": checks,
        "notes": [],
        "interval_note": "Single seed per model; no interval.",
        "empty": not rows,
        "provenance": provenance(ResultRow.objects.filter(experiment=exp), limit=100),
        "plot": {"type": "ladder", "rows": [{"model": m, "tokens": t, **table[(m, t)]} for m, t in order]},
    }


BUILDERS = {
    Comparison.Kind.RATIO: build_ratio,
    Comparison.Kind.CURVE: build_curve,
    Comparison.Kind.ADAPTIVE: build_adaptive,
    Comparison.Kind.AUDIT: build_audit,
    Comparison.Kind.LADDER: build_ladder,
}

STATUS_TEXT = {
    "match": "✓ matches",
    "differs": "differs",
    "known_problem": "known problem",
    "unavailable": "not recomputable",
}


def build_table(comparison: Comparison, *, use_cache: bool = True) -> dict:
    """The whole table for one declared comparison, computed from rows (cached per ingest version)."""
    key = f"benchmarks:table:{comparison.slug}:{comparison_stamp(comparison)}:{tables_cache_version()}"
    if use_cache:
        cached = cache.get(key)
        if cached is not None:
            return cached
    body = BUILDERS[comparison.kind](comparison)
    by_row: dict[str, list] = {}
    for item in body["checks"]:
        item["status_text"] = STATUS_TEXT[item["status"]]
        by_row.setdefault(item["row"], []).append(item)
    for row in body["rows"]:
        row["published"] = by_row.pop(row["id"], [])
    body["unplaced_checks"] = [item for items in by_row.values() for item in items]
    body.update(
        {
            "slug": comparison.slug,
            "title": comparison.title,
            "kind": comparison.kind,
            "description": comparison.description,
            "notes": [*([comparison.notes] if comparison.notes else []), *body["notes"]],
            "findings": finding_links(comparison.findings),
            "treatment": comparison.treatment if comparison.treatment_experiment else "",
            "baseline": comparison.baseline if comparison.baseline_experiment else "",
            "metric": comparison.metric,
            "counts": {status: sum(1 for item in body["checks"] if item["status"] == status) for status in STATUS_TEXT},
        }
    )
    if use_cache:
        cache.set(key, body, 300)
    return body


def comparison_stamp(comparison: Comparison) -> str:
    """Changes whenever an admin edits the declaration, so an edited table is never served stale."""
    import hashlib

    fields = [getattr(comparison, f.attname) for f in Comparison._meta.concrete_fields]
    return hashlib.sha1(repr(fields).encode()).hexdigest()[:16]


def table_csv_rows(table: dict) -> list[list[str]]:
    header = [*table["columns"], "Published", "Published check"]
    out = [header]
    for row in table["rows"]:
        published = "; ".join(f"{p['label']}: {p['published']}" for p in row.get("published", []))
        status = "; ".join(f"{p['status_text']} (recomputed {p['recomputed_text']})" for p in row.get("published", []))
        out.append([cell["text"] for cell in row["cells"]] + [published, status])
    for p in table.get("unplaced_checks", []):
        out.append([p["label"]] + [""] * (len(table["columns"]) - 1) + [p["published"], p["status_text"]])
    return out
