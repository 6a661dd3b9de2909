"""/v1 runs a model at the precision a request asks for: `precision: "int8"` on a model whose export has int8 graphs
(its controls list them) answers from those graphs, in the body or the model id's suffix; an unknown precision, or
int8 on a model without int8 graphs, is a 400 in the API's error shape naming `precision`."""

import json
import shutil

import pytest
from django.template.defaultfilters import floatformat

from eqlm.quantize import add_int8
from eqlm.quantize_measure import measure_and_record

pytestmark = pytest.mark.django_db

PROMPT = "In the beginning"


@pytest.fixture
def served(serve_models, tmp_path, tiny_onnx_dir):
    shutil.copytree(tiny_onnx_dir, tmp_path / "eqlm-demo" / "onnx")
    add_int8(tmp_path / "eqlm-demo" / "onnx")
    measure_and_record(tmp_path / "eqlm-demo" / "onnx")
    shutil.copytree(tiny_onnx_dir, tmp_path / "eqlm-code" / "onnx")  # fp32 graphs only
    return serve_models(tmp_path)


def post(client, **body):
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 4, "temperature": 0, **body}
    response = client.post("/v1/completions", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_int8_answers_from_the_int8_graphs_in_the_body_or_the_suffix(client, served):
    from models_app import serving

    status, body = post(client, precision="int8")
    assert status == 200 and body["eqlm"]["precision"] == "int8", body
    assert body["choices"][0]["text"] and body["usage"]["completion_tokens"] == 4
    assert serving.resolve("eqlm-demo").runtime("int8").model.precision == "int8"
    status, body = post(client, model="eqlm-demo@precision=int8")
    assert status == 200 and body["model"] == "eqlm-demo@precision=int8", body
    status, body = post(client, precision="fp32")
    assert status == 200 and body["eqlm"]["precision"] == "fp32", body
    assert post(client)[1]["eqlm"]["precision"] == "fp32"


def test_the_models_controls_list_the_precisions_its_export_has(client, served):
    listed = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
    assert listed["eqlm-demo"]["eqlm"]["controls"]["precisions"] == ["fp32", "int8"]
    assert listed["eqlm-code"]["eqlm"]["controls"]["precisions"] == ["fp32"]


@pytest.mark.parametrize("precision", ["fp16", "INT8", "int4", 8])
def test_an_unknown_precision_is_a_400_naming_precision(client, served, precision):
    status, body = post(client, precision=precision)
    assert status == 400 and body["error"]["param"] == "precision", body
    assert body["error"]["type"] == "invalid_request_error"


def test_int8_on_a_model_without_int8_graphs_is_a_400_saying_so(client, served):
    status, body = post(client, model="eqlm-code", precision="int8")
    assert status == 400 and body["error"]["param"] == "precision", body
    assert body["error"]["code"] == "unsupported_by_model"
    assert "fp32 graphs only" in body["error"]["message"]
    status, body = post(client, model="eqlm-code@precision=int8")
    assert status == 400 and body["error"]["param"] == "model" and body["error"]["code"] == "invalid_model_suffix"


def test_the_council_refuses_int8(client, served):
    status, body = post(client, model="eqlm-council", precision="int8")
    assert status == 400 and body["error"]["param"] == "precision", body


def test_the_models_page_states_the_measured_int8_difference(client, served):
    manifest = json.loads((served / "eqlm-demo" / "onnx" / "manifest.json").read_text())
    block = manifest["int8"]
    assert block["nats_per_token_max"] >= block["nats_per_token_mean"] >= 0
    page = client.get("/models/eqlm-demo/").content.decode()
    assert "Weights: fp32 and int8" in page
    shown = floatformat(block["nats_per_token_max"], 4)  # as the page rounds it (half up, not Python's f-string)
    assert f"{shown} nats" in page and block["measured_on"] in page
    assert "Weights: fp32 and int8" not in client.get("/models/eqlm-code/").content.decode()
