"""Every interval says what it is: a range of three seeds is not a CI, mean ± SD stays mean ± SD, a figure that is
the same in every seed carries none, and a comparison of two arms at chance is inconclusive."""

import pytest

from benchmarks_app.models import Comparison
from benchmarks_app.tables import build_table
from results import stats

pytestmark = pytest.mark.django_db


def test_a_bootstrap_over_three_seeds_is_labelled_the_range_it_is():
    values = [0.94, 0.95, 0.90]
    assert stats.bootstrap_ci(values) == pytest.approx((min(values), max(values)))
    assert stats.interval_label(3) == "range of 3 seeds"
    assert stats.interval_label(6) == "95% bootstrap CI"
    assert stats.interval_label(1) == ""


def test_no_table_heads_a_three_seed_range_as_a_95_percent_ci(client, seeded):
    for comparison in Comparison.objects.all():
        table = build_table(comparison, use_cache=False)
        heads = " ".join(table["columns"]) + " ".join(row["cells"][0]["text"] for row in table["rows"])
        assert "95% CI" not in heads, comparison.slug
    assert "[range of 3 seeds]" in " ".join(build_table(Comparison.objects.get(slug="f24-budget-sweep"))["columns"])


def test_a_figure_equal_in_every_seed_has_no_spread(client, seeded):
    table = build_table(Comparison.objects.get(slug="exp31-adaptive-depth"), use_cache=False)
    explicit = next(row for row in table["rows"] if row["id"] == "explicit_fixed")
    assert explicit["cells"][2]["text"] == "12.0000 (every seed)"


def test_the_normal_interval_reproduces_f45s_printed_bounds():
    ratios = [0.663 / 0.682, 0.650 / 0.675, 0.651 / 0.693]
    low, high = stats.normal_interval(ratios)
    assert (round(low, 3), round(high, 3)) == (0.939, 0.977)


def test_a_finding_figure_recorded_as_mean_plus_minus_sd_is_shown_so(client):
    from findings_app.tests.factories import make_figure, make_finding

    finding = make_finding("F18")
    make_figure(finding, "A1 explicit BLiMP", "0.7133±0.0294 (0.746/0.689/0.705)", "")
    make_figure(finding, "mean ratio", "0.9303", "95% bootstrap CI [0.8979, 0.9492]")
    html = client.get("/findings/F18/").content.decode()
    assert "0.7133 ± 0.0294" in html and "0.713300" not in html and "[0.6839" not in html
    assert "95% bootstrap CI [0.8979, 0.9492]" in html


def test_a_badge_that_differs_from_the_recorded_status_says_why(client):
    from findings_app.models import Status
    from findings_app.tests.factories import make_finding

    make_finding("F18", status=Status.MISSED, status_raw="VALIDATED (formal H1 miss) · SIGNED-OFF")
    html = client.get("/findings/F18/").content.decode()
    assert ">Missed · measurement validated</span>" in html
    assert "the record&#x27;s status: VALIDATED (formal H1 miss) · SIGNED-OFF" in html
