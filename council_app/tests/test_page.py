"""The /council/ page: numbers from the stored record, tables, notes and downloads."""

import csv
import io
import re

import pytest

from council_app.models import Accuracy, FairBaseline

pytestmark = pytest.mark.django_db


def figure(html: str, name: str) -> str:
    match = re.search(rf'data-figure="{name}">([^<]+)<', html)
    assert match, f"no figure {name!r} on the page"
    return match.group(1).strip()


def test_headline_shows_f41_and_f54_from_the_record(client, council):
    html = client.get("/council/").content.decode()
    assert figure(html, "council-accuracy") == "0.6194"
    assert figure(html, "baseline-accuracy") == "0.5361"
    assert figure(html, "margin-points") == "+8.33"
    assert (figure(html, "f41-wins"), figure(html, "f41-losses"), figure(html, "f41-z")) == ("38", "8", "4.42")
    assert figure(html, "council-generations") == "1.258"
    assert figure(html, "sc5-accuracy") == "0.6361"
    assert figure(html, "big-accuracy") == "0.8139"
    assert (figure(html, "f54-losses"), figure(html, "f54-wins"), figure(html, "f54-z")) == ("84", "14", "-7.07")


def test_changing_a_stored_value_changes_the_page(client, council):
    FairBaseline.objects.filter(key="council_system").update(accuracy=0.7001)
    FairBaseline.objects.filter(key="capacity_matched_7b_greedy").update(council_losses=85)
    html = client.get("/council/").content.decode()
    assert figure(html, "council-accuracy") == "0.7001"
    assert figure(html, "margin-points") == "+16.4"
    assert figure(html, "f54-losses") == "85"
    assert "0.6194" not in re.search(r'id="headline-f41".*?</article>', html, re.S).group(0)


def test_per_seed_rule_accuracies_equal_the_record(client, council):
    html = client.get("/council/").content.decode()
    majority = re.search(r'<tr[^>]*data-row="majority">(.*?)</tr>', html, re.S).group(1)
    oracle = re.search(r'<tr[^>]*data-row="oracle">(.*?)</tr>', html, re.S).group(1)
    cells = lambda row: re.findall(r'<td class="num">([^<]+)</td>', row)  # noqa: E731
    assert cells(majority) == ["0.5833", "0.5250", "0.6500", "0.5861"]
    assert cells(oracle) == ["0.7333", "0.6917", "0.8417", "0.7556"]
    for seed in council["seeds"]:
        for acc in seed["accuracies"]:
            if acc["domain"] == "all" and "rule" in acc:
                assert f"{acc['value']:.4f}" in html


def test_a_seed_table_cell_follows_the_stored_value(client, council):
    Accuracy.objects.filter(seed__seed=46, domain="all", rule__key="majority").update(value=0.9999)
    html = client.get("/council/").content.decode()
    majority = re.search(r'<tr[^>]*data-row="majority">(.*?)</tr>', html, re.S).group(1)
    assert "0.9999" in majority


def test_domain_breakdown_is_shown_per_seed(client, council):
    html = client.get("/council/").content.decode()
    table = re.search(r'<table id="domain-table">.*?</table>', html, re.S).group(0)
    row = re.search(r'data-row="majority">(.*?)</tr>', table, re.S).group(1)
    values = re.findall(r'<td class="num">([^<]+)</td>', row)
    assert values == ["0.7833", "0.7333", "0.8167", "0.7778", "0.3833", "0.3167", "0.4833", "0.3944"]


def test_fair_baselines_table_and_plot_data_are_on_the_page(client, council):
    response = client.get("/council/")
    html = response.content.decode()
    table = re.search(r'<table id="baselines-table">.*?</table>', html, re.S).group(0)
    for text in ["0.5556", "0.6028", "0.6361", "0.8139", "1.258", "66", "43", "-0.64", "2.2"]:
        assert text in table
    assert 'id="council-cost-plot"' in html
    assert 'id="council-cost-data"' in html
    assert "vendor/plotly.min.js" in html
    assert "<script>" not in html  # CSP: no inline code


def test_the_record_inconsistencies_are_shown_not_hidden(client, council):
    html = client.get("/council/").content.decode()
    assert 'data-inconsistency="seed-margin-47"' in html
    assert "+0.0416" in html and "+0.0833" in html
    assert 'data-inconsistency="mmlu"' in html
    assert "does not hold" in html


def test_the_page_says_what_was_not_recorded(client, council):
    html = client.get("/council/").content.decode()
    assert "No answer texts and no per-token influence weights were kept" in html
    assert "40 of 120" in html
    assert "every sampled question is maths" in html


def test_findings_are_linked_by_id(client, council):
    html = client.get("/council/").content.decode()
    for fid in ["F28", "F29", "F33", "F34", "F41", "F42", "F43", "F46", "F54"]:
        assert f'href="/findings/{fid}/"' in html


def test_players_table_sorts_by_a_column(client, council):
    html = client.get("/council/?sort=gsm8k_flexible&dir=desc").content.decode()
    table = re.search(r'<table id="players-table">.*?</table>', html, re.S).group(0)
    order = re.findall(r'<tr><th scope="row">([^<]+)</th>', table)
    assert order == ["Qwen2.5-Math-1.5B-Instruct", "Qwen2.5-1.5B-Instruct", "Qwen2.5-Coder-1.5B-Instruct", "Qwen3-1.7B"]
    assert 'aria-sort="descending"' in table
    ascending = client.get("/council/?sort=gsm8k_flexible&dir=asc").content.decode()
    table = re.search(r'<table id="players-table">.*?</table>', ascending, re.S).group(0)
    assert re.findall(r'<tr><th scope="row">([^<]+)</th>', table)[0] == "Qwen3-1.7B"


def test_an_unknown_sort_column_keeps_the_record_order(client, council):
    response = client.get("/council/?sort=__class__")
    assert response.status_code == 200


@pytest.mark.parametrize("table", ["seeds", "domains", "baselines", "anchored", "players", "questions"])
def test_every_table_downloads_as_csv(client, council, table):
    response = client.get(f"/council/tables/{table}.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows)


def test_seeds_csv_holds_the_recorded_values(client, council):
    rows = list(csv.DictReader(io.StringIO(client.get("/council/tables/seeds.csv").content.decode())))
    majority = next(r for r in rows if r["key"] == "majority")
    assert (majority["seed_45"], majority["seed_46"], majority["seed_47"]) == ("0.5833", "0.525", "0.65")


def test_an_unknown_csv_table_is_404(client, council):
    assert client.get("/council/tables/nothing.csv").status_code == 404


def test_page_without_a_record_says_how_to_load_it(client, db):
    response = client.get("/council/")
    assert response.status_code == 200
    assert "manage.py seed" in response.content.decode()


def test_a_missing_headline_row_is_reported_not_invented(client, council):
    FairBaseline.objects.filter(key="council_system").delete()
    response = client.get("/council/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "The record has no council or single-model baseline row." in html
    assert 'data-figure="council-accuracy"' not in html
    assert client.get("/api/council/").json()["headline"]["council"] is None
