"""Scoring through /v1 with the real `openai` client: logprobs, echo, model-id suffixes and the tokenizer endpoints.

The live server serves a tiny randomly initialised EqLM (context 64 bytes); the expected numbers come from the
generation service itself (eqlm.generation) on the same files, at the same depth and solver.
"""

import json

import httpx
import numpy as np
import pytest
from openai import BadRequestError, OpenAI

from eqlm.generation import GenerationRequest, Generator
from eqlm.scoring import score_prompt
from eqlm.tokenizer import token_string

from .page_examples import run_shell_example

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT = "In the beginning"
TOL = 1e-5


@pytest.fixture(scope="module")
def service(tiny_onnx_dir):
    """The generation service on the same files, in the test process: what the API must agree with."""
    return Generator(tiny_onnx_dir)


@pytest.fixture
def api(live_server, serve_models, tiny_onnx_dir):
    serve_models(default=tiny_onnx_dir)
    return OpenAI(base_url=f"{live_server.url}/v1", api_key="not-needed-here", max_retries=0, timeout=60)


def post(live_server, path: str, body: dict) -> httpx.Response:
    return httpx.post(f"{live_server.url}{path}", json=body, timeout=60)


def stream_chunks(live_server, body: dict, path: str = "/v1/completions") -> list[dict]:
    chunks = []
    with httpx.stream("POST", f"{live_server.url}{path}", json={**body, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[len("data: ") :]))
    return chunks


def expected_generation(service, prompt=PROMPT, depth=12, max_tokens=6, **kw):
    request = GenerationRequest(prompt=prompt, max_tokens=max_tokens, depth=depth, temperature=0, logprobs=True, **kw)
    return list(service.stream(request))


def test_completion_logprobs_are_the_services_log_softmax_and_greedy_is_top(api, service):
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3, extra_body={"depth": 12}
    )
    logprobs = completion.choices[0].logprobs
    events = expected_generation(service)
    assert logprobs.tokens == [token_string(e.token_id) for e in events]
    assert logprobs.text_offset == list(range(6))  # bytes into the choice's text
    for got, top, event in zip(logprobs.token_logprobs, logprobs.top_logprobs, events, strict=True):
        assert abs(got - event.logprobs[event.token_id]) <= TOL
        assert len(top) == 3 and next(iter(top)) == token_string(event.token_id)  # greedy = most likely
        assert max(top.values()) == got
        for name, value in top.items():
            assert abs(value - event.logprobs[[t for t in range(256) if token_string(t) == name][0]]) <= TOL


def test_echo_with_max_tokens_zero_scores_the_prompt_alone_in_one_solve(api, service):
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=0, echo=True, logprobs=1, temperature=0, extra_body={"depth": 12}
    )
    choice = completion.choices[0]
    assert choice.text == PROMPT and completion.usage.completion_tokens == 0
    assert choice.logprobs.tokens == list(PROMPT)
    assert choice.logprobs.token_logprobs[0] is None and choice.logprobs.top_logprobs[0] is None
    score = score_prompt(service.model, list(PROMPT.encode()), 12)
    assert np.allclose(choice.logprobs.token_logprobs[1:], score.token_logprobs(), atol=TOL, rtol=0)


@pytest.mark.parametrize(
    "suffix,depth,solver", [("@depth=4", 4, "picard"), ("@depth=12;solver=anderson", 12, "anderson")]
)
def test_a_model_id_suffix_chooses_the_depth_and_solver_the_logprobs_are_taken_at(api, service, suffix, depth, solver):
    completion = api.completions.create(
        model="eqlm-demo" + suffix, prompt=PROMPT, max_tokens=2, echo=True, logprobs=0, temperature=0
    )
    assert completion.model == "eqlm-demo" + suffix
    eqlm = completion.model_extra["eqlm"]
    assert eqlm["depth_requested"] == depth and eqlm["solver"] == solver
    score = score_prompt(service.model, list(PROMPT.encode()), depth, solver=solver)
    got = completion.choices[0].logprobs.token_logprobs
    assert np.allclose(got[1 : len(PROMPT)], score.token_logprobs(), atol=TOL, rtol=0)
    assert abs(got[len(PROMPT)] - score.logprobs[-1].max()) <= TOL  # the first generated token, greedy
    other = score_prompt(service.model, list(PROMPT.encode()), 1)
    assert not np.allclose(got[1 : len(PROMPT)], other.token_logprobs(), atol=1e-3)
    assert api.models.retrieve("eqlm-demo" + suffix).id == "eqlm-demo" + suffix


@pytest.mark.parametrize("echo", [True, False])
def test_streamed_logprobs_cover_every_token_and_equal_the_plain_answer(api, live_server, echo):
    body = {"model": "eqlm-demo", "prompt": "Café", "max_tokens": 8, "temperature": 0, "logprobs": 2, "echo": echo}
    plain = post(live_server, "/v1/completions", body).json()["choices"][0]["logprobs"]
    chunks = [c for c in stream_chunks(live_server, body) if c["choices"] and c["choices"][0]["logprobs"]]
    streamed = {key: [v for c in chunks for v in c["choices"][0]["logprobs"][key]] for key in plain}
    prompt_tokens = 5 if echo else 0
    if echo:
        assert streamed["tokens"][:5] == ["C", "a", "f", "bytes:\\xc3", "bytes:\\xa9"]
    # the echoed prompt, then one chunk per generated byte, whether it completes a character or not
    assert len(chunks) == int(echo) + 8 and len(streamed["tokens"]) == prompt_tokens + 8
    assert streamed["tokens"] == plain["tokens"] and streamed["text_offset"] == plain["text_offset"]
    assert plain["text_offset"] == list(range(prompt_tokens + 8))
    start = 1 if echo else 0
    assert np.allclose(streamed["token_logprobs"][start:], plain["token_logprobs"][start:], atol=TOL, rtol=0)


def test_the_schema_documents_the_logprobs_shapes(api, client):
    schema = client.get("/api/schema/?format=json").json()
    completions = schema["paths"]["/v1/completions"]["post"]
    body = completions["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"logprobs", "echo"} <= set(schema["components"]["schemas"][body]["properties"])
    choice = completions["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["choices"]
    assert set(choice["items"]["properties"]["logprobs"]["properties"]) == {
        "tokens", "token_logprobs", "top_logprobs", "text_offset"
    }  # fmt: skip
    for path in ("/tokenize", "/detokenize", "/tokenizer_info"):
        assert path in schema["paths"]


def test_chat_logprobs_carry_bytes_and_top_alternatives(api, service, live_server):
    messages = [{"role": "user", "content": PROMPT}]
    completion = api.chat.completions.create(
        model="eqlm-demo", messages=messages, max_tokens=5, temperature=0, logprobs=True, top_logprobs=2,
        extra_body={"depth": 12},
    )  # fmt: skip
    content = completion.choices[0].logprobs.content
    events = expected_generation(service, prompt=PROMPT + "\n", max_tokens=5)
    assert [entry.bytes for entry in content] == [[e.token_id] for e in events]
    for entry, event in zip(content, events, strict=True):
        assert abs(entry.logprob - event.logprobs[event.token_id]) <= TOL
        assert len(entry.top_logprobs) == 2 and entry.top_logprobs[0].bytes == [event.token_id]
    body = {"model": "eqlm-demo", "messages": messages, "max_tokens": 5, "temperature": 0, "depth": 12}
    chunks = stream_chunks(live_server, {**body, "logprobs": True, "top_logprobs": 2}, "/v1/chat/completions")
    streamed = [
        e
        for c in chunks
        if c["choices"] and c["choices"][0]["logprobs"]
        for e in c["choices"][0]["logprobs"]["content"]
    ]
    assert [e["bytes"] for e in streamed] == [entry.bytes for entry in content]


def test_token_id_prompts_are_raw_bytes_one_token_each(api):
    one = api.completions.create(model="eqlm-demo", prompt=[195], max_tokens=0, echo=True, logprobs=0)
    assert one.usage.prompt_tokens == 1 and one.choices[0].logprobs.tokens == ["bytes:\\xc3"]
    two = api.completions.create(model="eqlm-demo", prompt=[[72, 105], [226, 130, 172]], max_tokens=1, temperature=0)
    assert len(two.choices) == 2 and two.usage.prompt_tokens == 5


@pytest.mark.parametrize(
    "body,param",
    [
        ({"logprobs": 21}, "logprobs"),
        ({"prompt": [256]}, "prompt"),
        ({"model": "eqlm-demo@depth=99"}, "model"),
        ({"model": "eqlm-demo@speed=3"}, "model"),
        ({"model": "eqlm-demo@depth=4,solver=anderson"}, "model"),
        ({"model": "eqlm-demo@depth=4", "depth": 8}, "depth"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"prompt": "x" * 65, "echo": True}, "prompt"),
        ({"prompt": "x" * 65, "logprobs": 1}, "prompt"),
    ],
)
def test_bad_scoring_values_are_a_bad_request_naming_the_parameter(api, live_server, body, param):
    response = post(live_server, "/v1/completions", {"model": "eqlm-demo", "prompt": PROMPT, **body})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error"
    if "x" * 65 in str(body):
        assert error["code"] == "context_length_exceeded"


def test_chat_top_logprobs_without_logprobs_is_a_bad_request(api):
    with pytest.raises(BadRequestError) as caught:
        api.chat.completions.create(model="eqlm-demo", messages=[{"role": "user", "content": "x"}], top_logprobs=2)
    assert caught.value.body["param"] == "top_logprobs"


def test_generation_alone_keeps_its_left_truncation(api):
    completion = api.completions.create(model="eqlm-demo", prompt="x" * 100, max_tokens=2, temperature=0)
    assert completion.usage.prompt_tokens == 100 and completion.usage.completion_tokens == 2


def test_tokenizer_endpoints_speak_vllms_shapes_over_bytes(api, live_server):
    tokens = post(live_server, "/tokenize", {"prompt": "Hé"}).json()
    assert tokens == {"tokens": [72, 195, 169], "count": 3, "max_model_len": 64, "token_strs": None}
    special = post(live_server, "/tokenize", {"prompt": "Hé", "add_special_tokens": True, "return_token_strs": True})
    assert special.json()["tokens"] == [10, 72, 195, 169]
    assert special.json()["token_strs"] == ["\n", "H", "bytes:\\xc3", "bytes:\\xa9"]
    chat = post(live_server, "/tokenize", {"messages": [{"role": "user", "content": "Hi"}]}).json()
    assert chat["tokens"] == list(b"Hi\n")
    assert post(live_server, "/detokenize", {"tokens": [72, 195, 169]}).json() == {"prompt": "Hé"}
    assert post(live_server, "/detokenize", {"tokens": [72, 0xE2]}).json() == {"prompt": "H\ufffd"}
    info = httpx.get(f"{live_server.url}/tokenizer_info", timeout=30).json()
    assert info["bos_token"] == "\n" and info["model_max_length"] == 64 and info["eos_token"] is None
    for path, body, param in [
        ("/detokenize", {"tokens": [1, 256]}, "tokens"),
        ("/tokenize", {}, "prompt"),
        ("/tokenize", {"prompt": "x", "model": "nope"}, "model"),
    ]:
        response = post(live_server, path, body)
        assert response.status_code in (400, 404) and response.json()["error"]["param"] == param, response.text


def test_the_scoring_examples_on_the_api_page_run_against_the_server(api, client, live_server):
    import html
    import re

    page = client.get("/api/").content.decode()
    outputs = {}
    for name in ("score", "tokenize"):
        command = html.unescape(re.search(rf'<pre><code id="{name}-example">(.*?)</code></pre>', page, re.S)[1])
        outputs[name] = json.loads(run_shell_example(command.replace("http://testserver", live_server.url)))
    logprobs = outputs["score"]["choices"][0]["logprobs"]
    assert outputs["score"]["model"] == "eqlm-demo@depth=12" and logprobs["token_logprobs"][0] is None
    assert len(logprobs["tokens"]) == len("In the beginning God") and len(logprobs["top_logprobs"][1]) == 2
    assert outputs["tokenize"]["token_strs"] == ["C", "a", "f", "bytes:\\xc3", "bytes:\\xa9"]
    assert "lm_eval run --model local-completions" in html.unescape(page) and "tokenizer_backend=remote" in page
