"""The council through /v1/ (`eqlm-council` with a `kinetic` object), served by two tiny models of different seeds."""

import json

import pytest
from rest_framework.test import APIClient

PROMPTS = ["In the beginning", "And God said", "The LORD is my"]


@pytest.fixture
def api(council_models_served, db):
    return APIClient()


def post(api, path: str, body: dict):
    return api.post(path, json.dumps(body), content_type="application/json")


def complete(api, **body):
    response = post(api, "/v1/completions", {"max_tokens": 12, "temperature": 0, **body})
    assert response.status_code == 200, response.content
    return response.json()


def test_models_list_the_council_with_its_default_members(api):
    data = api.get("/v1/models").json()["data"]
    council = next(m for m in data if m["id"] == "eqlm-council")
    assert council["members"] == ["eqlm-demo-anytime", "eqlm-code"]
    assert "eqlm-demo-unrolled" not in council["members"]
    assert api.get("/v1/models/eqlm-council").json()["members"] == ["eqlm-demo-anytime", "eqlm-code"]


def test_a_configuration_suffix_names_the_councils_member_controls_like_the_body_fields(api):
    by_suffix = complete(api, model="eqlm-council@depth=6", prompt=PROMPTS[0])
    by_field = complete(api, model="eqlm-council", prompt=PROMPTS[0], depth=6)
    assert by_suffix["choices"][0]["text"] == by_field["choices"][0]["text"]
    assert by_suffix["model"] == "eqlm-council@depth=6"
    assert all(m["iterations"] == 6 for e in by_suffix["eqlm"]["council"]["tokens"] for m in e["members"])
    detail = api.get("/v1/models/eqlm-council@depth=6").json()
    assert detail["id"] == "eqlm-council@depth=6" and detail["members"] == ["eqlm-demo-anytime", "eqlm-code"]
    assert api.get("/v1/models/eqlm-council@depth=99").status_code == 400


def test_a_council_of_one_model_listed_twice_gives_that_models_greedy_text(api):
    for prompt in PROMPTS:
        alone = complete(api, model="eqlm-demo-anytime", prompt=prompt, depth=6)
        twice = complete(
            api, model="eqlm-council", prompt=prompt, depth=6, kinetic={"members": ["eqlm-demo-anytime"] * 2}
        )
        assert twice["choices"][0]["text"] == alone["choices"][0]["text"]
        assert twice["model"] == "eqlm-council"


def test_every_generated_token_reports_a_distribution_of_weights_and_its_leader(api):
    body = complete(api, model="eqlm-council", prompt=PROMPTS[0], kinetic={"beta": 8})
    council = body["eqlm"]["council"]
    assert council["members"] == ["eqlm-demo-anytime", "eqlm-code"]
    assert council["kinetic"]["beta"] == 8 and council["kinetic"]["tau"] == 0
    tokens = council["tokens"]
    assert len(tokens) == body["usage"]["completion_tokens"] == 12
    assert "".join(t["text"] for t in tokens) == body["choices"][0]["text"]
    for entry in tokens:
        assert sum(entry["weights"]) == pytest.approx(1, abs=1e-5)
        assert min(entry["weights"]) >= 0
        assert entry["leader"] == council["members"][entry["weights"].index(max(entry["weights"]))]
        assert 1 <= entry["iterations"] <= 32 and isinstance(entry["converged"], bool)
        assert [m["model"] for m in entry["members"]] == council["members"]
        assert all(m["iterations"] == 8 for m in entry["members"])  # the request's (default) depth


def test_the_councils_mean_iterations_are_block_iterations_and_game_updates_have_their_own_field(api):
    body = complete(api, model="eqlm-council", prompt=PROMPTS[0], depth=6)
    eqlm, council = body["eqlm"], body["eqlm"]["council"]
    games = [e["iterations"] for e in council["tokens"]]
    assert eqlm["iterations_per_token"] == [6] * len(games) and eqlm["mean_iterations"] == 6  # the members' depth
    assert eqlm["game_updates_per_token"] == games
    assert eqlm["mean_game_updates"] == council["mean_game_updates"] == round(sum(games) / len(games), 4)
    assert eqlm["depth_requested"] == 6
    scored = complete(api, model="eqlm-council", prompt=PROMPTS[0], max_tokens=0, echo=True, logprobs=0)["eqlm"]
    assert scored["mean_game_updates"] is None and scored["mean_iterations"] == 8  # the prompt solve's depth


def test_a_streamed_councils_closing_and_usage_chunks_name_game_updates_too(api):
    body = {"model": "eqlm-council", "prompt": PROMPTS[0], "max_tokens": 6, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    payloads = b"".join(post(api, "/v1/completions", body).streaming_content).decode().split("\n\n")
    chunks = [json.loads(p[len("data: ") :]) for p in payloads if p.startswith("data: {")]
    closing, usage = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]][0], chunks[-1]
    assert closing["eqlm"]["mean_game_updates"] == closing["eqlm"]["council"]["mean_game_updates"]
    assert usage["eqlm"]["mean_game_updates"] == closing["eqlm"]["mean_game_updates"]
    assert closing["eqlm"]["mean_iterations"] == usage["eqlm"]["mean_iterations"] == 8  # the members' default depth


def test_each_member_runs_with_the_requests_eqlm_controls(api):
    body = complete(api, model="eqlm-council", prompt=PROMPTS[1], tol=0.05, depth=12)
    for entry in body["eqlm"]["council"]["tokens"]:
        assert all(1 <= m["iterations"] <= 12 for m in entry["members"])
    assert body["eqlm"]["mode"] == "adaptive"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "eqlm-council", "start": "noise"}, "start"),
        ({"model": "eqlm-council", "halt": "kl", "tol": 0.01}, "halt"),
        ({"model": "eqlm-council@start=noise"}, "start"),
    ],
)
def test_the_council_refuses_the_noise_start_and_kl_halting_saying_why(api, body, param):
    response = post(api, "/v1/completions", {"prompt": PROMPTS[0], "max_tokens": 2, **body})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["param"] == param and error["code"] == "unsupported_by_council"
    assert "share one solve schedule" in error["message"]
    assert api.get("/v1/models/eqlm-council@halt=kl").status_code == 400


def test_the_council_takes_the_warm_start_by_either_name_and_reports_it(api):
    by_start = complete(api, model="eqlm-council", prompt=PROMPTS[1], start="warm", depth=6)
    by_alias = complete(api, model="eqlm-council", prompt=PROMPTS[1], warm_start=True, depth=6)
    assert by_start["choices"][0]["text"] == by_alias["choices"][0]["text"]
    assert by_start["eqlm"]["start"] == "warm" and by_start["eqlm"]["warm_start"] is True


def test_a_very_large_tau_toward_a_member_gives_that_members_greedy_text(api):
    for member in ("eqlm-demo-anytime", "eqlm-code"):
        alone = complete(api, model=member, prompt=PROMPTS[2])
        pinned = complete(
            api,
            model="eqlm-council",
            prompt=PROMPTS[2],
            kinetic={"tau": 1e4, "reference": member, "max_iter": 256},
        )
        assert pinned["choices"][0]["text"] == alone["choices"][0]["text"]


def test_streamed_chunks_carry_their_own_tokens_entries(api):
    response = post(
        api,
        "/v1/chat/completions",
        {"model": "eqlm-council", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 10,
         "temperature": 0, "stream": True},
    )  # fmt: skip
    assert response.status_code == 200
    payloads = b"".join(response.streaming_content).decode().split("\n\n")
    chunks = [json.loads(p[len("data: ") :]) for p in payloads if p.startswith("data: {")]
    text, seen = "", []
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
        entries = (chunk.get("eqlm") or {}).get("council", {}).get("tokens", [])
        if delta.get("content"):
            assert "".join(e["text"] for e in entries) == delta["content"]
            text += delta["content"]
        seen += [e["index"] for e in entries]
    assert seen == list(range(10))  # every token's entry exactly once, in order
    whole = post(
        api,
        "/v1/chat/completions",
        {"model": "eqlm-council", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 10,
         "temperature": 0},
    ).json()  # fmt: skip
    assert text == whole["choices"][0]["message"]["content"]


def test_n_seed_and_stop_work_with_the_council(api):
    body = complete(api, model="eqlm-council", prompt=PROMPTS[0], n=2, temperature=1.0, seed=5)
    again = complete(api, model="eqlm-council", prompt=PROMPTS[0], n=2, temperature=1.0, seed=5)
    assert [c["text"] for c in body["choices"]] == [c["text"] for c in again["choices"]]
    assert all("council" in c["eqlm"] for c in body["choices"])
    assert [t["choice"] for t in body["eqlm"]["council"]["tokens"]] == [0] * 12 + [1] * 12
    text = body["choices"][0]["text"]
    stop = text[4:6]
    cut = complete(api, model="eqlm-council", prompt=PROMPTS[0], temperature=1.0, seed=5, stop=[stop])
    assert cut["choices"][0]["text"] == text[: text.find(stop)]
    assert cut["choices"][0]["finish_reason"] == "stop"
    assert len(cut["eqlm"]["council"]["tokens"]) == cut["usage"]["completion_tokens"]


@pytest.mark.parametrize(
    ("kinetic", "param"),
    [
        ({"members": ["eqlm-demo-anytime"]}, "kinetic.members"),
        ({"members": ["eqlm-demo-anytime"] * 9}, "kinetic.members"),
        ({"members": ["eqlm-demo-anytime", "no-such-model"]}, "kinetic.members[1]"),
        ({"members": ["eqlm-demo-anytime", "eqlm-council"]}, "kinetic.members[1]"),
        ({"tau": -0.5}, "kinetic.tau"),
        ({"beta": -1}, "kinetic.beta"),
        ({"beta": "high"}, "kinetic.beta"),
        ({"eta": 0}, "kinetic.eta"),
        ({"eta": 1.01}, "kinetic.eta"),
        ({"max_iter": 0}, "kinetic.max_iter"),
        ({"max_iter": 257}, "kinetic.max_iter"),
        ({"tol": 0}, "kinetic.tol"),
        ({"tol": -1e-3}, "kinetic.tol"),
        ({"reference": "eqlm-demo-unrolled"}, "kinetic.reference"),
    ],
)
def test_every_kinetic_field_is_range_checked_by_name(api, kinetic, param):
    response = post(api, "/v1/completions", {"model": "eqlm-council", "prompt": "x", "kinetic": kinetic})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == param


def test_kinetic_is_refused_for_a_single_model(api):
    response = post(api, "/v1/completions", {"model": "eqlm-demo", "prompt": "x", "kinetic": {"beta": 1}})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "kinetic"


def test_the_pages_chat_endpoint_needs_its_csrf_token_but_no_api_key(settings, api, client):
    from django.test import Client

    settings.API_REQUIRE_KEY = True
    body = {"model": "eqlm-council", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    assert post(api, "/v1/chat/completions", body).status_code == 401  # the API itself wants a key
    browser = Client(enforce_csrf_checks=True)
    page = browser.get("/council/")
    assert b'id="live-form"' in page.content
    token = page.cookies["csrftoken"].value
    refused = browser.post("/council/live/chat", json.dumps(body), content_type="application/json")
    assert refused.status_code == 403
    answered = browser.post(
        "/council/live/chat", json.dumps(body), content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert answered.status_code == 200, answered.content
    assert len(answered.json()["eqlm"]["council"]["tokens"]) == 4


def test_a_council_of_one_model_listed_twice_gives_that_models_logprobs(api):
    for prompt in PROMPTS:
        alone = complete(api, model="eqlm-demo-anytime", prompt=prompt, logprobs=5, echo=True)
        twice = complete(api, model="eqlm-council", prompt=prompt, logprobs=5, echo=True,
                         kinetic={"members": ["eqlm-demo-anytime", "eqlm-demo-anytime"]})  # fmt: skip
        a, b = alone["choices"][0]["logprobs"], twice["choices"][0]["logprobs"]
        assert b["tokens"] == a["tokens"]
        assert a["token_logprobs"][0] is None and b["token_logprobs"][0] is None
        assert b["token_logprobs"][1:] == pytest.approx(a["token_logprobs"][1:], abs=1e-6)
        for top_a, top_b in zip(a["top_logprobs"][1:], b["top_logprobs"][1:], strict=True):
            assert top_b.keys() == top_a.keys()
            assert list(top_b.values()) == pytest.approx(list(top_a.values()), abs=1e-6)


def test_beta_zero_tau_zero_is_logit_averaging_of_the_members(api):
    """Log-prob differences between tokens equal the mean of the members' differences, once converged tightly.

    Each context is scored with several last bytes (echo, max_tokens 0): the last token's log-probabilities are
    then several tokens' log-probabilities at one position, for each member and for the council.
    """
    kinetic = {"beta": 0, "tau": 0, "tol": 1e-12, "max_iter": 256, "memory": "none"}  # the memoryless game
    endings = "aeghinst"

    def last_logprobs(model: str, context: str) -> list[float]:
        extra = {"kinetic": kinetic} if model == "eqlm-council" else {}
        out = []
        for start in range(0, len(endings), 4):  # prompts x n <= API_MAX_N
            prompts = [context + c for c in endings[start : start + 4]]
            body = complete(api, model=model, prompt=prompts, max_tokens=0, echo=True, logprobs=0, **extra)
            out += [choice["logprobs"]["token_logprobs"][-1] for choice in body["choices"]]
        return out

    for context in ("In the beginnin", "And God sai"):
        demo, code, game = (last_logprobs(m, context) for m in ("eqlm-demo-anytime", "eqlm-code", "eqlm-council"))
        for k in range(1, len(endings)):
            expected = ((demo[k] - demo[0]) + (code[k] - code[0])) / 2
            assert game[k] - game[0] == pytest.approx(expected, abs=1e-4)
        assert game != pytest.approx(demo, abs=1e-3)  # the members differ, so the test can fail


def test_the_telemetry_is_an_object_chosen_per_request_and_nothing_is_patched_on(council_models_served, db):
    from eqlm.council import CouncilStats
    from eqlm.generation import GenerationRequest
    from inference.v1 import council
    from inference.v1.views import served_runtime

    _, plain = council.serve({"model": "eqlm-demo", "kinetic": None}, served_runtime)
    assert plain is council.PLAIN and plain.add_to_summary({"a": 1}, []) == {"a": 1}
    generator, telemetry = council.serve({"model": "eqlm-council@depth=4", "kinetic": None}, served_runtime)
    assert isinstance(telemetry, council.CouncilTelemetry) and telemetry.members == ["eqlm-demo-anytime", "eqlm-code"]
    assert not {"member_ids", "kinetic_json"} & set(vars(generator))
    streams = [generator.stream(GenerationRequest(prompt=p, max_tokens=5, temperature=0, depth=4)) for p in PROMPTS[:2]]
    followed = [telemetry.follow(stream) for stream in streams]
    for pair in zip(*streams, strict=True):  # two streams of one request, interleaved: each keeps its own entries
        for stream_telemetry, event in zip(followed, pair, strict=True):
            stream_telemetry.on_event(event)
    for stream, stream_telemetry in zip(streams, followed, strict=True):
        assert [e["index"] for e in stream_telemetry.sent] == list(range(5))
        assert [e["iterations"] for e in stream_telemetry.sent] == [e.iterations for e in stream.stats.entries]
        assert set(vars(stream.stats)) == set(vars(CouncilStats()))  # nothing stashed on the stream's stats
