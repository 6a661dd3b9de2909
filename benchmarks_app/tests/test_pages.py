"""Benchmark pages: tables, one table with its rows and downloads, runs, compare, and the JSON API."""

import csv
import io

import pytest

pytestmark = pytest.mark.django_db


def test_table_page_shows_plot_data_rows_and_downloads(client, seeded):
    html = client.get("/benchmarks/f45-equal-compute/").content.decode()
    assert 'id="bench-plot-data"' in html and "vendor/plotly.min.js" in html
    assert 'href="/benchmarks/runs/scale/exp32/seed42/"' in html
    assert "/arms/C1/blimp_accuracy" in html
    assert "<script>" not in html


def test_table_csv_and_json_downloads_hold_the_same_numbers(client, seeded):
    text = client.get("/benchmarks/f45-equal-compute/download.csv").content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][0] == "Row" and any("0.9582 [0.9394, 0.9721]" in cell for row in rows for cell in row)
    body = client.get("/benchmarks/f45-equal-compute/download.json").json()
    assert round(body["result"]["ratio"]["mean"], 4) == 0.9582
    rows_csv = client.get("/benchmarks/f45-equal-compute/rows.csv").content.decode()
    assert "scale/exp32/seed44" in rows_csv and "485fdc42" in rows_csv


def test_unknown_table_is_a_404(client, seeded):
    assert client.get("/benchmarks/no-such-table/").status_code == 404
    assert client.get("/api/benchmarks/tables/no-such-table/").status_code == 404


def test_run_browser_filters_by_experiment_arm_seed_and_metric(client, seeded):
    html = client.get("/benchmarks/runs/", {"experiment": "exp10_5090", "seed": "43", "arm": "A3"}).content.decode()
    assert "exp10_5090/exp10_seed43" in html and "exp10_5090/exp10_seed42" not in html
    html = client.get("/benchmarks/runs/", {"metric": "mean_depth"}).content.decode()
    assert "scale/exp31/exp31_seed44" in html and "exp05_full_v4_s43" not in html
    assert client.get("/benchmarks/runs/", {"seed": "abc"}).status_code == 200


def test_run_page_shows_config_provenance_and_loss_curve(client, seeded):
    html = client.get("/benchmarks/runs/exp10_5090/exp10_seed42/").content.decode()
    assert "2a92f4f1b1dbfc70" in html and 'id="bench-curves-data"' in html
    assert "ExplicitLM-110M" in html and "RTX 5090" in html
    assert client.get("/benchmarks/runs/nope/").status_code == 404


def test_compare_page_pairs_any_two_arms(client, seeded):
    html = client.get(
        "/benchmarks/compare/", {"treatment": "exp13:B1", "baseline": "exp10_5090:A1", "metric": "blimp_accuracy"}
    ).content.decode()
    assert "0.9910" in html and "[0.9697, 1.0326]" in html
    html = client.get("/benchmarks/compare/", {"treatment": "exp13", "baseline": "x:y"}).content.decode()
    assert 'role="alert"' in html


def test_compare_api_validates_its_parameters(client, seeded):
    url = "/api/benchmarks/compare"
    bad = client.get(url, {"treatment": "exp32", "baseline": "exp10_5090:A1", "metric": "blimp_accuracy"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "treatment"
    none = client.get(url, {"treatment": "exp32:Z9", "baseline": "exp10_5090:A1", "metric": "blimp_accuracy"})
    assert none.status_code == 404 and none.json()["error"]["code"] == "no_rows"
    t = client.get(url, {"treatment": "exp32:C1", "baseline": "exp10_5090:A1", "metric": "blimp_accuracy",
                         "interval": "t"}).json()  # fmt: skip
    assert t["ratio"]["method"] == "t" and t["ratio"]["ci_low"] < 0.9394


def test_tables_api_lists_every_declared_table_with_check_counts(client, seeded):
    body = client.get("/api/benchmarks/tables/").json()
    slugs = {t["slug"] for t in body["tables"]}
    assert {"f18-h1-three-seed", "f20-h1-121m", "f24-anytime", "f45-equal-compute", "f24-budget-sweep",
            "exp31-adaptive-depth", "f44-compute-audit", "f55-ladder", "local-anytime"} <= slugs  # fmt: skip
    f24 = next(t for t in body["tables"] if t["slug"] == "f24-anytime")
    assert f24["checks"]["known_problem"] >= 3


def test_results_api_filters_and_downloads_csv(client, seeded):
    body = client.get("/api/results/", {"experiment": "exp32", "metric": "blimp_accuracy"}).json()
    assert body["count"] == 3 and {r["seed"] for r in body["results"]} == {42, 43, 44}
    assert body["results"][0]["source_pointer"] == "/arms/C1/blimp_accuracy"
    response = client.get("/api/results/", {"experiment": "exp32", "metric": "blimp_accuracy", "format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    assert len(list(csv.reader(io.StringIO(response.content.decode())))) == 4
    assert client.get("/api/results/", {"seed": "x"}).status_code == 400


def test_rows_behind_a_table_are_paginated_with_counts_and_whole_in_the_csv(client, seeded, monkeypatch):
    from benchmarks_app import views

    monkeypatch.setattr(views, "ROWS_PER_PAGE", 30)
    rows_csv = list(csv.reader(io.StringIO(client.get("/benchmarks/f55-ladder/rows.csv").content.decode())))
    total = len(rows_csv) - 1
    assert total > 60  # more than two pages of rows
    first = client.get("/benchmarks/f55-ladder/").content.decode()
    pages = -(-total // 30)
    assert f"Showing rows 1–30 of {total} (page 1 of {pages})." in first
    assert f'href="?rows={pages}#rows"' in first and 'href="/benchmarks/f55-ladder/rows.csv"' in first
    last = client.get("/benchmarks/f55-ladder/", {"rows": pages}).content.decode()
    assert f"Showing rows {30 * (pages - 1) + 1}–{total} of {total}" in last
    shown = sum(html.count('<tr><td><a href="/benchmarks/runs/') for html in (first, last))
    assert shown == 30 + total - 30 * (pages - 1)
    # Every row of the CSV appears on exactly one page.
    runs_on_pages = []
    for number in range(1, pages + 1):
        html = client.get("/benchmarks/f55-ladder/", {"rows": number}).content.decode()
        runs_on_pages += [chunk.split("/")[0] for chunk in html.split('<tr><td><a href="/benchmarks/runs/')[1:]]
    assert len(runs_on_pages) == total


def test_a_small_table_says_it_shows_all_its_rows(client, seeded):
    html = client.get("/benchmarks/f45-equal-compute/").content.decode()
    assert "All 6 rows." in html and "?rows=" not in html


def test_the_table_api_says_how_many_rows_behind_it_it_shows_and_links_the_rest(client, seeded, monkeypatch):
    from benchmarks_app import api

    monkeypatch.setattr(api, "PROVENANCE_PREVIEW", 25)
    body = client.get("/api/benchmarks/tables/f55-ladder/").json()
    total = len(list(csv.reader(io.StringIO(client.get("/benchmarks/f55-ladder/rows.csv").content.decode())))) - 1
    assert len(body["provenance"]) == 25
    assert body["provenance_count"] == {
        "shown": 25,
        "total": total,
        "text": f"showing 25 of {total} rows",
        "all_rows_csv": "/benchmarks/f55-ladder/rows.csv",
    }
