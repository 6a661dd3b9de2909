"""GET /api/findings/ (the timeline's filters, paginated) and GET /api/findings/<code>/."""

import pytest

from findings_app.models import Finding, Reference
from results.models import Run

from .factories import make_figure, make_finding, make_reference

pytestmark = pytest.mark.django_db


def test_the_list_counts_the_whole_record_and_paginates(client, record):
    body = client.get("/api/findings/").json()
    assert body["count"] == len(record["findings"]) == 57
    assert len(body["results"]) == 50 and body["next"].endswith("/api/findings/?page=2")
    assert len(client.get("/api/findings/?page=2").json()["results"]) == 7


def test_the_list_is_in_timeline_order_with_links_to_page_and_api(client, record):
    first = client.get("/api/findings/").json()["results"][0]
    assert first["code"] == "F1"
    assert first["url"] == "/findings/F1/" and first["api_url"] == "/api/findings/F1/"
    assert first["experiments"] == ["exp01"]


@pytest.mark.parametrize(
    "query", ["theme=council", "status=NULL", "review=verdict", "experiment=exp05", "hypothesis=H1", "q=auction"]
)
def test_the_api_filters_exactly_like_the_page(client, record, query):
    api_codes = [row["code"] for row in client.get(f"/api/findings/?{query}").json()["results"]]
    page_html = client.get(f"/findings/?{query}").content.decode()
    page_codes = [row.split('"')[0] for row in page_html.split('data-code="')[1:]]
    assert api_codes == page_codes and api_codes


def test_an_invalid_filter_is_a_400_in_the_api_error_shape(client, record):
    response = client.get("/api/findings/?status=MAYBE")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "status" and error["type"] == "invalid_request_error"


def test_the_detail_has_body_figures_links_and_provenance(client):
    finding = make_finding("F45", body="See F44.")
    make_figure(finding, "mean ratio", "0.9582", "SD 0.0169; 95% interval [0.939, 0.977]")
    make_reference(finding, Reference.Kind.EXPERIMENT, "exp32")
    Run.objects.create(run_id="exp32_seed42", experiment="exp32", seed=42)  # a stored run: runs_url is offered
    body = client.get("/api/findings/F45/").json()
    assert body["code"] == "F45" and body["body"] == "See F44."
    assert '<a class="finding-ref" href="/findings/F44/"' in body["body_html"]
    assert body["figures"] == [
        {
            "name": "mean ratio",
            "value": "0.9582",
            "context": "SD 0.0169; 95% interval [0.939, 0.977]",
            "number": 0.9582,
            "interval": {"low": 0.939, "high": 0.977, "kind": "context"},
            "qualifier": "",
            "unit": "",
            "url": "/findings/F45/#fig-mean-ratio",
        }
    ]
    assert body["references"] == [
        {
            "kind": "experiment",
            "code": "exp32",
            "note": "",
            "recorded_as": "exp32",
            "runs_url": "/benchmarks/runs/?experiment=exp32",
        }
    ]


def test_the_detail_accepts_a_code_in_any_case(client):
    make_finding("F10-correction")
    assert client.get("/api/findings/f10-CORRECTION/").json()["code"] == "F10-correction"


@pytest.mark.parametrize("code", ["F99", "nonsense"])
def test_an_unknown_finding_is_a_404_in_the_api_error_shape(client, code):
    response = client.get(f"/api/findings/{code}/")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_the_api_is_read_only(client, staff_client):
    make_finding("F1")
    assert client.post("/api/findings/", {"code": "F2"}).status_code in (403, 405)
    assert staff_client.delete("/api/findings/F1/").status_code == 405
    assert Finding.objects.count() == 1


def test_the_openapi_schema_describes_both_endpoints_and_their_filters(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/findings/" in schema and "/api/findings/{code}/" in schema
    assert "experiment" in schema and "hypothesis" in schema
