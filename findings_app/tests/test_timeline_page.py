"""The /findings/ timeline: every finding in order, filters that narrow it, fragments and downloads."""

import csv
import datetime
import io
import re

import pytest

from findings_app.models import Reference, Review, Status, Theme
from results.models import Run

from .factories import make_figure, make_finding, make_reference

pytestmark = pytest.mark.django_db


def codes_on(response) -> list[str]:
    return re.findall(r'data-code="([^"]+)"', response.content.decode())


@pytest.fixture
def three_findings():
    early = make_finding("F1", date=datetime.date(2026, 8, 21), theme=Theme.CONVERGENCE, title="Magnets converge")
    middle = make_finding(
        "F24", date=datetime.date(2026, 8, 27), theme=Theme.EQLM_PARADIGM, status=Status.PARTIAL, review=Review.PENDING
    )
    late = make_finding("F41", date=datetime.date(2026, 8, 29), theme=Theme.COUNCIL, body="A council of **players**.")
    make_reference(middle, Reference.Kind.EXPERIMENT, "exp13 (B1 seed-43 checkpoint)")
    Run.objects.create(run_id="exp13_seed43", experiment="exp13", seed=43)  # a stored run, so the link lands
    make_reference(middle, Reference.Kind.HYPOTHESIS, "H6")
    make_reference(late, Reference.Kind.EXPERIMENT, "exp13_seed44")
    make_reference(late, Reference.Kind.EXPERIMENT, "exp14_local")
    make_figure(late, "deployed system vs designated single model", "0.6194 vs 0.5361")
    return early, middle, late


def test_timeline_lists_every_finding_in_record_order(client, three_findings):
    response = client.get("/findings/")
    assert response.status_code == 200
    assert codes_on(response) == ["F1", "F24", "F41"]


def test_timeline_groups_findings_under_their_date(client, three_findings):
    html = client.get("/findings/").content.decode()
    assert '<time datetime="2026-08-27">27 August 2026</time>' in html


def test_timeline_puts_corrections_and_addenda_right_after_their_finding(client):
    for code in ["F11", "F10-correction", "F10"]:
        make_finding(code)
    assert codes_on(client.get("/findings/")) == ["F10", "F10-correction", "F11"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("theme=council", ["F41"]),
        ("status=PARTIAL", ["F24"]),
        ("review=pending", ["F24"]),
        ("experiment=exp13", ["F24", "F41"]),
        ("experiment=exp14", ["F41"]),
        ("experiment=exp14_local", ["F41"]),
        ("experiment=exp1", []),
        ("hypothesis=h6", ["F24"]),
        ("q=magnets", ["F1"]),
        ("q=f41", ["F41"]),
        ("q=0.5361", ["F41"]),
        ("q=players council", ["F41"]),
        ("theme=council&status=PARTIAL", []),
    ],
)
def test_each_filter_narrows_the_timeline(client, three_findings, query, expected):
    assert codes_on(client.get(f"/findings/?{query}")) == expected


def test_an_invalid_filter_is_reported_and_the_rest_still_apply(client, three_findings):
    response = client.get("/findings/?theme=astrology&status=PARTIAL")
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert codes_on(response) == ["F24"]


def test_the_active_theme_chip_is_marked_current(client, three_findings):
    html = client.get("/findings/?theme=council").content.decode()
    assert re.search(r'href="/findings/\?theme=council" class="chip" data-theme="council" aria-current="true"', html)


def test_a_fragment_request_returns_only_the_results(client, three_findings):
    response = client.get("/findings/?theme=council&fragment=1")
    html = response.content.decode()
    assert "<html" not in html and 'data-timeline-count="1"' in html
    assert codes_on(response) == ["F41"]


def test_no_match_says_so_and_offers_the_whole_timeline(client, three_findings):
    html = client.get("/findings/?q=nothing-like-this").content.decode()
    assert "No finding matches these filters" in html


def test_experiment_codes_link_to_the_benchmark_runs_page(client, three_findings):
    html = client.get("/findings/").content.decode()
    assert 'href="/benchmarks/runs/?experiment=exp13"' in html


def test_csv_download_holds_the_filtered_rows(client, three_findings):
    response = client.get("/findings/?theme=eqlm-paradigm&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["code"] for row in rows] == ["F24"]
    assert rows[0]["experiments"] == "exp13 (B1 seed-43 checkpoint)"


def test_the_page_offers_csv_and_json_for_the_current_filters(client, three_findings):
    html = client.get("/findings/?theme=council").content.decode()
    assert 'href="/findings/?theme=council&amp;format=csv"' in html
    assert 'href="/api/findings/?theme=council"' in html


def test_the_timeline_renders_with_an_empty_record(client):
    response = client.get("/findings/")
    assert response.status_code == 200
    assert codes_on(response) == []


def test_the_timeline_loads_its_own_script_and_no_inline_script(client, three_findings):
    html = client.get("/findings/").content.decode()
    assert '<script type="module" src="/static/js/findings.js"></script>' in html  # a module is deferred
    assert re.search(r"<script>(?!\s*</script>)", html) is None


def test_the_whole_record_renders_on_one_page_with_few_queries(client, record, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        response = client.get("/findings/")
    assert len(codes_on(response)) == len(record["findings"])


def test_seed_runs_of_one_experiment_show_as_one_experiment(client):
    finding = make_finding("F18")
    for recorded in ["exp05_full_v4", "exp05_full_v4_s43", "exp05_full_v4_s44"]:
        make_reference(finding, Reference.Kind.EXPERIMENT, recorded)
    Run.objects.create(run_id="exp05_full_v4", experiment="exp05_full_v4", seed=42)
    html = client.get("/findings/").content.decode()
    assert html.count('href="/benchmarks/runs/?experiment=exp05_full_v4"') == 1
    assert client.get("/api/findings/").json()["results"][0]["experiments"] == ["exp05_full_v4"]
