"""A finding's permalink page: its prose, every figure as recorded, its links and provenance."""

import csv
import io

import pytest

from findings_app.models import Finding, FindingLink, Reference, Review
from results.models import Run

from .factories import make_figure, make_finding, make_link, make_reference

pytestmark = pytest.mark.django_db


@pytest.fixture
def f24():
    finding = make_finding(
        "F24",
        title="Anytime training",
        summary="Unrolled training reaches parity.",
        body="Tested at scale; see F20.\n\n<script>alert(1)</script>",
        review=Review.PENDING,
        status_raw="VALIDATED · verdict PARTIAL",
    )
    make_figure(finding, "B1 ratio vs explicit", "0.971/1.033/0.970 — mean 0.991", "seed 43 exceeds baseline")
    make_figure(finding, "mean ratio", "0.9303", "95% bootstrap CI [0.8979, 0.9492]")
    make_reference(finding, Reference.Kind.EXPERIMENT, "exp13 (B1 seed-43 checkpoint)")
    Run.objects.create(run_id="exp13_seed43", experiment="exp13", seed=43)  # a stored run, so the link lands
    make_reference(finding, Reference.Kind.EXPERIMENT, "damage sweep (results/scale/damage_sweep.json)")
    make_reference(finding, Reference.Kind.HYPOTHESIS, "H6")
    make_reference(finding, Reference.Kind.CONFIG_HASH, "e1c1efdd…")
    return finding


def test_a_finding_has_a_permalink_by_its_code(client, f24):
    response = client.get("/findings/F24/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Anytime training" in html and "Unrolled training reaches parity." in html
    assert '<a href="/findings/F24/"><code>/findings/F24/</code></a>' in html


def test_a_code_in_the_wrong_case_redirects_permanently_to_the_permalink(client, f24):
    response = client.get("/findings/f24/")
    assert response.status_code == 301 and response["Location"] == "/findings/F24/"


@pytest.mark.parametrize("path", ["/findings/F99/", "/findings/not-a-code/", "/findings/F1x/"])
def test_an_unknown_finding_is_a_404(client, f24, path):
    assert client.get(path).status_code == 404


def test_the_body_is_rendered_from_markdown_and_sanitised(client, f24):
    html = client.get("/findings/F24/").content.decode()
    assert '<a class="finding-ref" href="/findings/F20/"' in html
    assert "alert(1)" not in html


def test_every_figure_is_shown_exactly_as_recorded_with_an_anchor(client, f24):
    html = client.get("/findings/F24/").content.decode()
    assert '<tr id="fig-b1-ratio-vs-explicit">' in html
    assert "<code>0.971/1.033/0.970 — mean 0.991</code>" in html
    assert "[0.8979, 0.9492]" in html  # the parsed interval beside the recorded value


def test_experiments_link_to_benchmark_runs_and_to_the_filtered_timeline(client, f24):
    html = client.get("/findings/F24/").content.decode()
    assert 'href="/benchmarks/runs/?experiment=exp13"' in html
    assert "recorded as “exp13 (B1 seed-43 checkpoint)”" in html
    assert 'href="/findings/?experiment=exp13"' in html


def test_an_experiment_with_no_stored_run_is_named_without_a_link_to_an_empty_page(client, f24):
    make_reference(Finding.objects.get(code="F24"), Reference.Kind.EXPERIMENT, "exp99")
    html = client.get("/findings/F24/").content.decode()
    assert "/benchmarks/runs/?experiment=exp99" not in html
    assert '<code>exp99</code> <span class="muted">(no result rows of it are stored in this portal)</span>' in html


def test_provenance_without_a_code_is_shown_as_recorded_without_a_link(client, f24):
    html = client.get("/findings/F24/").content.decode()
    assert "<code>damage sweep (results/scale/damage_sweep.json)</code>" in html
    assert "experiment=damage" not in html
    assert "<code>e1c1efdd…</code>" in html and "truncated in the record" in html


def test_the_reviewer_status_is_shown(client, f24):
    html = client.get("/findings/F24/").content.decode()
    assert "Reviewer sign-off pending" in html and "VALIDATED · verdict PARTIAL" in html


def test_a_corrected_finding_warns_and_links_to_its_correction(client, f24):
    f44 = make_finding("F44", title="The correction")
    make_link(f24, f44, FindingLink.Kind.CORRECTED_BY)
    make_link(f44, f24, FindingLink.Kind.CORRECTS)
    html = client.get("/findings/F24/").content.decode()
    assert 'Corrected by <a href="/findings/F44/">F44: The correction</a>' in html
    assert "Stated on other findings" not in html  # the mirror link is already stated here


def test_a_link_stated_only_on_the_other_finding_is_still_shown(client, f24):
    f18 = make_finding("F18", title="Three seeds")
    make_link(f18, f24, FindingLink.Kind.SUPERSEDES)
    html = client.get("/findings/F24/").content.decode()
    assert "F18 records that it supersedes this finding" in html
    assert "supersedes this finding" in html.split("Stated on other findings")[1]


def test_neighbouring_findings_are_linked(client, f24):
    make_finding("F23")
    make_finding("F25")
    html = client.get("/findings/F24/").content.decode()
    assert 'rel="prev" href="/findings/F23/"' in html and 'rel="next" href="/findings/F25/"' in html


def test_figures_download_as_csv(client, f24):
    response = client.get("/findings/F24/figures.csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Disposition"] == 'attachment; filename="F24-figures.csv"'
    assert rows[1]["value"] == "0.9303" and rows[1]["interval_low"] == "0.8979"


def test_the_whole_record_renders_every_page(client, record):
    for entry in record["findings"]:
        response = client.get(f"/findings/{entry['code']}/")
        assert response.status_code == 200, entry["code"]
