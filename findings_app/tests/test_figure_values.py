"""Reading recorded figure strings as numbers and intervals (pure, no database)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from findings_app.figure_values import parse_value


def test_a_plain_number_parses_without_an_interval():
    parsed = parse_value("0.9948")
    assert parsed.number == 0.9948
    assert parsed.low is None and parsed.high is None and parsed.interval_kind == ""


def test_a_bracketed_interval_is_read_as_low_and_high():
    parsed = parse_value("1.93 [1.90,1.96]")
    assert (parsed.number, parsed.low, parsed.high, parsed.interval_kind) == (1.93, 1.90, 1.96, "bracket")


def test_scientific_notation_inside_an_interval():
    parsed = parse_value("8.48e-6 [4.78e-6,1.26e-5]")
    assert (parsed.number, parsed.low, parsed.high) == (8.48e-6, 4.78e-6, 1.26e-5)


def test_plus_minus_becomes_an_interval_and_a_trailing_aside_is_ignored():
    parsed = parse_value("0.7133±0.0294 (0.746/0.689/0.705)")
    assert (parsed.number, parsed.low, parsed.high, parsed.interval_kind) == (0.7133, 0.6839, 0.7427, "plus_minus")


def test_plus_minus_with_a_unit():
    parsed = parse_value("0.032±0.000 MB")
    assert (parsed.number, parsed.low, parsed.high, parsed.unit) == (0.032, 0.032, 0.032, "")


@pytest.mark.parametrize(
    ("value", "context", "interval"),
    [
        ("0.9582", "SD 0.0169; 95% interval [0.939, 0.977]", (0.939, 0.977)),
        ("0.7868", "bootstrap 95% CI [0.785, 0.788]", (0.785, 0.788)),
        ("0.0", "95% CI [0.0,0.0]", (0.0, 0.0)),
    ],
)
def test_an_interval_stated_in_the_context_is_used_when_the_value_has_none(value, context, interval):
    parsed = parse_value(value, context)
    assert (parsed.low, parsed.high) == interval
    assert parsed.interval_kind == "context"


def test_a_context_interval_that_does_not_contain_the_value_is_ignored():
    parsed = parse_value("0.5", "95% CI [0.8, 0.9]")
    assert parsed.number == 0.5 and parsed.low is None


def test_a_bound_keeps_its_qualifier_and_takes_no_context_interval():
    parsed = parse_value("<0.09", "CI [0.0, 0.1]")
    assert (parsed.number, parsed.qualifier, parsed.low) == (0.09, "<", None)


@pytest.mark.parametrize(
    ("value", "number", "qualifier", "unit"),
    [
        ("≈0.018", 0.018, "≈", ""),
        ("~3.3M", 3.3, "~", "M"),
        ("−2.2%", -2.2, "", "%"),
        ("22,703", 22703.0, "", ""),
        ("lr=0.1", 0.1, "", ""),
        ("0.0168 MB/layer", 0.0168, "", "MB/layer"),
        ("1655x", 1655.0, "", "x"),
        ("~1.24 nats/token", 1.24, "~", "nats/token"),
        ("+0.0597", 0.0597, "", ""),
    ],
)
def test_qualifiers_units_separators_and_the_unicode_minus(value, number, qualifier, unit):
    parsed = parse_value(value)
    assert (parsed.number, parsed.qualifier, parsed.unit) == (number, qualifier, unit)


@pytest.mark.parametrize(
    "value",
    [
        "0.971/1.033/0.970 — mean 0.991",
        "45.8M against 123.8M",
        "0.930 [0.898, 0.949] → 0.787 [0.785, 0.788]",
        "10 md5-distinct",
        "360 fresh",
        "twelve",
        "1.543, 1.560, 1.308",
        "",
    ],
)
def test_anything_more_than_one_plain_number_stays_unparsed(value):
    assert parse_value(value).number is None


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False))
def test_any_written_float_reads_back_as_itself(number):
    assert parse_value(repr(number)).number == number
