"""The seeded tables reproduce the programme's figures from rows, and mark the published figures that do not."""

import re

import pytest

from benchmarks_app import tables
from benchmarks_app.models import Comparison
from benchmarks_app.seed import seed
from results import stats
from results.models import ResultRow

pytestmark = pytest.mark.django_db


def ratio(slug: str) -> dict:
    return tables.build_table(Comparison.objects.get(slug=slug), use_cache=False)["result"]["ratio"]


def figures(r: dict) -> tuple:
    return tuple(stats.round_figure(r[k]) for k in ("mean", "ci_low", "ci_high"))


def test_f18_ratio_and_interval_follow_from_the_rows(seeded):
    assert figures(ratio("f18-h1-three-seed")) == (0.9303, 0.8979, 0.9492)


def test_f20_ratio_and_interval_follow_from_the_rows(seeded):
    assert figures(ratio("f20-h1-121m")) == (0.7868, 0.7850, 0.7881)


def test_f24_b1_ratio_and_interval_follow_from_the_rows(seeded):
    assert figures(ratio("f24-anytime")) == (0.9910, 0.9697, 1.0326)


def test_f45_ratio_interval_and_sd_follow_from_the_rows(seeded):
    r = ratio("f45-equal-compute")
    assert figures(r) == (0.9582, 0.9394, 0.9721)
    assert stats.round_figure(r["sd"]) == 0.0169


def test_seeding_twice_creates_nothing_new(seeded):
    count = ResultRow.objects.count()
    assert "0 new result rows" in seed() and ResultRow.objects.count() == count


def test_known_non_reproducible_figures_are_marked_with_the_recomputed_value(seeded):
    table = tables.build_table(Comparison.objects.get(slug="f24-anytime"), use_cache=False)
    by_label = {c["label"]: c for c in table["checks"]}
    assert by_label["B1 mean"]["status"] == "known_problem" and by_label["B1 mean"]["recomputed_text"] == "0.6770"
    assert by_label["B1 SD"]["recomputed_text"] == "0.0180"
    assert by_label["CI lower bound"]["status"] == "known_problem"
    assert stats.round_figure(by_label["CI lower bound"]["recomputed"], 3) == 0.970
    assert by_label["B1 final loss range"]["recomputed_text"].startswith("2.76")
    assert by_label["mean ratio"]["status"] == "match"


def test_f44_equal_flops_figure_is_marked_as_a_two_seed_value_near_two_iterations(seeded):
    table = tables.build_table(Comparison.objects.get(slug="f44-compute-audit"), use_cache=False)
    by_label = {c["label"]: c for c in table["checks"]}
    assert by_label["compute ratio per iteration"]["status"] == "match"
    assert by_label["iterations at equal FLOPs"]["status"] == "match"
    assert by_label["mean depth of that point"]["status"] == "known_problem"
    assert by_label["mean depth of that point"]["recomputed_text"] == "2.0485"


def test_the_table_pages_show_published_vs_recomputed_with_marks(client, seeded):
    page = {slug: client.get(f"/benchmarks/{slug}/").content.decode()
            for slug in ("f18-h1-three-seed", "f20-h1-121m", "f24-anytime", "f45-equal-compute")}  # fmt: skip
    assert "0.9303 [0.8979, 0.9492]" in page["f18-h1-three-seed"]
    assert "0.7868 [0.7850, 0.7881]" in page["f20-h1-121m"]
    assert "0.9910 [0.9697, 1.0326]" in page["f24-anytime"]
    assert "0.9582 [0.9394, 0.9721]" in page["f45-equal-compute"]
    html = "".join(page.values())
    assert "known problem" in html and "✓ matches" in html
    # B1's published 0.6805 is shown with the value the rows give.
    b1 = re.search(r"B1 mean</span>: published <strong>0.6805</strong>; recomputed <strong>([0-9.]+)</strong>", html)
    assert b1 and b1.group(1) == "0.6770"
    assert 'href="/findings/F24/"' in page["f24-anytime"]
    assert "min–max of the per-seed ratios" in html


def test_the_overview_has_one_row_per_table_with_its_verdict_and_link(client, seeded):
    html = client.get("/benchmarks/").content.decode()
    for slug in ("f18-h1-three-seed", "f20-h1-121m", "f24-anytime", "f45-equal-compute", "f55-ladder"):
        assert html.count(f'<tr id="{slug}">') == 1 and f'href="/benchmarks/{slug}/"' in html
    assert "all 6 published figures match" in html
    assert 'class="plot' not in html  # the plots live on each table's own page


def test_the_local_anytime_table_says_no_rows_yet_until_rows_exist(client, seeded):
    html = client.get("/benchmarks/local-anytime/").content.decode()
    assert "No rows yet" in html


def test_local_blimp_rows_by_depth_appear_in_the_anytime_table(client, seeded):
    from results.records import ingest_records

    records = [
        {"run": "local/demo", "experiment": "local", "arm": "eqlm-demo", "seed": 0, "metric": "blimp_accuracy",
         "value": v, "n": 100, "condition": {"depth": d}}
        for d, v in ((1, 0.51), (4, 0.55), (8, 0.58))
    ]  # fmt: skip
    assert ingest_records(records, source_name="evaluate_blimp") == 3
    html = client.get("/benchmarks/local-anytime/").content.decode()
    assert "No rows yet" not in html and "0.5500" in html
