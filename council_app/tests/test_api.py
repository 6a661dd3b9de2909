"""GET /api/council/ and /api/council/questions/: read by anyone, written by no one."""

import pytest

from council_app.models import FairBaseline, SampleQuestion

pytestmark = pytest.mark.django_db


def test_summary_has_headline_baselines_and_per_seed_accuracies(client, council):
    body = client.get("/api/council/").json()
    head = body["headline"]
    assert head["council"]["accuracy"] == 0.6194
    assert head["baseline"]["accuracy"] == 0.5361
    assert (head["baseline"]["council_wins"], head["baseline"]["council_losses"], head["baseline"]["z"]) == (
        38,
        8,
        4.42,
    )
    assert head["self_consistency_k5"]["accuracy"] == 0.6361
    assert head["capacity_matched_7b"]["accuracy"] == 0.8139
    assert head["designated_single"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert len(body["baselines"]) == 6
    majority = next(r for r in body["per_seed"] if r["key"] == "majority")
    assert majority["values"] == {"45": 0.5833, "46": 0.525, "47": 0.65}
    assert {r["domain"] for r in body["per_domain"]} == {"math", "general"}
    assert [a["seed"] for a in body["anchored_confirmation"]] == [45, 46, 47]
    assert body["router"]["math"] == "Qwen/Qwen2.5-Math-1.5B-Instruct"
    assert any(not c["holds"] for c in body["checks"])  # the record's seed-47 margin quote is reported


def test_questions_filter_by_seed_and_domain(client, council):
    body = client.get("/api/council/questions/?seed=46").json()
    assert body["count"] == 40
    first = body["results"][0]
    assert first["seed"] == 46 and first["index"] == 0
    assert set(first["players"]) == {p["name"] for p in council["players"]}
    assert set(first["rules"]) == {"equilibrium", "cross_exam", "leave_one_out", "self_preference"}
    assert client.get("/api/council/questions/?seed=46&domain=general").json()["count"] == 0
    assert client.get("/api/council/questions/").json()["count"] == 120


@pytest.mark.parametrize(("query", "param"), [("seed=44", "seed"), ("seed=4x", "seed"), ("domain=history", "domain")])
def test_bad_question_filters_answer_400_in_the_error_shape(client, council, query, param):
    response = client.get(f"/api/council/questions/?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error" and error["message"]


@pytest.mark.parametrize("persona", ["client", "member_client", "staff_client", "admin_client"])
def test_nobody_can_write_through_the_api(request, council, persona):
    http = request.getfixturevalue(persona)
    before = (FairBaseline.objects.count(), SampleQuestion.objects.count())
    for url in ["/api/council/", "/api/council/questions/"]:
        for method in ["post", "put", "patch", "delete"]:
            response = getattr(http, method)(url, {"accuracy": 1.0}, content_type="application/json")
            assert response.status_code in (401, 403, 405), (method, url)
            assert "error" in response.json()
    assert (FairBaseline.objects.count(), SampleQuestion.objects.count()) == before
    assert FairBaseline.objects.get(key="council_system").accuracy == 0.6194


def test_the_schema_documents_both_endpoints(client, db):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/council/" in schema and "/api/council/questions/" in schema
