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
