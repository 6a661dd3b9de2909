"""The programme's statistic conventions as pure functions over numbers (no Django imports).

Conventions (from the programme's own analysis scripts, see ../shared/anchor-results/README.md):
- "±" is the sample standard deviation (ddof = 1) over seeds.
- A ratio is the mean of per-seed ratios, paired by seed (treatment seed s / baseline seed s).
- The 95% interval is a percentile bootstrap over seeds (seeded RNG, 10,000 resamples by default);
  with three seeds it collapses to the min–max of the per-seed ratios. A Student-t interval is the
  alternative.
- One rounding rule everywhere: `round_figure` (round half away from zero, 4 decimals by default).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_RNG_SEED = 0
DEFAULT_LEVEL = 0.95
DISPLAY_DECIMALS = 4
METHODS = ("bootstrap", "t")


def round_figure(value: float | None, decimals: int = DISPLAY_DECIMALS) -> float | None:
    """The one rounding rule: round half away from zero to `decimals` places (None and non-finite stay None)."""
    if value is None or not math.isfinite(value):
        return None
    try:
        quantum = Decimal(1).scaleb(-decimals)
        return float(Decimal(repr(float(value))).quantize(quantum, rounding=ROUND_HALF_UP))
    except InvalidOperation:
        return None


def format_figure(value: float | None, decimals: int = DISPLAY_DECIMALS) -> str:
    """`round_figure` as text with trailing zeros kept ("0.9300"); an en dash for no value."""
    rounded = round_figure(value, decimals)
    return "–" if rounded is None else f"{rounded:.{decimals}f}"


def decimals_of(text: str) -> int:
    """How many decimal places a published figure was written with ("0.971" -> 3)."""
    text = str(text).strip()
    return len(text.split(".", 1)[1]) if "." in text else 0


def decimals_of_value(value: float) -> int:
    """Decimal places a figure stored as a number was written with (0.4833 -> 4, 4.42 -> 2, 1.0 -> 0)."""
    text = repr(float(value))
    if "e" in text or "." not in text:
        return 0
    return len(text.split(".", 1)[1].rstrip("0"))


def agrees(printed: float | None, derived: float | None, places: int | None = None) -> bool:
    """The one rule for "agrees with a printed figure", as the pages state it: the derived value is within half a
    unit of the printed figure's last digit (plus a float tolerance). `places` defaults to the decimals the figure
    was written with; two missing values agree, one missing value does not."""
    if printed is None or derived is None:
        return printed is None and derived is None
    if places is None:
        places = decimals_of_value(printed)
    return abs(printed - derived) <= 0.5 * 10**-places + 1e-9


def agrees_with_published(recomputed: float | None, published: str | float) -> bool:
    """`agrees` for a published figure given as text: its precision is the decimals it was printed with."""
    if recomputed is None:
        return False
    text = str(published)
    return agrees(float(text), recomputed, decimals_of(text))


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean; None for no values."""
    items = [float(v) for v in values]
    return sum(items) / len(items) if items else None


def sample_sd(values: Iterable[float]) -> float | None:
    """Sample standard deviation (ddof = 1), the programme's "±"; None when fewer than two values."""
    items = [float(v) for v in values]
    n = len(items)
    if n < 2:
        return None
    m = sum(items) / n
    return math.sqrt(sum((v - m) ** 2 for v in items) / (n - 1))


@dataclass
class Pairing:
    """Per-seed ratios for seeds present on both sides, and the seeds missing on either side."""

    ratios: dict[int, float]
    missing_in_treatment: list[int] = field(default_factory=list)
    missing_in_baseline: list[int] = field(default_factory=list)
    zero_baseline: list[int] = field(default_factory=list)


def paired_ratios(treatment: Mapping[int, float], baseline: Mapping[int, float]) -> Pairing:
    """Pair by seed: ratio t[s] / b[s]; a seed on only one side is reported, never dropped silently."""
    ratios: dict[int, float] = {}
    zero: list[int] = []
    for seed in sorted(set(treatment) & set(baseline)):
        if baseline[seed] == 0:
            zero.append(seed)
            continue
        ratios[seed] = treatment[seed] / baseline[seed]
    return Pairing(
        ratios=ratios,
        missing_in_treatment=sorted(set(baseline) - set(treatment)),
        missing_in_baseline=sorted(set(treatment) - set(baseline)),
        zero_baseline=zero,
    )


def bootstrap_ci(
    values: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    rng_seed: int = DEFAULT_RNG_SEED,
    level: float = DEFAULT_LEVEL,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean over `values` (resampling seeds with replacement).

    With one value the interval is that value; with none it is (None, None). With three values and
    a 95% level it equals the min–max of the values (each extreme resample has probability 1/27 > 2.5%).
    """
    n = len(values)
    if n == 0:
        return None, None
    if n == 1:
        return float(values[0]), float(values[0])
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(rng_seed)
    idx = rng.integers(0, n, size=(resamples, n))
    means = data[idx].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    # Clamp float noise so a collapsed interval reads exactly as the min/max of the data.
    return float(max(low, data.min())), float(min(high, data.max()))


def t_interval(values: Sequence[float], *, level: float = DEFAULT_LEVEL) -> tuple[float | None, float | None]:
    """Student-t interval of the mean (df = n - 1); with fewer than two values it has no width information."""
    n = len(values)
    if n == 0:
        return None, None
    if n == 1:
        return float(values[0]), float(values[0])
    from scipy import stats as scipy_stats

    m = sum(values) / n
    half = float(scipy_stats.t.ppf(0.5 + level / 2.0, n - 1)) * sample_sd(values) / math.sqrt(n)
    return m - half, m + half


def normal_interval(values: Sequence[float], *, level: float = DEFAULT_LEVEL) -> tuple[float | None, float | None]:
    """Mean ± z·SD/√n (normal approximation); how some of the record's printed intervals were made."""
    n = len(values)
    if n < 2:
        return (float(values[0]), float(values[0])) if n else (None, None)
    from statistics import NormalDist

    m = sum(values) / n
    half = NormalDist().inv_cdf(0.5 + level / 2.0) * sample_sd(values) / math.sqrt(n)
    return m - half, m + half


def interval(values: Sequence[float], method: str = "bootstrap", **options) -> tuple[float | None, float | None]:
    """Dispatch to `bootstrap_ci` or `t_interval` by name."""
    if method == "bootstrap":
        return bootstrap_ci(values, **options)
    if method == "t":
        return t_interval(values, level=options.get("level", DEFAULT_LEVEL))
    raise ValueError(f"unknown interval method {method!r}; use one of {', '.join(METHODS)}")


def interval_label(n: int, method: str = "bootstrap", level: float = DEFAULT_LEVEL) -> str:
    """What an interval over `n` seeds is, in a column head's words: '' when there is none.

    With three seeds or fewer a 95% percentile bootstrap is exactly the min–max of the values, so it is called
    what it is, a range; only with more seeds is it a bootstrap confidence interval.

    >>> interval_label(3), interval_label(5), interval_label(1), interval_label(4, "t")
    ('range of 3 seeds', '95% bootstrap CI', '', '95% t interval')
    """
    if n <= 1:
        return ""
    pct = f"{level * 100:g}%"
    if method == "t":
        return f"{pct} t interval"
    if n <= 3 and level >= 0.9:
        return f"range of {n} seeds"
    return f"{pct} bootstrap CI"


def interval_heading(ns) -> str:
    """One column head for intervals over several rows' seed counts ('range of 3 seeds' when all are three)."""
    labels = {interval_label(n) for n in ns if n > 1}
    if len(labels) == 1:
        return labels.pop()
    return "interval (see the note)" if labels else "no interval"


def is_deterministic(values: Sequence[float]) -> bool:
    """Every seed gave the same value (a count such as FLOPs): a figure with no interval to show."""
    return len(values) > 0 and max(values) == min(values)


def describe_interval(method: str, n: int, level: float = DEFAULT_LEVEL, resamples: int = DEFAULT_RESAMPLES) -> str:
    """The sentence a table prints under itself to say which interval it shows."""
    pct = f"{level * 100:g}%"
    if method == "t":
        return f"{pct} Student-t interval over {n} seed{'s' if n != 1 else ''} (df = {max(n - 1, 0)})."
    text = f"{pct} percentile bootstrap over seeds ({resamples:,} resamples, seeded RNG)."
    if n == 3:
        text += (
            " With three seeds the bootstrap interval is the min–max of the per-seed ratios, so it is shown as the"
            " range of 3 seeds."
        )
    elif n == 1:
        text += " With one seed there is no interval: it is that seed's value."
    return text


@dataclass
class Summary:
    """Mean, sample SD and count of a set of per-seed values."""

    mean: float | None
    sd: float | None
    n: int
    per_seed: dict[int, float]

    def as_dict(self) -> dict:
        data = asdict(self)
        data["per_seed"] = {str(k): v for k, v in self.per_seed.items()}
        return data


def summarize(per_seed: Mapping[int, float]) -> Summary:
    values = [per_seed[s] for s in sorted(per_seed)]
    return Summary(mean=mean(values), sd=sample_sd(values), n=len(values), per_seed=dict(sorted(per_seed.items())))


def compare_per_seed(
    treatment: Mapping[int, float],
    baseline: Mapping[int, float],
    *,
    method: str = "bootstrap",
    resamples: int = DEFAULT_RESAMPLES,
    rng_seed: int = DEFAULT_RNG_SEED,
    level: float = DEFAULT_LEVEL,
) -> dict:
    """The whole comparison: both sides summarised, the paired ratio with its interval, and unpaired seeds."""
    pairing = paired_ratios(treatment, baseline)
    ratio_values = [pairing.ratios[s] for s in sorted(pairing.ratios)]
    if method == "bootstrap":
        low, high = bootstrap_ci(ratio_values, resamples=resamples, rng_seed=rng_seed, level=level)
    else:
        low, high = interval(ratio_values, method, level=level)
    return {
        "treatment": summarize(treatment).as_dict(),
        "baseline": summarize(baseline).as_dict(),
        "ratio": {
            "mean": mean(ratio_values),
            "sd": sample_sd(ratio_values),
            "n": len(ratio_values),
            "ci_low": low,
            "ci_high": high,
            "level": level,
            "per_seed": {str(s): r for s, r in sorted(pairing.ratios.items())},
            "method": method,
            "resamples": resamples if method == "bootstrap" else None,
            "description": describe_interval(method, len(ratio_values), level, resamples),
        },
        "unpaired": {
            "missing_in_treatment": pairing.missing_in_treatment,
            "missing_in_baseline": pairing.missing_in_baseline,
            "zero_baseline": pairing.zero_baseline,
        },
    }
