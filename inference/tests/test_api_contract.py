"""Contract tests of /v1/ with the real `openai` client against the live test server (no retries).

The server generates with a tiny randomly initialised EqLM exported to ONNX by the project's own export code,
so these tests run in seconds and do not depend on the committed demo model.
"""

import json

import httpx
import openai
import pytest
from django.core.cache import cache
from openai import OpenAI

from inference.models import ApiKey

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT = "In the beginning"


@pytest.fixture
def served_model(serve_models, tiny_onnx_dir):
    """Point the generation service at the tiny model for this test (fresh generator, fresh rate counters)."""
    serve_models(default=tiny_onnx_dir)
    yield tiny_onnx_dir
    cache.clear()


@pytest.fixture
def api(live_server, served_model):
    return OpenAI(base_url=f"{live_server.url}/v1", api_key="not-needed-here", max_retries=0, timeout=60)


def sse_events(live_server, path: str, body: dict) -> list[str]:
    """The raw `data:` payloads of a streamed response, in order."""
    events = []
    with httpx.stream("POST", f"{live_server.url}{path}", json=body, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line[len("data: ") :])
            else:
                assert line == "", f"unexpected line in the event stream: {line!r}"
    return events


def test_models_list_names_the_demo_model_first_and_the_unrolled_one(api):
    models = api.models.list()
    ids = [m.id for m in models.data]
    assert ids[0] == "eqlm-demo" and "eqlm-demo-unrolled" in ids
    assert models.data[0].object == "model" and models.data[0].owned_by
    assert api.models.retrieve("eqlm-demo").id == "eqlm-demo"
    assert api.models.retrieve("eqlm-demo-unrolled").id == "eqlm-demo-unrolled"


@pytest.mark.parametrize("depth", [4, 12])
def test_completion_runs_at_the_requested_depth_and_reports_it(api, depth):
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=6, temperature=0, extra_body={"depth": depth}
    )
    eqlm = completion.model_extra["eqlm"]
    assert eqlm["depth_requested"] == depth and eqlm["mode"] == "fixed"
    assert eqlm["iterations_per_token"] == [depth] * 6 and eqlm["mean_iterations"] == depth
    assert eqlm["final_residual"] > 0 and eqlm["warm_start"] is False and eqlm["solver"] == "picard"
    assert completion.object == "text_completion" and completion.model == "eqlm-demo"
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.prompt_tokens == len(PROMPT.encode()) and completion.usage.completion_tokens == 6
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + 6


@pytest.mark.parametrize("depth", [4, 12])
def test_chat_completion_runs_at_the_requested_depth_and_reports_it(api, depth):
    chat = api.chat.completions.create(
        model="eqlm-demo",
        messages=[{"role": "user", "content": "And God said"}],
        max_completion_tokens=5,
        temperature=0,
        extra_body={"depth": depth},
    )
    assert chat.object == "chat.completion"
    assert chat.choices[0].message.role == "assistant" and isinstance(chat.choices[0].message.content, str)
    assert chat.model_extra["eqlm"]["depth_requested"] == depth
    assert chat.model_extra["eqlm"]["iterations_per_token"] == [depth] * 5
    assert chat.usage.completion_tokens == 5


def test_greedy_completion_is_what_the_generation_service_produces(api, served_model):
    from eqlm.generation import GenerationRequest, Generator

    expected = Generator(served_model).generate(GenerationRequest(prompt=PROMPT, max_tokens=12, depth=8)).text
    completion = api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=12, temperature=0)
    assert completion.choices[0].text == expected
    assert completion.model_extra["eqlm"]["depth_requested"] == 8  # the default depth


def test_adaptive_halting_and_warm_start_reach_the_response(api):
    completion = api.completions.create(
        model="eqlm-demo",
        prompt=PROMPT,
        max_tokens=8,
        temperature=0,
        extra_body={"tol": 0.05, "depth": 12, "warm_start": True, "solver": "anderson"},
    )
    eqlm = completion.model_extra["eqlm"]
    assert eqlm["mode"] == "adaptive" and eqlm["tol"] == 0.05 and eqlm["warm_start"] is True
    assert eqlm["solver"] == "anderson"
    assert all(1 <= n <= 12 for n in eqlm["iterations_per_token"]) and len(eqlm["iterations_per_token"]) == 8


def test_streamed_completion_ends_properly_and_matches_the_plain_answer(api, live_server):
    plain = api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=10, temperature=0)
    stream = api.completions.create(
        model="eqlm-demo",
        prompt=PROMPT,
        max_tokens=10,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"depth": 8},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == plain.choices[0].text
    finished = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finished] == ["length"]
    assert finished[0].model_extra["eqlm"]["iterations_per_token"] == [8] * 10
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 10
    raw = sse_events(
        live_server,
        "/v1/completions",
        {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 4, "temperature": 0, "stream": True},
    )
    assert raw[-1] == "[DONE]" and all(json.loads(e)["object"] == "text_completion" for e in raw[:-1])


def test_streamed_chat_sends_role_then_content_then_finish_then_done(api, live_server):
    stream = api.chat.completions.create(
        model="eqlm-demo",
        messages=[{"role": "user", "content": "Blessed are the"}],
        max_tokens=6,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"depth": 4},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].usage.total_tokens == chunks[-1].usage.prompt_tokens + 6
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    plain = api.chat.completions.create(
        model="eqlm-demo",
        messages=[{"role": "user", "content": "Blessed are the"}],
        max_tokens=6,
        temperature=0,
        extra_body={"depth": 4},
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == plain.choices[0].message.content
    raw = sse_events(
        live_server,
        "/v1/chat/completions",
        {"model": "eqlm-demo", "messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "stream": True},
    )
    assert raw[-1] == "[DONE]" and json.loads(raw[-2])["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"depth": 0}, "depth"),
        ({"depth": 65}, "depth"),
        ({"tol": 0}, "tol"),
        ({"solver": "newton"}, "solver"),
        ({"warm_start": "sometimes"}, "warm_start"),
        ({"top_p": 0}, "top_p"),  # the fuzz found this one: it passed the serializer and failed in the runtime (500)
    ],
)
def test_bad_eqlm_controls_are_a_bad_request_naming_the_parameter(api, extra, param):
    with pytest.raises(openai.BadRequestError) as caught:
        api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=2, extra_body=extra)
    assert caught.value.status_code == 400
    assert caught.value.param == param
    assert caught.value.body["type"] == "invalid_request_error"


def test_caps_on_max_tokens_and_prompt_length_are_bad_requests(api, settings):
    settings.API_MAX_PROMPT_TOKENS = 32
    with pytest.raises(openai.BadRequestError) as caught:
        api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=settings.API_MAX_TOKENS + 1)
    assert caught.value.param == "max_tokens"
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(model="eqlm-demo", messages=[{"role": "user", "content": "x" * 40}])
    assert caught.value.param == "messages" and caught.value.code == "context_length_exceeded"


def test_unknown_standard_fields_are_ignored(api):
    completion = api.completions.create(
        model="eqlm-demo",
        prompt=PROMPT,
        max_tokens=2,
        temperature=0,
        user="reader-42",
        frequency_penalty=0.0,
        logit_bias={"65": 1},
        extra_body={"some_future_field": {"x": 1}},
    )
    assert completion.usage.completion_tokens == 2


@pytest.mark.parametrize("depth", [4, 12])
def test_an_echo_only_scoring_request_reports_its_prompt_solve_not_zeros(api, depth):
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=0, echo=True, logprobs=0, extra_body={"depth": depth}
    )
    eqlm = completion.model_extra["eqlm"]
    assert completion.usage.completion_tokens == 0 and eqlm["iterations_per_token"] == []
    assert eqlm["depth_requested"] == depth and eqlm["mean_iterations"] == depth  # every position ran `depth`
    assert eqlm["final_residual"] is None  # not reported by the runtime for the prompt: unknown, not 0.0


def test_an_adaptive_echo_only_request_leaves_the_figures_it_cannot_know_null(api):
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=0, echo=True, extra_body={"tol": 0.05, "depth": 12}
    )
    eqlm = completion.model_extra["eqlm"]
    assert eqlm["mode"] == "adaptive" and eqlm["mean_iterations"] is None and eqlm["final_residual"] is None


def test_an_unknown_model_is_not_found(api):
    with pytest.raises(openai.NotFoundError) as caught:
        api.completions.create(model="gpt-4o", prompt=PROMPT, max_tokens=2)
    assert caught.value.code == "model_not_found" and caught.value.param == "model"


def test_a_bad_key_is_refused_when_keys_are_required(api, live_server, settings):
    settings.API_REQUIRE_KEY = True
    with pytest.raises(openai.AuthenticationError) as caught:
        api.models.list()
    assert caught.value.code == "invalid_api_key"
    _, raw = ApiKey.issue("contract test")
    keyed = OpenAI(base_url=f"{live_server.url}/v1", api_key=raw, max_retries=0, timeout=60)
    assert keyed.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=2).usage.completion_tokens == 2


def test_exceeding_the_request_rate_limit_is_a_rate_limit_error(live_server, served_model, settings):
    settings.API_REQUIRE_KEY = True
    _, raw = ApiKey.issue("two a minute", requests_per_minute=2)
    keyed = OpenAI(base_url=f"{live_server.url}/v1", api_key=raw, max_retries=0, timeout=60)
    for _ in range(2):
        keyed.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=1)
    with pytest.raises(openai.RateLimitError) as caught:
        keyed.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=1)
    assert caught.value.body["type"] == "rate_limit_error"
    assert 1 <= int(caught.value.response.headers["Retry-After"]) <= 60


def test_exceeding_the_token_rate_limit_is_a_rate_limit_error(live_server, served_model, settings):
    _, raw = ApiKey.issue("few tokens", tokens_per_minute=60)
    keyed = OpenAI(base_url=f"{live_server.url}/v1", api_key=raw, max_retries=0, timeout=60)
    keyed.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=20)  # 16 + 20 reserved, 36 used
    with pytest.raises(openai.RateLimitError) as caught:
        keyed.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=20)
    assert caught.value.code == "tokens_per_minute_exceeded"


def test_anonymous_callers_are_limited_per_address(api, settings):
    settings.API_ANON_REQUESTS_PER_MINUTE = 1
    api.models.list()
    with pytest.raises(openai.RateLimitError):
        api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=1)


def test_a_saturated_server_answers_503_with_retry_after(live_server, served_model, settings):
    settings.API_MAX_CONCURRENT_GENERATIONS = 0
    response = httpx.post(
        f"{live_server.url}/v1/completions", json={"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 1}
    )
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert response.json()["error"]["code"] == "server_saturated"


def test_an_error_after_streaming_began_arrives_as_an_error_event(live_server, served_model, monkeypatch):
    """Fault injection: the generator fails after its first real token."""
    from eqlm import runtime

    real_stream = runtime.Generator._stream

    def failing_stream(self, request, stats):
        for event in real_stream(self, request, stats):
            yield event
            raise RuntimeError("the solver diverged")

    monkeypatch.setattr(runtime.Generator, "_stream", failing_stream)
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 5, "temperature": 0, "stream": True}
    events = sse_events(live_server, "/v1/completions", body)
    error = json.loads(events[-2])["error"]
    assert "the solver diverged" in error["message"] and error["type"] == "api_error"
    assert events[-1] == "[DONE]" and len(events) >= 3
    client = OpenAI(base_url=f"{live_server.url}/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.APIError, match="the solver diverged"):
        list(client.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=5, stream=True))


def test_several_choices_and_stop_strings(api):
    completion = api.completions.create(
        model="eqlm-demo", prompt=PROMPT, max_tokens=4, n=2, temperature=1.0, seed=3, extra_body={"depth": 2}
    )
    assert [c.index for c in completion.choices] == [0, 1]
    assert completion.usage.completion_tokens == 8
    greedy = api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=12, temperature=0).choices[0].text
    stop = greedy[3:5]
    if stop:
        stopped = api.completions.create(model="eqlm-demo", prompt=PROMPT, max_tokens=12, temperature=0, stop=[stop])
        assert stopped.choices[0].finish_reason == "stop" and stopped.choices[0].text == greedy[: greedy.index(stop)]


def test_explicit_nulls_mean_the_defaults(live_server, served_model):
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 2, "temperature": None, "top_p": None, "n": None}
    body |= {"stream": None, "stop": None, "seed": None, "depth": None, "tol": None, "warm_start": None, "solver": None}
    response = httpx.post(f"{live_server.url}/v1/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["eqlm"]["depth_requested"] == 8 and response.json()["eqlm"]["solver"] == "picard"


def test_a_bad_message_is_reported_with_its_position(api):
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(
            model="eqlm-demo", messages=[{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]
        )
    assert caught.value.param == "messages[1].role" and "messages[1].role" in caught.value.message
