"""/v1 on an explicit transformer: its depth is its layer count, and every control an equilibrium model takes beyond
that (a tol, a solver but Picard, a start, a warm start, a halting rule) is a 400 naming the field and why, sent in
the body or in the model id's suffix. It cannot be a council member."""

import json
import shutil

import pytest

pytestmark = pytest.mark.django_db

LAYERS = 12
PROMPT = "In the beginning"


@pytest.fixture
def served(serve_models, tmp_path, tiny_onnx_dir, tiny_explicit_onnx_export):
    shutil.copytree(tiny_onnx_dir, tmp_path / "eqlm-demo" / "onnx")
    shutil.copytree(tiny_explicit_onnx_export(LAYERS), tmp_path / "explicit-demo" / "onnx")
    return serve_models(tmp_path)


def post(client, path="/v1/completions", **body):
    body = {"model": "explicit-demo", "prompt": PROMPT, "max_tokens": 2, "temperature": 0, **body}
    response = client.post(path, json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


@pytest.mark.parametrize("depth", [1, LAYERS - 1, LAYERS + 1, 64, 128])
def test_any_other_depth_is_a_400_saying_its_depth_is_its_layer_count(client, served, depth):
    status, body = post(client, depth=depth)
    assert status == 400 and body["error"]["param"] == "depth" and body["error"]["code"] == "unsupported_by_model"
    assert f"an explicit transformer's depth is its layer count ({LAYERS})" in body["error"]["message"]


REFUSED = {
    "tol": ({"tol": 0.01}, "no position halts"),
    "solver": ({"solver": "anderson"}, "no fixed point to solve"),
    "start": ({"start": "zero"}, "starts from the embedding"),
    "start warm": ({"start": "warm"}, "starts from the embedding"),
    "start noise": ({"start": "noise", "seed": 3}, "starts from the embedding"),
    "warm_start": ({"warm_start": True}, "no warm start"),
    "warm_start false": ({"warm_start": False}, "no warm start"),
    "halt": ({"halt": "residual"}, "no halting rule"),
    "halt kl": ({"halt": "kl", "tol": 0.01}, "no position halts"),  # the first field it does not take
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_each_control_it_does_not_take_is_a_400_naming_the_field_and_why(client, served, case):
    fields, why = REFUSED[case]
    status, body = post(client, **fields)
    field = "tol" if "tol" in fields else next(iter(fields))
    assert status == 400 and body["error"]["param"] == field, body
    assert body["error"]["message"].startswith(f"The model 'explicit-demo' does not take {field}=")
    assert why in body["error"]["message"]


@pytest.mark.parametrize(
    "suffix, why",
    [("depth=8", "layer count (12)"), ("tol=0.01", "no position halts"), ("solver=anderson", "no fixed point"),
     ("start=warm", "embedding"), ("warm_start=true", "no warm start"), ("halt=kl", "no halting rule")],
)  # fmt: skip
def test_a_model_id_suffix_that_sets_one_is_a_400_naming_the_model(client, served, suffix, why):
    status, body = post(client, model=f"explicit-demo@{suffix}")
    assert status == 400 and body["error"]["param"] == "model" and body["error"]["code"] == "invalid_model_suffix"
    message = body["error"]["message"]
    assert message.startswith(f"The model id suffix's {suffix.split('=')[0]}=") and why in message
    detail = client.get(f"/v1/models/explicit-demo@{suffix}")
    assert detail.status_code == 400 and detail.json()["error"]["param"] == "model"


def test_its_own_depth_in_the_suffix_is_served(client, served):
    status, body = post(client, model=f"explicit-demo@depth={LAYERS}")
    assert status == 200 and body["model"] == f"explicit-demo@depth={LAYERS}"
    assert body["eqlm"]["iterations_per_token"] == [LAYERS, LAYERS]
    assert client.get(f"/v1/models/explicit-demo@depth={LAYERS}").status_code == 200


def test_an_equilibrium_model_still_takes_every_control(client, served):
    status, body = post(client, model="eqlm-demo", depth=4, tol=0.05, start="warm", solver="anderson")
    assert status == 200 and body["eqlm"]["start"] == "warm"


def test_the_council_refuses_it_as_a_member(client, served):
    kinetic = {"members": ["eqlm-demo", "explicit-demo"]}
    status, body = post(client, model="eqlm-council", kinetic=kinetic)
    assert status == 400 and body["error"]["param"] == "kinetic.members[1]"
    assert body["error"]["code"] == "invalid_member"
    assert "cannot be a council member" in body["error"]["message"]
    assert "explicit transformer" in body["error"]["message"]


def test_the_live_council_does_not_offer_it(served):
    from council_app.live import live_context

    assert "explicit-demo" not in [member["id"] for member in live_context()["members"]]
