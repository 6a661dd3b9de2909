"""Classes of hostile input, tried on every endpoint that takes that kind of input (issue 17).

The targets come from the OpenAPI schema (every operation) and the URLconf (every route, pages and forms
included), so a new endpoint is covered without a new test. tests/hostile.py draws the inputs; `make
reliability` draws many more of them (scripts/reliability.py, section `input classes`).
"""

import json
import os
import time

import pytest
from django.test import Client

from lab_app.models import LabRun

from .fuzzing import client_for, portal_hints, schema_operations
from .hostile import attack_operation, attack_route, route_paths, row_counts, tried_by_kind, unfinished_jobs
from .report import record

pytestmark = pytest.mark.django_db
EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "1"))  # per class and target; make reliability: many more


@pytest.fixture
def hostile_settings(generated_request_settings):
    generated_request_settings.LAB_JOB_ANON_RATE = "100000/minute"
    return generated_request_settings


# --- every schema operation and every route, by class -------------------------------------------------------


@pytest.mark.slow  # every operation or route, every class: a minute or two on a shared machine
def test_every_schema_operation_refuses_each_class_of_hostile_input(seeded_pages, staff_user, hostile_settings):
    found = schema_operations()
    assert len(found) >= 18
    anonymous, staff = Client(), Client()
    staff.force_login(staff_user)
    hints = portal_hints()
    outcomes = []
    outcomes = [attack_operation(op, client_for(op, anonymous, staff), hints, EXAMPLES) for op in found]
    failures = [failure for outcome in outcomes for failure in outcome.failures]
    tried = tried_by_kind(outcomes)
    record(
        "hostile-operations",
        {
            "operations": len(outcomes),
            "tried": tried,
            "failures": failures,
            "by_operation": [{"target": o.target, "tried": o.tried, "failures": len(o.failures)} for o in outcomes],
        },
    )
    assert failures == []
    assert set(tried) >= {"surrogate", "invalid_utf8", "nul", "huge_number", "deep_nesting", "oversize"}
    assert unfinished_jobs() == []


@pytest.mark.slow  # every operation or route, every class: a minute or two on a shared machine
def test_every_route_refuses_invalid_unicode_in_query_strings_and_form_fields(seeded_pages, staff_user):
    """Urlencoded and multipart forms alike: a multipart field, field name or file name that is not UTF-8 is a 400."""
    paths = route_paths()
    assert len(paths) >= 30 and "/admin/login/" in paths and "/api/lab/solve" in paths
    staff = Client()
    staff.force_login(staff_user)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(staff_user)
    outcomes = [attack_route(path, staff, EXAMPLES, csrf_client=browser) for path in paths]
    failures = [failure for outcome in outcomes for failure in outcome.failures]
    tried = tried_by_kind(outcomes)
    assert tried["multipart_invalid_utf8"] >= len(paths)
    record(
        "hostile-routes",
        {
            "routes": len(outcomes),
            "tried": tried,
            "failures": failures,
            "by_route": [{"target": o.target, "tried": o.tried, "failures": len(o.failures)} for o in outcomes],
        },
    )
    assert failures == []


# --- the examples the adversarial pass found -----------------------------------------------------------------


def test_a_lone_surrogate_in_a_completion_prompt_is_a_fast_400_in_the_error_shape(client):
    client.get("/v1/models")  # the process's first request imports every URLconf: not what is measured
    started = time.monotonic()
    response = client.post(
        "/v1/completions", '{"model": "eqlm-demo", "prompt": "a\\ud800b"}', content_type="application/json"
    )
    assert time.monotonic() - started < 1.0
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_encoding"
    assert "surrogate" in error["message"]


def test_a_surrogate_pair_is_a_valid_character_and_passes(client):
    body = '{"game": {"A": [[1, 0], [0, 1]], "name": "\\ud83d\\ude00"}, "solver": "nash"}'
    response = client.post("/api/lab/solve", body, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["game"]["name"] == "\N{GRINNING FACE}"


def test_an_escaped_backslash_before_u_is_text_not_a_surrogate(client):
    body = '{"game": {"A": [[1, 0], [0, 1]], "name": "\\\\ud800"}, "solver": "nash"}'
    response = client.post("/api/lab/solve", body, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["game"]["name"] == "\\ud800"


def test_a_lab_job_whose_sweep_key_holds_a_surrogate_is_refused_and_nothing_is_stored(client):
    body = '{"game": "rps", "solver": "mmd", "sweep": {"t\\udc00au": [0.1, 0.2]}}'
    before = row_counts()
    response = client.post("/api/lab/jobs/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_encoding"
    assert row_counts() == before


def test_invalid_utf8_in_a_query_string_is_a_400_on_pages_and_in_the_api(client):
    page = client.get("/findings/?q=%ff")
    assert page.status_code == 400 and page["Content-Type"].startswith("text/plain")
    api = client.get("/api/findings/?q=%ed%a0%80")
    assert api.status_code == 400 and api.json()["error"]["param"] == "query"


def test_an_api_body_over_the_limit_is_413_without_being_parsed(client, settings):
    settings.API_MAX_BODY_BYTES = 1000
    response = client.post("/v1/completions", json.dumps({"prompt": "x" * 2000}), content_type="application/json")
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "body_too_large" and error["type"] == "invalid_request_error"


def test_the_lab_has_its_own_smaller_body_limit(client):
    big = {"game": {"A": [[0.123456789] * 50] * 50}, "solver": "nash", "pad": "x" * 300_000}
    response = client.post("/api/lab/solve", json.dumps(big), content_type="application/json")
    assert response.status_code == 413
    assert "262144" in response.json()["error"]["message"]


def test_a_body_nested_thousands_deep_is_a_400_not_a_crash(client):
    response = client.post("/api/lab/solve", "[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "nested_too_deeply"


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/api/lab/nope", "/v1/nope"])
def test_unknown_api_routes_answer_the_error_shape_even_with_debug(client, settings, debug, path):
    settings.DEBUG = debug
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["type"] == "not_found_error"


def test_unknown_pages_keep_the_html_404(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


# --- lab jobs: throttles, work cap, numbers, sweep keys ------------------------------------------------------

JOB = {"game": "biased_rps", "solver": "mmd", "params": {"steps": 50}}


def post_json(client, url, body):
    return client.post(url, body if isinstance(body, str) else json.dumps(body), content_type="application/json")


def test_anonymous_job_submissions_are_throttled_per_client_with_retry_after(client, settings):
    settings.LAB_JOB_ANON_RATE = "2/minute"
    before = LabRun.objects.count()
    assert [post_json(client, "/api/lab/jobs/", JOB).status_code for _ in range(2)] == [201, 201]
    refused = post_json(client, "/api/lab/jobs/", JOB)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert LabRun.objects.count() == before + 2
    other = Client(REMOTE_ADDR="10.0.0.9")  # another client address has its own allowance
    assert post_json(other, "/api/lab/jobs/", JOB).status_code == 201


def test_signed_in_users_are_throttled_per_user_and_staff_are_exempt(member_client, staff_user, settings):
    settings.LAB_JOB_USER_RATE = "1/minute"
    assert post_json(member_client, "/api/lab/jobs/", JOB).status_code == 201
    assert post_json(member_client, "/api/lab/jobs/", JOB).status_code == 429
    staff = Client()
    staff.force_login(staff_user)
    assert [post_json(staff, "/api/lab/jobs/", JOB).status_code for _ in range(3)] == [201, 201, 201]


def test_a_job_asking_for_more_work_than_the_cap_is_refused_before_it_is_stored(client):
    body = {
        "game": {"preset": "random", "m": 50, "n": 50},
        "solver": "mmd",
        "params": {"steps": 200_000},
        "sweep": {"tau": [0.1, 0.2]},
    }
    before = LabRun.objects.count()
    response = post_json(client, "/api/lab/jobs/", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "sweep" and "units of work" in error["message"]
    assert LabRun.objects.count() == before


@pytest.mark.parametrize("url", ["/api/lab/solve", "/api/lab/jobs/"])
@pytest.mark.parametrize("where", ["A", "B"])
def test_a_payoff_too_large_for_a_double_is_a_400_naming_the_matrix(client, url, where):
    huge = "1" + "0" * 400
    matrices = {"A": f"[[{huge}, 0], [0, 1]]", "B": "[[1, 0], [0, 1]]"}
    if where == "B":
        matrices = {"A": "[[1, 0], [0, 1]]", "B": f"[[0, {huge}], [1, 0]]"}
    body = f'{{"game": {{"A": {matrices["A"]}, "B": {matrices["B"]}}}, "solver": "mmd"}}'
    before = row_counts()
    response = post_json(client, url, body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == f"game.{where}" and error["code"] == "invalid_value"
    assert row_counts() == before


def test_a_sweep_over_a_parameter_the_solver_does_not_take_is_refused(client):
    before = LabRun.objects.count()
    response = post_json(client, "/api/lab/jobs/", {"game": "rps", "solver": "gda", "sweep": {"tau": [0.1, 0.2]}})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "sweep.tau" and "not a parameter of gda" in error["message"]
    assert LabRun.objects.count() == before


def test_a_duplicate_model_registration_is_a_409_with_a_documented_type():
    from portal.api import ERROR_TYPES, error_body

    assert error_body("already registered", 409, "checkpoint", "duplicate")["error"]["type"] == "conflict_error"
    assert ERROR_TYPES[409] == "conflict_error"


def test_a_bad_item_of_a_list_field_is_named_by_its_index():
    from rest_framework import serializers

    from portal.api import api_exception_handler

    class Tokens(serializers.Serializer):
        tokens = serializers.ListField(child=serializers.IntegerField())

    serializer = Tokens(data={"tokens": [0, None]})
    assert not serializer.is_valid()
    response = api_exception_handler(serializers.ValidationError(serializer.errors), {})
    assert response.status_code == 400 and response.data["error"]["param"] == "tokens[1]"
