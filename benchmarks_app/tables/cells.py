"""Cells of a table: a figure as text, mean ± SD, per-seed values, a ratio with its interval."""

from __future__ import annotations

from results import stats

from ..models import Comparison

fmt = stats.format_figure


def _cell(text: str, num: bool = True, **extra) -> dict:
    return {"text": text, "num": num, **extra}


def _summary_cell(values: dict[int, float], scale: float = 1.0) -> dict:
    summary = stats.summarize({s: v * scale for s, v in values.items()})
    if summary.n == 0:
        return _cell("no rows", num=False, empty=True)
    if summary.n > 1 and stats.is_deterministic(list(values.values())):
        # The same value in every seed (a fixed depth, a count): no spread to show.
        return _cell(f"{fmt(summary.mean)} (every seed)", mean=summary.mean, sd=None, n=summary.n)
    text = fmt(summary.mean) + (f" ± {fmt(summary.sd)}" if summary.sd is not None else "")
    return _cell(text, mean=summary.mean, sd=summary.sd, n=summary.n)


def _per_seed_text(values: dict, decimals: int = 4) -> str:
    return " · ".join(f"{'no seed' if seed == -1 else f's{seed}'}: {fmt(v, decimals)}"
                      for seed, v in sorted(values.items())) or "–"  # fmt: skip


def _ratio_cell(ratio: dict) -> dict:
    if not ratio["n"]:
        return _cell("no paired seeds", num=False, empty=True)
    text = f"{fmt(ratio['mean'])} [{fmt(ratio['ci_low'])}, {fmt(ratio['ci_high'])}]"
    # n: the paired seeds behind the ratio, shown beside it (it can be fewer than the seeds behind a mean).
    return _cell(
        text, mean=ratio["mean"], sd=ratio["sd"], ci_low=ratio["ci_low"], ci_high=ratio["ci_high"], n=ratio["n"]
    )


def _stat_options(comparison: Comparison) -> dict:
    spec = comparison.statistic or {}
    return {
        "method": spec.get("interval", "bootstrap"),
        "resamples": int(spec.get("resamples", stats.DEFAULT_RESAMPLES)),
        "rng_seed": int(spec.get("rng_seed", stats.DEFAULT_RNG_SEED)),
    }


def _x_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
