"""The programme's experiment names (exp10, exp40) find the rows stored under longer names (exp10_5090)."""

import pytest

from results.experiment_names import resolve

pytestmark = pytest.mark.django_db


def test_a_programme_name_resolves_to_the_names_its_rows_are_stored_under():
    stored = ["exp10_5090", "exp13", "exp31", "exp31_audit", "exp40_ladder"]
    assert resolve("exp10", stored) == ["exp10_5090"]
    assert resolve("exp40", stored) == ["exp40_ladder"]
    assert resolve("exp31", stored) == ["exp31", "exp31_audit"]
    assert resolve("exp1", stored) == []  # a prefix of a number is not the experiment
    assert resolve("exp01", stored) == []


def test_the_run_browser_lists_exp10s_runs_and_keeps_exp10_selected(client, seeded):
    html = client.get("/benchmarks/runs/?experiment=exp10").content.decode()
    assert "3 runs" in html
    assert '<option value="exp10" selected>' in html
    assert "is stored as <code>exp10_5090</code>" in html


def test_the_results_api_finds_exp40s_rows_stored_as_exp40_ladder(client, seeded):
    body = client.get("/api/results/?experiment=exp40").json()
    assert body["count"] > 0
    assert {row["experiment"] for row in body["results"]} == {"exp40_ladder"}


def test_an_experiment_with_no_stored_rows_gets_no_runs_link_on_its_finding(client, seeded):
    from findings_app.services import import_findings, read_fixture

    import_findings(read_fixture())
    html = client.get("/findings/F1/").content.decode()
    assert "/benchmarks/runs/?experiment=exp01" not in html
    assert "no result rows of it are stored in this portal" in html
    f24 = client.get("/findings/F24/").content.decode()
    assert 'href="/benchmarks/runs/?experiment=exp10"' in f24 and "stored as exp10_5090" in f24


def test_a_finding_links_the_tables_that_recompute_it_and_the_table_links_back(client, seeded):
    from findings_app.services import import_findings, read_fixture

    import_findings(read_fixture())
    assert 'href="/benchmarks/f45-equal-compute/"' in client.get("/findings/F45/").content.decode()
    assert 'href="/findings/F45/"' in client.get("/benchmarks/f45-equal-compute/").content.decode()


def test_a_row_without_a_commit_says_why(client, seeded):
    html = client.get("/benchmarks/f20-h1-121m/").content.decode()
    assert "not recorded in the source file" in html
    assert ">unknown<" not in html
