"""What the plots say they show follows from their data: an interval only with several seeds, a plot beside every
table on /benchmarks/ with the ratio against its published value."""

import json

import pytest

from benchmarks_app.models import Comparison
from benchmarks_app.tables import build_table
from benchmarks_app.tables.plots import caption

pytestmark = pytest.mark.django_db


def test_a_single_evaluation_curve_claims_no_interval_and_several_seeds_do():
    one = {"type": "curve", "x_key": "depth", "metric": "bits/byte", "series": {"a": {"sd": [None, 0, None]}}}
    assert "one evaluation per point, so no interval" in caption(one) and "±" not in caption(one)
    seeds = {"type": "curve", "x_key": "budget", "metric": "BLiMP", "series": {"a": {"sd": [0.01, 0.02]}}}
    assert "mean ± SD over seeds" in caption(seeds)


def test_a_ratio_from_one_seed_has_no_interval():
    assert "no interval" in caption({"type": "ratio", "per_seed": {"42": 0.9}})
    # Three seeds: the bootstrap's 95% interval is their range, and the caption calls it that.
    assert "range of 3 seeds" in caption({"type": "ratio", "per_seed": {"42": 0.9, "43": 0.95, "44": 0.97}})
    assert "95% bootstrap CI" in caption({"type": "ratio", "per_seed": {str(s): 0.9 + s / 1000 for s in range(5)}})


def test_the_overview_plot_puts_f45s_recomputed_interval_beside_the_published_one(seeded):
    table = build_table(Comparison.objects.get(slug="f45-equal-compute"), use_cache=False)
    plot = table["overview_plot"]
    assert plot["type"] == "forest" and plot["reference"] == 1.0
    recomputed, published = plot["rows"]
    assert recomputed["label"] == "recomputed (3 seeds)"
    assert [round(recomputed[k], 4) for k in ("value", "low", "high")] == [0.9582, 0.9394, 0.9721]
    assert (published["value"], published["low"], published["high"]) == (0.9582, 0.939, 0.977)
    # The printed interval is mean ± 1.96·SD/√3, which the rows reproduce (not the bootstrap's three-seed range).
    assert published["status"] == "✓ matches"
    assert "(range of 3 seeds) beside the published figure" in table["overview_caption"]


def test_every_table_with_rows_has_its_plots_on_its_own_page_and_none_on_the_overview(client, seeded):
    overview = client.get("/benchmarks/").content.decode()
    assert "vendor/plotly.min.js" not in overview
    for comparison in Comparison.objects.all():
        table = build_table(comparison)
        html = client.get(f"/benchmarks/{comparison.slug}/").content.decode()
        if table["empty"]:
            assert f'id="plot-{comparison.slug}"' not in html
            continue
        assert "vendor/plotly.min.js" in html and '<script type="module" src="/static/js/benchmarks.js">' in html
        # The overview plot where it differs from the table's own plot, else that plot once.
        own = f'data-plot="plot-data-{comparison.slug}"' in html
        assert own or 'data-plot="bench-plot-data"' in html, comparison.slug
        data_id = f"plot-data-{comparison.slug}" if own else "bench-plot-data"
        block = html.split(f'id="{data_id}" type="application/json">')[1]
        data = json.loads(block.split("</script>")[0])
        assert data["type"] in {"forest", "dots", "curve", "depth", "ladder"}
    # Each plot sits above its table, which stays.
    html = client.get("/benchmarks/f45-equal-compute/").content.decode()
    assert html.index('id="plot-f45-equal-compute"') < html.index('id="table-f45-equal-compute"')


def test_the_detail_plot_caption_comes_from_the_data(client, seeded):
    html = client.get("/benchmarks/f45-equal-compute/").content.decode()
    assert "Per-seed ratios (3 seeds) with their mean and its interval (range of 3 seeds)" in html
    assert "Per-seed points with the mean and its interval." not in html
