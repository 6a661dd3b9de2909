"""/v1 addresses every servable model by id: its state, its own default depth and its own depth cap (the manifest's
max_depth: 64 unless it declares up to 128), which also caps tol."""

import json
import shutil

import pytest

from models_app import serving

pytestmark = pytest.mark.django_db

PROMPT = "In the beginning"


@pytest.fixture(scope="module")
def exports(tiny_onnx_export):
    return {
        "default": tiny_onnx_export(0),
        "five": tiny_onnx_export(1, default_depth=5),
        "deep": tiny_onnx_export(2, default_depth=12, max_depth=128),
    }


@pytest.fixture
def models(serve_models, tmp_path, exports):
    """eqlm-demo (default depth 8), tiny-five (default depth 5) and tiny-deep (default depth 12, max_depth 128),
    each with its own weights, under a fresh MODELS_DIR."""
    shutil.copytree(exports["default"], tmp_path / "eqlm-demo" / "onnx")
    shutil.copytree(exports["five"], tmp_path / "tiny-five" / "onnx")
    shutil.copytree(exports["deep"], tmp_path / "tiny-deep" / "onnx")
    return serve_models(tmp_path)


def complete(client, **body):
    response = client.post("/v1/completions", json.dumps({"prompt": PROMPT, "max_tokens": 4, **body}),
                           content_type="application/json")  # fmt: skip
    return response.status_code, response.json()


def test_the_list_names_every_model_with_its_depths_and_state(client, models):
    serving.resolve("tiny-five").runtime()
    data = client.get("/v1/models").json()["data"]
    assert [m["id"] for m in data][:3] == ["eqlm-demo", "tiny-deep", "tiny-five"]  # served models, then the council
    five = data[2]
    assert five["object"] == "model" and five["created"] > 0
    eqlm = {k: five["eqlm"][k] for k in ("name", "default", "default_depth", "max_depth", "state")}
    assert eqlm == {"name": "tiny-five", "default": False, "default_depth": 5, "max_depth": 64, "state": "loaded"}
    assert data[0]["eqlm"]["default"] is True and data[0]["eqlm"]["state"] == "not loaded"
    assert client.get("/v1/models/tiny-five").json()["id"] == "tiny-five"


def test_each_model_answers_under_its_own_id_with_its_own_weights(client, models):
    _, default = complete(client, model="eqlm-demo", temperature=0, depth=4)
    _, five = complete(client, model="tiny-five", temperature=0, depth=4)
    assert default["model"] == "eqlm-demo" and five["model"] == "tiny-five"
    assert default["choices"][0]["text"] != five["choices"][0]["text"]


def test_without_tol_the_depth_is_fixed_at_the_models_default_depth(client, models):
    _, five = complete(client, model="tiny-five", temperature=0)
    assert five["eqlm"]["mode"] == "fixed" and five["eqlm"]["depth_requested"] == 5
    assert five["eqlm"]["iterations_per_token"] == [5, 5, 5, 5]
    _, default = complete(client, model="eqlm-demo", temperature=0)
    assert default["eqlm"]["iterations_per_token"] == [8, 8, 8, 8]


def test_tol_alone_halts_adaptively_with_a_cap_of_64(client, models):
    status, body = complete(client, model="eqlm-demo", temperature=0, tol=1e-9)  # never met: every token hits the cap
    assert status == 200 and body["eqlm"]["mode"] == "adaptive"
    assert body["eqlm"]["iterations_per_token"] == [64, 64, 64, 64]
    _, capped = complete(client, model="eqlm-demo", temperature=0, tol=1e-9, depth=20)
    assert capped["eqlm"]["iterations_per_token"] == [20, 20, 20, 20]


@pytest.mark.parametrize(("depth", "status"), [(1, 200), (64, 200), (0, 400), (65, 400)])
def test_depth_is_1_to_64(client, models, depth, status):
    code, body = complete(client, model="tiny-five", temperature=0, depth=depth, max_tokens=1)
    assert code == status
    if status == 400:
        assert body["error"]["param"] == "depth"
    else:
        assert body["eqlm"]["iterations_per_token"] == [depth]


def test_a_model_whose_manifest_allows_128_runs_depth_128_and_lists_its_depths(client, models):
    code, body = complete(client, model="tiny-deep", temperature=0, depth=128, max_tokens=1)
    assert code == 200 and body["eqlm"]["iterations_per_token"] == [128]
    code, body = complete(client, model="tiny-deep", temperature=0, depth=129, max_tokens=1)
    assert code == 400 and body["error"]["param"] == "depth"
    deep = next(m for m in client.get("/v1/models").json()["data"] if m["id"] == "tiny-deep")
    assert (deep["eqlm"]["default_depth"], deep["eqlm"]["max_depth"]) == (12, 128)


def test_the_default_depth_and_tols_cap_are_the_models_own(client, models):
    _, fixed = complete(client, model="tiny-deep", temperature=0, max_tokens=2)
    assert fixed["eqlm"]["depth_requested"] == 12 and fixed["eqlm"]["iterations_per_token"] == [12, 12]
    _, adaptive = complete(client, model="tiny-deep", temperature=0, tol=1e-9, max_tokens=2)  # never met
    assert adaptive["eqlm"]["iterations_per_token"] == [128, 128]


def test_a_depth_past_a_models_own_cap_is_a_bad_request_stating_its_range(client, models):
    code, body = complete(client, model="tiny-five", temperature=0, depth=100)
    assert code == 400 and body["error"]["param"] == "depth" and body["error"]["code"] == "depth_out_of_range"
    assert "'tiny-five' takes depth 1–64" in body["error"]["message"]
    code, body = complete(client, model="tiny-five@depth=100")
    assert code == 400 and body["error"]["param"] == "model" and "1–64" in body["error"]["message"]
    assert client.get("/v1/models/tiny-five@depth=100").status_code == 400
    assert client.get("/v1/models/tiny-deep@depth=100").status_code == 200
    assert complete(client, model="tiny-deep@depth=100", temperature=0, max_tokens=1)[0] == 200


def test_a_manifest_declaring_a_cap_past_128_is_not_served_and_says_why(client, models):
    manifest = json.loads((models / "tiny-five" / "onnx" / "manifest.json").read_text())
    (models / "tiny-five" / "onnx" / "manifest.json").write_text(json.dumps({**manifest, "max_depth": 256}))
    status, body = complete(client, model="tiny-five")
    assert status == 503 and "max_depth" in body["error"]["message"]


def test_an_unknown_model_is_a_404_naming_the_available_ones(client, models):
    status, body = complete(client, model="gpt-4")
    assert status == 404 and body["error"]["code"] == "model_not_found" and body["error"]["param"] == "model"
    assert "eqlm-demo, tiny-deep, tiny-five" in body["error"]["message"]
    assert client.get("/v1/models/gpt-4").status_code == 404


def test_the_404_for_an_unknown_model_lists_every_model_a_request_may_name_the_council_too(client, models):
    _, body = complete(client, model="gpt-4")
    listed = body["error"]["message"].split("Available: ")[1].rstrip(".").split(", ")
    assert listed == [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert listed[-1] == "eqlm-council"
    detail = client.get("/v1/models/gpt-4").json()
    assert detail["error"]["message"] == body["error"]["message"]


def test_a_model_whose_files_fail_answers_503_and_the_others_still_serve(client, models):
    (models / "tiny-five" / "onnx" / "step.onnx").write_bytes(b"broken")
    manifest = json.loads((models / "tiny-five" / "onnx" / "manifest.json").read_text())
    manifest.pop("graph_sha256")
    (models / "tiny-five" / "onnx" / "manifest.json").write_text(json.dumps(manifest))
    status, body = complete(client, model="tiny-five")
    assert status == 503 and body["error"]["code"] == "model_unavailable"
    listed = {m["id"]: m.get("eqlm") for m in client.get("/v1/models").json()["data"]}
    assert listed["tiny-five"]["state"] == "failed" and listed["tiny-five"]["error"]
    assert complete(client, model="eqlm-demo", temperature=0)[0] == 200


def test_the_schema_documents_each_models_serving_state(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    listing = schema["paths"]["/v1/models"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    eqlm = listing["properties"]["data"]["items"]["properties"]["eqlm"]["properties"]
    assert eqlm["state"]["enum"] == ["loaded", "not loaded", "failed"] and "max_depth" in eqlm


def test_registry_evaluations_take_depths_up_to_64():
    from models_app.services import RegistryError, parse_depths

    assert parse_depths("1,12,64") == [1, 12, 64]
    with pytest.raises(RegistryError, match="1..64"):
        parse_depths("8,65")
