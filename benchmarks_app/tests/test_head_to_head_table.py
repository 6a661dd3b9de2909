"""The head-to-head on the portal's models: the programme's claims beside the portal's experiment, from rows."""

import html

import pytest

from benchmarks_app import tables
from benchmarks_app.models import Comparison

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_experiments(seeded):
    from experiments_app.seed import load_fixture

    load_fixture()


def table() -> dict:
    return tables.build_table(Comparison.objects.get(slug="local-head-to-head"), use_cache=False)


def cells(row: dict) -> list[str]:
    return [c["text"] for c in row["cells"]]


def by_id(body: dict) -> dict[str, dict]:
    return {row["id"]: row for row in body["rows"]}


def test_the_programmes_side_is_the_same_test_on_the_programmes_rows(with_experiments):
    rows = by_id(table())
    programme = {key: cells(rows[key])[2:4] for key in ("F24-0", "F44-0", "F45-0", "exp31-0")}
    assert programme["F24-0"] == ["0.9697 [0.9697, 1.0326]", "validated"]  # CI low of exp13 B1 / exp10 A1
    assert programme["F44-0"] == ["0.7258 [0.7230, 0.7258]", "validated"]  # tolerance x 8, seeds 43/44
    assert programme["F45-0"] == ["0.9394 [0.9394, 0.9721]", "formally missed"]  # mean 0.958, CI low 0.939
    assert programme["exp31-0"] == ["0.0150 [0.0030, 0.0150]", "formally missed"]  # seed 43: 0.682 - 0.697
    assert cells(rows["F44-1"])[2] == "not measured by the programme"


def test_the_programmes_published_figures_sit_on_the_rows_with_their_checks(with_experiments):
    rows = by_id(table())
    f24 = {c["label"]: c for c in rows["F24-0"]["published"]}
    assert f24["f24-anytime: mean ratio"]["published"] == "0.991"
    assert f24["f24-anytime: mean ratio"]["status"] == "match"
    assert f24["f24-anytime: CI lower bound"]["status"] == "known_problem"
    f45 = {c["label"]: c for c in rows["F45-0"]["published"]}
    assert f45["f45-equal-compute: mean ratio"]["recomputed_text"] == "0.9582"


def test_the_portals_side_is_the_experiments_own_verdict_with_cost_beside_it(with_experiments):
    from experiments_app import services
    from experiments_app.models import Experiment

    body = table()
    outcome = services.verdict(Experiment.objects.get(slug="head-to-head-demo"))
    rows = by_id(body)
    assert cells(rows["overall"])[6] == outcome.verdict
    for index, part in enumerate(outcome.parts):
        finding = ("F24", "F44", "F45", "exp31")[index]
        leaves = part.parts or [part]
        for leaf_index, leaf in enumerate(leaves):
            shown = cells(rows[f"{finding}-{leaf_index}"])[6]
            # A BLiMP comparison whose arms sit at chance says so, and still quotes the criterion's own word.
            assert shown == leaf.verdict or (shown.startswith("inconclusive") and f"“{leaf.verdict}”" in shown)
    # FLOPs per token and parameters from one formula (eqlm.flops): the explicit stack costs 12 layers + the head
    assert cells(rows["F24-0"])[8] == "82,624 · 80,840"
    assert cells(rows["F45-0"])[8] == "16,080 · 80,840"


def test_the_benchmarks_page_shows_the_head_to_head_beside_the_programmes_tables(client, with_experiments):
    page = html.unescape(client.get("/benchmarks/").content.decode())
    assert "Head-to-head on the portal's models" in page
    # The programme's record first; the portal's own models in their own section after it.
    assert (
        page.index('id="local-head-to-head"')
        > page.index('id="portal-models"')
        > page.index('id="exp31-adaptive-depth"')
    )
    assert (
        "/benchmarks/experiments/head-to-head-demo/" in client.get("/benchmarks/local-head-to-head/").content.decode()
    )


def test_the_portals_figures_follow_from_the_experiments_committed_rows(with_experiments):
    rows = by_id(table())
    local = {key: cells(rows[key])[4:7] for key in ("F24-0", "F44-0", "F44-1", "F45-0", "exp31-0", "exp31-1")}
    at_chance = "inconclusive: both arms at chance on BLiMP (the criterion alone reads “{}”)"
    assert local["F24-0"] == [
        "0.9752 [0.9752, 1.0309]",
        "s42: 0.9752 · s43: 1.0309 · s44: 0.9970",
        at_chance.format("validated"),  # BLiMP at chance on both arms: never "validated"
    ]
    assert local["F44-0"][0] == "1.0396 [0.9685, 1.0396]" and local["F44-0"][2] == at_chance.format("formally missed")
    assert local["F44-1"][0] == "1.2591 [1.1865, 1.3297]" and local["F44-1"][2] == "validated"
    assert local["F45-0"][0] == "1.0065 [1.0065, 1.0149]" and local["F45-0"][2] == at_chance.format("validated")
    assert local["exp31-0"][0] == "0.0066 [0.0036, 0.0066]" and local["exp31-0"][2] == at_chance.format("validated")
    assert local["exp31-1"][0] == "0.0314 [0.0018, 0.0314]" and local["exp31-1"][2] == "formally missed"
    assert cells(rows["overall"])[6] == "formally missed"
    assert cells(rows["F24-0"])[7] == "1,607,168 · 268,000"  # 12 iterations of the d = 64 block; 12 layers at d = 20
