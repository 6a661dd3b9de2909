"""/v1's `start` (zero, warm, noise) and `halt` (residual, kl): in the body, in the model id, and in the telemetry.

The tiny random model serves; every answer is held against eqlm.generation run directly with the same settings.
"""

import json

import openai
import pytest
from openai import OpenAI

pytestmark = pytest.mark.django_db(transaction=True)  # the openai client talks to the live server

PROMPT = "In the beginning"


@pytest.fixture
def served(serve_models, tiny_onnx_dir):
    return serve_models(default=tiny_onnx_dir)


def post(client, body: dict, path: str = "/v1/completions"):
    body = {"prompt": PROMPT, "max_tokens": 6, **body}
    response = client.post(path, json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def direct(onnx_dir, **request):
    """What eqlm.generation itself produces for a request (greedy, 6 tokens unless given)."""
    from eqlm.generation import GenerationRequest, Generator

    settings = {"prompt": PROMPT, "max_tokens": 6, "temperature": 0.0, **request}
    return Generator(onnx_dir).generate(GenerationRequest(**settings))


def test_a_noise_start_is_seeded_by_seed_zero_when_unset_and_reported(client, served):
    status, body = post(client, {"model": "eqlm-demo", "temperature": 0, "start": "noise"})
    assert status == 200, body
    eqlm = body["eqlm"]
    assert (eqlm["start"], eqlm["noise_seed"], eqlm["warm_start"], eqlm["halt"]) == ("noise", 0, False, None)
    expected = direct(served, start="noise", seed=0)
    assert body["choices"][0]["text"] == expected.text
    assert body["choices"][0]["text"] != direct(served).text  # another start, another fixed point on this model


def test_each_of_n_choices_starts_from_its_own_noise_seed(served, live_server):
    api = OpenAI(base_url=f"{live_server.url}/v1", api_key="unused", max_retries=0, timeout=60)
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=6, temperature=0, n=2, seed=5, extra_body={"start": "noise"}
    )
    seeds = [choice.model_extra["eqlm"]["noise_seed"] for choice in completion.choices]
    assert seeds == [5, 6] and completion.model_extra["eqlm"]["noise_seed"] == 5
    texts = [choice.text for choice in completion.choices]
    assert texts == [direct(served, start="noise", seed=5).text, direct(served, start="noise", seed=6).text]


def test_the_closing_chunk_of_a_stream_reports_the_start_used(served, live_server):
    api = OpenAI(base_url=f"{live_server.url}/v1", api_key="unused", max_retries=0, timeout=60)
    chunks = list(
        api.completions.create(
            model="eqlm-demo", prompt=PROMPT, max_tokens=4, temperature=0, seed=3, stream=True,
            extra_body={"start": "noise"},
        )
    )  # fmt: skip
    closing = [c for c in chunks if c.choices and c.choices[0].finish_reason][0].model_extra["eqlm"]
    assert closing["start"] == "noise" and closing["noise_seed"] == 3
    streamed = "".join(c.choices[0].text for c in chunks if c.choices)
    assert streamed == direct(served, start="noise", seed=3, max_tokens=4).text


def test_warm_start_true_is_start_warm(client, served):
    _, by_alias = post(client, {"model": "eqlm-demo", "temperature": 0, "warm_start": True})
    _, by_start = post(client, {"model": "eqlm-demo", "temperature": 0, "start": "warm"})
    assert by_alias["choices"][0]["text"] == by_start["choices"][0]["text"] == direct(served, start="warm").text
    for eqlm in (by_alias["eqlm"], by_start["eqlm"]):
        assert (eqlm["start"], eqlm["warm_start"], eqlm["noise_seed"]) == ("warm", True, None)
    _, cold = post(client, {"model": "eqlm-demo", "temperature": 0})
    assert (cold["eqlm"]["start"], cold["eqlm"]["warm_start"]) == ("zero", False)


@pytest.mark.parametrize(
    "body",
    [
        {"start": "noise", "warm_start": True},
        {"start": "warm", "warm_start": False},
        {"start": "zero", "warm_start": True},
        {"model": "eqlm-demo@start=noise", "warm_start": True},  # the suffix's start against the body's alias
        {"model": "eqlm-demo@warm_start=true", "start": "zero"},
    ],
)
def test_a_start_that_disagrees_with_warm_start_is_a_bad_request_naming_warm_start(client, served, body):
    status, answer = post(client, {"model": "eqlm-demo", **body})
    assert status == 400 and answer["error"]["param"] == "warm_start"
    assert answer["error"]["type"] == "invalid_request_error" and "start" in answer["error"]["message"]


def test_start_warm_with_warm_start_true_agrees(client, served):
    status, body = post(client, {"model": "eqlm-demo", "temperature": 0, "start": "warm", "warm_start": True})
    assert status == 200 and body["eqlm"]["start"] == "warm"


def test_kl_halting_stops_each_position_where_eqlm_does_and_says_so(client, served):
    status, body = post(client, {"model": "eqlm-demo", "temperature": 0, "tol": 0.001, "depth": 24, "halt": "kl"})
    assert status == 200, body
    expected = direct(served, tol=0.001, depth=24, halt="kl")
    assert body["eqlm"]["iterations_per_token"] == [t.iterations for t in expected.tokens]
    assert body["choices"][0]["text"] == expected.text
    assert (body["eqlm"]["mode"], body["eqlm"]["halt"]) == ("adaptive", "kl")
    residual = direct(served, tol=0.001, depth=24)
    assert body["eqlm"]["iterations_per_token"] != [t.iterations for t in residual.tokens]  # another rule
    _, by_residual = post(client, {"model": "eqlm-demo", "temperature": 0, "tol": 0.001, "depth": 24})
    assert by_residual["eqlm"]["halt"] == "residual"


def test_kl_halting_without_a_tol_is_a_bad_request_naming_halt(client, served):
    status, body = post(client, {"model": "eqlm-demo", "halt": "kl", "depth": 8})
    assert status == 400 and body["error"]["param"] == "halt" and "tol" in body["error"]["message"]


@pytest.mark.parametrize(("extra", "param"), [({"start": "cold"}, "start"), ({"halt": "entropy"}, "halt")])
def test_an_unknown_start_or_halting_rule_is_a_bad_request_naming_it(served, live_server, extra, param):
    api = OpenAI(base_url=f"{live_server.url}/v1", api_key="unused", max_retries=0, timeout=60)
    with pytest.raises(openai.BadRequestError) as caught:
        api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=2, extra_body=extra)
    assert caught.value.param == param and caught.value.body["type"] == "invalid_request_error"


def test_start_and_halt_in_the_model_id_act_as_the_body_fields(client, served):
    suffixed = "eqlm-demo@start=noise;halt=kl;tol=0.001;depth=24"
    _, by_suffix = post(client, {"model": suffixed, "temperature": 0, "seed": 2})
    _, by_body = post(
        client, {"model": "eqlm-demo", "temperature": 0, "seed": 2, "start": "noise", "halt": "kl", "tol": 0.001,
                 "depth": 24},
    )  # fmt: skip
    assert by_suffix["model"] == suffixed
    assert by_suffix["choices"][0]["text"] == by_body["choices"][0]["text"]
    fields = ("start", "noise_seed", "halt", "mode", "iterations_per_token")
    assert {k: by_suffix["eqlm"][k] for k in fields} == {k: by_body["eqlm"][k] for k in fields}
    assert by_suffix["eqlm"]["start"] == "noise" and by_suffix["eqlm"]["halt"] == "kl"
    assert client.get(f"/v1/models/{suffixed}").json()["id"] == suffixed


@pytest.mark.parametrize(("model", "named"), [("eqlm-demo@start=cold", "start"), ("eqlm-demo@halt=kl2", "halt")])
def test_a_bad_start_or_halt_in_the_model_id_is_a_bad_request_naming_it(client, served, model, named):
    status, body = post(client, {"model": model})
    assert status == 400 and body["error"]["param"] == "model" and body["error"]["code"] == "invalid_model_suffix"
    assert f"{named}=" in body["error"]["message"]
    assert client.get(f"/v1/models/{model}").status_code == 400


def test_a_body_start_that_disagrees_with_the_suffix_is_a_conflict(client, served):
    status, body = post(client, {"model": "eqlm-demo@start=noise", "start": "zero"})
    assert status == 400 and body["error"]["param"] == "start" and body["error"]["code"] == "conflicting_parameter"
