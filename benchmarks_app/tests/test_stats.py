"""The statistics module: the programme's conventions, pure functions without the database."""

import math

import pytest

from results import stats


def test_sample_sd_uses_ddof_one():
    assert stats.sample_sd([0.746, 0.689, 0.705]) == pytest.approx(0.0293996, abs=1e-6)


def test_sd_of_one_value_is_none_and_mean_of_nothing_is_none():
    assert stats.sample_sd([0.5]) is None
    assert stats.mean([]) is None


def test_ratio_is_the_mean_of_per_seed_ratios_not_the_ratio_of_means():
    result = stats.compare_per_seed({1: 1.0, 2: 3.0}, {1: 2.0, 2: 4.0})
    assert result["ratio"]["mean"] == pytest.approx((0.5 + 0.75) / 2)
    assert result["ratio"]["mean"] != pytest.approx(2.0 / 3.0)


def test_bootstrap_with_three_seeds_is_the_min_max_of_the_per_seed_ratios():
    values = [0.9707, 1.0326, 0.9697]
    low, high = stats.bootstrap_ci(values)
    assert (low, high) == (min(values), max(values))


def test_bootstrap_is_reproducible_with_a_seeded_rng_and_configurable_resamples():
    values = [0.1, 0.4, 0.35, 0.8, 0.55]
    assert stats.bootstrap_ci(values, resamples=500, rng_seed=7) == stats.bootstrap_ci(
        values, resamples=500, rng_seed=7
    )
    low, high = stats.bootstrap_ci(values, resamples=2000)
    assert min(values) < low < high < max(values)


def test_bootstrap_of_one_seed_is_that_value_and_of_none_is_empty():
    assert stats.bootstrap_ci([0.9]) == (0.9, 0.9)
    assert stats.bootstrap_ci([]) == (None, None)


def test_t_interval_is_wider_than_the_three_seed_bootstrap():
    values = [0.9721, 0.9630, 0.9394]
    t_low, t_high = stats.t_interval(values)
    b_low, b_high = stats.bootstrap_ci(values)
    assert t_low < b_low and t_high > b_high
    assert (t_low + t_high) / 2 == pytest.approx(stats.mean(values))


def test_a_seed_missing_on_one_side_is_reported_not_silently_dropped():
    result = stats.compare_per_seed({42: 0.6, 43: 0.7}, {42: 0.65, 44: 0.7})
    assert result["ratio"]["n"] == 1
    assert result["unpaired"] == {"missing_in_treatment": [44], "missing_in_baseline": [43], "zero_baseline": []}


def test_a_zero_baseline_is_reported_instead_of_dividing_by_zero():
    result = stats.compare_per_seed({1: 0.5}, {1: 0.0})
    assert result["ratio"]["n"] == 0 and result["unpaired"]["zero_baseline"] == [1]


def test_rounding_is_half_away_from_zero_everywhere():
    assert stats.round_figure(0.00005, 4) == 0.0001
    assert stats.round_figure(0.6845, 3) == 0.685
    assert stats.round_figure(-0.00005, 4) == -0.0001
    assert stats.format_figure(0.93) == "0.9300"
    assert stats.format_figure(None) == "–"
    assert stats.round_figure(math.nan) is None


def test_interval_description_says_the_three_seed_bootstrap_is_min_max():
    assert "min–max" in stats.describe_interval("bootstrap", 3)
    assert "Student-t" in stats.describe_interval("t", 3)


def test_unknown_interval_method_is_refused():
    with pytest.raises(ValueError):
        stats.interval([1.0, 2.0], "jackknife")


def test_agreement_uses_the_published_precision():
    assert stats.agrees_with_published(0.78679, "0.787")
    assert not stats.agrees_with_published(0.9697, "0.971")


def test_the_statistics_module_imports_no_django():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(stats.__file__).read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names += [alias.name for alias in node.names]
        if isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    assert not any(name.startswith("django") for name in names)
