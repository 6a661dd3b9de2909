"""The API reference (/api/, the OpenAPI schema behind /api/docs/, docs/API.md) states the depth the server uses."""

import json
import re
from pathlib import Path

import pytest
from django.conf import settings

from eqlm.limits import DEPTH_CAP_MAX, DEPTH_MAX, DEPTH_MIN

pytestmark = pytest.mark.django_db


def served_depths(client, model_id: str = "eqlm-demo") -> tuple[int, int]:
    models = client.get("/v1/models").json()["data"]
    eqlm = next(m for m in models if m["id"] == model_id)["eqlm"]
    return eqlm["default_depth"], eqlm["max_depth"]


def test_the_schema_states_the_default_models_default_depth_and_the_depth_range(client):
    default, _ = served_depths(client)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    depth = schema["components"]["schemas"]["CompletionRequest"]["properties"]["depth"]
    assert f"({default} for eqlm-demo" in depth["description"]
    assert (depth["minimum"], depth["maximum"]) == (DEPTH_MIN, DEPTH_CAP_MAX)
    assert f"({DEPTH_MAX} unless its manifest declares another, at most {DEPTH_CAP_MAX}" in depth["description"]


def test_the_api_reference_page_states_the_default_depth_the_server_uses(client):
    default, _ = served_depths(client)
    page = client.get("/api/").content.decode()
    assert f"({default} for eqlm-demo" in page
    assert not re.search(rf"\((?!{default}\b)\d+ for eqlm-demo", page)


def test_docs_api_md_states_the_default_depth_and_caps_the_server_uses(client):
    default, cap = served_depths(client)
    text = (Path(settings.BASE_DIR) / "docs" / "API.md").read_text()
    assert f"`eqlm-demo`: {default};" in text
    assert f"a model's cap is {DEPTH_MAX} unless its export declares another, at most {DEPTH_CAP_MAX}" in text
    assert f"takes 1–{cap}" in text


def test_a_request_without_depth_runs_the_documented_default(client):
    default, _ = served_depths(client)
    body = {"model": "eqlm-demo", "prompt": "In the beginning", "max_tokens": 1, "temperature": 0}
    eqlm = client.post("/v1/completions", body, content_type="application/json").json()["eqlm"]
    assert eqlm["iterations_per_token"] == [default]


def test_the_schemas_solver_start_and_halt_choices_are_the_served_models_controls(client):
    models = client.get("/v1/models").json()["data"]
    controls = next(m for m in models if m["id"] == "eqlm-demo")["eqlm"]["controls"]
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    request = schema["CompletionRequest"]["properties"]
    assert schema["EqlmSolverEnum"]["enum"] == controls["solvers"]
    assert request["solver"]["default"] == controls["solvers"][0]
    assert request["halt"]["default"] == controls["halts"][0]
    for start in controls["starts"]:
        assert f'"{start}"' in request["start"]["description"]


def test_the_schema_states_every_council_default_that_v1_models_lists(client):
    models = client.get("/v1/models").json()["data"]
    defaults = next(m for m in models if m["id"] == "eqlm-council")["eqlm"]["kinetic_defaults"]
    kinetic = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]["Kinetic"]
    for name, value in defaults.items():
        field = kinetic["properties"][name]
        stated = field.get("default") == value or f"default: {json.dumps(value)} with memory" in field["description"]
        assert stated, (name, value, field)
