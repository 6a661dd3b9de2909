"""A comparison whose arms both sit at chance is inconclusive, never validated: on the experiment's page, in the
experiments list, in its JSON and on the head-to-head table, by one rule (experiments_app.judgement)."""

import html

import pytest
from django.test import Client

from results.records import ingest_records

from .factories import tiny_experiment

pytestmark = pytest.mark.django_db

BLIMP_RATIO = {
    "op": "ratio",
    "label": "BLiMP parity",
    "of": {"arm": "fast", "metric": "blimp_accuracy", "where": {"depth": 4, "start": "zero"}},
    "over": {"arm": "base", "metric": "blimp_accuracy", "where": {"depth": 4, "start": "zero"}},
    "stat": "ci_low",
    "cmp": ">=",
    "value": 0.95,
}


def blimp_rows(experiment, accuracy: dict[str, float], pairs: int = 3350) -> None:
    records = [
        {
            "run": f"experiment:{experiment.slug}:{arm}:seed{seed}",
            "experiment": experiment.slug,
            "arm": arm,
            "seed": seed,
            "metric": "blimp_accuracy",
            "value": value + 0.001 * seed,
            "n": pairs,
            "condition": {"depth": 4, "start": "zero", "seed": seed},
        }
        for arm, value in accuracy.items()
        for seed in (1, 2)
    ]
    ingest_records(records, source_name=f"test:{experiment.slug}:blimp")


def shown(slug: str) -> tuple[str, str, str]:
    """(the JSON's verdict, the page, the list page)."""
    body = Client().get(f"/api/experiments/{slug}/").json()
    page = html.unescape(Client().get(f"/benchmarks/experiments/{slug}/").content.decode())
    listing = html.unescape(Client().get("/benchmarks/experiments/").content.decode())
    return body["verdict"], page, listing


def test_two_arms_at_chance_on_blimp_read_inconclusive_wherever_the_verdict_is_shown():
    experiment = tiny_experiment(criterion=BLIMP_RATIO)
    blimp_rows(experiment, {"base": 0.500, "fast": 0.505})  # the ratio clears 0.95, but both arms are at chance

    verdict, page, listing = shown("tiny")

    assert verdict == "inconclusive"
    assert '<span class="badge badge-warn">inconclusive</span>' in page.split('id="h-verdict"')[1]
    assert "the criterion alone reads “validated”" in page
    assert ">validated<" not in page
    assert "inconclusive" in listing


def test_the_same_comparison_above_chance_keeps_the_criterions_verdict():
    experiment = tiny_experiment(criterion=BLIMP_RATIO)
    blimp_rows(experiment, {"base": 0.70, "fast": 0.71})

    verdict, page, _ = shown("tiny")

    assert verdict == "validated"
    assert "inconclusive" not in page.split('<ul class="verdict">')[1]


def test_an_inconclusive_part_decides_nothing_but_a_missed_one_still_misses_the_whole():
    from experiments_app import criterion as criteria

    assert criteria.combine("all", ["validated", "inconclusive"]) == "inconclusive"
    assert criteria.combine("all", ["missed", "inconclusive"]) == "missed"
    assert criteria.combine("any", ["inconclusive", "validated"]) == "validated"
    assert criteria.combine("any", ["inconclusive", "missed"]) == "inconclusive"


def test_the_head_to_head_experiments_page_and_its_table_give_each_measure_the_same_verdict():
    from benchmarks_app import tables
    from benchmarks_app.models import Comparison
    from benchmarks_app.seed import seed
    from experiments_app.seed import load_fixture

    seed()
    load_fixture()
    table = tables.build_table(Comparison.objects.get(slug="local-head-to-head"), use_cache=False)
    on_table = {row["id"]: row["cells"][6]["status"] for row in table["rows"]}
    outcome = Client().get("/api/experiments/head-to-head-demo/").json()["outcome"]

    # F24 and F45 compare BLiMP at chance on both arms: the page's verdict is the table's, never "validated".
    assert outcome["parts"][0]["status"] == on_table["F24-0"] == "inconclusive"
    assert outcome["parts"][2]["status"] == on_table["F45-0"] == "inconclusive"
    assert outcome["parts"][1]["parts"][1]["status"] == on_table["F44-1"] == "validated"  # bits/byte decides F44
    assert outcome["status"] == on_table["overall"] == "missed"
    page = html.unescape(Client().get("/benchmarks/experiments/head-to-head-demo/").content.decode())
    verdict_tree = page.split('<ul class="verdict">')[1].split("</section>")[0]
    # F24, F44's BLiMP ratio, F45 and exp31's BLiMP difference: each inconclusive, as on the table.
    assert verdict_tree.count('<span class="badge badge-warn">inconclusive</span>') == 4
    assert on_table["exp31-0"] == "inconclusive" and on_table["exp31-all"] == "missed"
