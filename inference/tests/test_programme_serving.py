"""An imported programme model (GPT-2 BPE) is served end to end in its own tokens: /v1 completions greedy and
streamed, echoed log-probabilities equal to the programme's own at depth 12, /tokenize, stop strings inside a BPE
token, token ids checked against its vocabulary, the council's refusal of mixed tokenizers, lm-evaluation-harness
through its remote tokenizer, and the dial generating it in the browser."""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from eqlm.tokenizers import get_tokenizer
from models_app import serving

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

SLUG = "eqlm-postln"
PROMPT = "The quick brown fox"
GPT2 = get_tokenizer("gpt2")


@pytest.fixture
def programme_models(shared_dir) -> Path:
    folder = Path(shared_dir) / "programme-models"
    if not (folder / f"{SLUG}.pt").exists():
        pytest.skip("the programme's reference checkpoints (../shared/programme-models) are not here")
    return folder


@pytest.fixture
def expected(programme_models) -> dict:
    return json.loads((programme_models / f"{SLUG}.expected.json").read_text())


@pytest.fixture
def imported(programme_models):
    """The reference checkpoint imported by the command (registered, exported to ONNX in MEDIA_ROOT, served)."""
    serving.reset()
    out = io.StringIO()
    call_command("import_model", str(programme_models / f"{SLUG}.pt"), "--slug", SLUG, stdout=out)
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["tokenizer"] == "gpt2"
    yield programme_models / f"{SLUG}.pt"
    serving.reset()


@pytest.fixture
def torch_model(imported):
    """The programme's own model (torch) on the imported file: what the served export must agree with."""
    from django.conf import settings

    from eqlm.programme.checkpoint import load_programme_model

    model, _ = load_programme_model(imported, settings.CHECKPOINT_MAX_BYTES)
    return model


def programme_greedy(model, ids: list[int], depth: int, count: int) -> list[int]:
    """`count` greedy tokens from the programme's own whole-sequence Picard solve at `depth` (torch)."""
    import torch

    ids = list(ids)
    for _ in range(count):
        with torch.no_grad():
            logits = model(torch.tensor([ids]), solver="picard", max_iter=depth, tol=0.0)
        ids.append(int(torch.argmax(logits[0, -1])))
    return ids[-count:]


def post(client, path: str, body: dict):
    response = client.post(path, json.dumps(body), content_type="application/json")
    return response


def completion(client, **body) -> dict:
    response = post(client, "/v1/completions", {"model": SLUG, "prompt": PROMPT, "temperature": 0, **body})
    assert response.status_code == 200, response.content
    return response.json()


def stream_text(client, **body) -> tuple[str, list[dict]]:
    response = post(client, "/v1/completions", {"model": SLUG, "prompt": PROMPT, "temperature": 0, "stream": True,
                                                "stream_options": {"include_usage": True}, **body})  # fmt: skip
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
    events = b"".join(response.streaming_content).decode().split("\n\n")
    chunks = [json.loads(e[len("data: ") :]) for e in events if e.startswith("data: {")]
    assert events[-2] == "data: [DONE]"
    return "".join(c["choices"][0]["text"] for c in chunks if c["choices"]), chunks


def test_greedy_completion_is_the_programmes_greedy_gpt2_continuation_streamed_alike(client, torch_model):
    body = completion(client, max_tokens=8, depth=4, logprobs=0)
    choice = body["choices"][0]
    ids = [GPT2.token_from_string(name) for name in choice["logprobs"]["tokens"]]
    assert ids == programme_greedy(torch_model, GPT2.encode(PROMPT), depth=4, count=8)
    assert choice["text"] == GPT2.decode(ids) and choice["finish_reason"] == "length"
    assert body["usage"] == {"prompt_tokens": len(GPT2.encode(PROMPT)), "completion_tokens": 8, "total_tokens": 12}
    assert body["eqlm"]["iterations_per_token"] == [4] * 8

    empty = completion(client, prompt="", max_tokens=2, depth=4)  # continued after the manifest's empty_prompt
    assert empty["usage"]["prompt_tokens"] == 0 and empty["usage"]["completion_tokens"] == 2

    streamed, chunks = stream_text(client, max_tokens=8, depth=4)
    assert streamed == choice["text"]
    assert chunks[-1]["usage"]["completion_tokens"] == 8


def test_echoed_log_probabilities_are_the_programmes_at_depth_12_from_text_or_ids(client, imported, expected):
    worst = 0.0
    for item in expected["texts"]:
        want = np.array(item["picard_next_token_logprobs"]["12"])
        for prompt in (item["text"], item["ids"]):
            body = completion(client, prompt=prompt, max_tokens=0, echo=True, logprobs=1, depth=12)
            choice = body["choices"][0]
            logprobs = choice["logprobs"]
            assert choice["text"] == item["text"] and body["usage"]["prompt_tokens"] == len(item["ids"])
            assert [GPT2.token_from_string(name) for name in logprobs["tokens"]] == item["ids"]
            assert logprobs["token_logprobs"][0] is None
            worst = max(worst, float(np.abs(np.array(logprobs["token_logprobs"][1:]) - want).max()))
            # text_offset counts characters of the text: each token's name is the text at its offset
            for name, offset in zip(logprobs["tokens"], logprobs["text_offset"], strict=True):
                assert item["text"][offset : offset + len(name)] == name
    assert worst < 1e-5, worst


def test_chat_logprobs_give_each_gpt2_tokens_bytes(client, imported):
    response = post(client, "/v1/chat/completions", {
        "model": SLUG, "messages": [{"role": "user", "content": "Café au lait"}], "max_tokens": 4, "temperature": 0,
        "logprobs": True, "top_logprobs": 2, "depth": 4,
    })  # fmt: skip
    assert response.status_code == 200, response.content
    content = response.json()["choices"][0]["logprobs"]["content"]
    assert len(content) == 4
    for entry in content:
        token = GPT2.token_from_string(entry["token"])
        assert entry["bytes"] == list(GPT2.token_bytes(token))
        assert entry["top_logprobs"][0]["bytes"] == list(GPT2.token_bytes(GPT2.token_from_string(
            entry["top_logprobs"][0]["token"])))  # fmt: skip


def test_tokenize_gives_the_programmes_ids(client, imported, expected):
    for item in expected["texts"]:
        response = post(client, "/tokenize", {"model": SLUG, "prompt": item["text"]})
        assert response.json()["tokens"] == item["ids"] and response.json()["max_model_len"] == 64
        served_root = post(client, f"/serve/{SLUG}/tokenize", {"prompt": item["text"]})
        assert served_root.json()["tokens"] == item["ids"]
    info = client.get(f"/serve/{SLUG}/tokenizer_info").json()
    assert info["tokenizer"] == "gpt2" and info["eos_token"] == "<|endoftext|>" and info["model_max_length"] == 64


def test_stop_strings_that_begin_inside_a_bpe_token_end_the_text_there(client, imported):
    full = completion(client, max_tokens=12, depth=4, logprobs=0)["choices"][0]
    names, offsets = full["logprobs"]["tokens"], full["logprobs"]["text_offset"]
    first = next(i for i, name in enumerate(names) if len(name) >= 3 and i + 1 < len(names))
    inside = names[first][1:3]  # begins and ends inside one token
    across = names[first][-2:] + names[first + 1][:1]  # begins inside one token and ends in the next
    for stop in (inside, across):
        cut = full["text"].find(stop)
        assert offsets[first] < cut < offsets[first + 1], (stop, full["text"])
        stopped = completion(client, max_tokens=12, depth=4, stop=[stop])["choices"][0]
        assert stopped["text"] == full["text"][:cut] and stopped["finish_reason"] == "stop"
        streamed, _ = stream_text(client, max_tokens=12, depth=4, stop=[stop])
        assert streamed == full["text"][:cut]


def test_token_ids_are_checked_against_the_models_vocabulary(client, imported):
    assert completion(client, prompt=[464, 2068, 50256], max_tokens=1)["usage"]["prompt_tokens"] == 3
    response = post(client, "/v1/completions", {"model": SLUG, "prompt": [464, 50257], "max_tokens": 1})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "prompt" and "0 to 50256 (got 50257)" in error["message"]


def test_a_request_longer_than_the_context_in_gpt2_tokens_is_refused_for_scoring(client, imported):
    text = " word" * 65  # 65 GPT-2 tokens, 325 bytes: over the context of 64 tokens
    response = post(client, "/v1/completions", {"model": SLUG, "prompt": text, "echo": True, "max_tokens": 0,
                                                 "logprobs": 0})  # fmt: skip
    assert response.status_code == 400 and response.json()["error"]["code"] == "context_length_exceeded"
    assert "65 tokens" in response.json()["error"]["message"]
    ok = post(client, "/v1/completions", {"model": SLUG, "prompt": " word" * 64, "echo": True, "max_tokens": 0,
                                          "logprobs": 0})  # fmt: skip
    assert ok.status_code == 200, ok.content


def test_the_council_refuses_members_with_different_tokenizers_and_runs_gpt2_members(client, imported):
    response = post(client, "/v1/completions", {
        "model": "eqlm-council", "prompt": "In the beginning", "max_tokens": 2,
        "kinetic": {"members": ["eqlm-demo", SLUG]},
    })  # fmt: skip
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["param"] == "kinetic.members" and error["type"] == "invalid_request_error"
    assert "one tokenizer" in error["message"] and "gpt2" in error["message"]
    same = post(client, "/v1/completions", {
        "model": "eqlm-council", "prompt": PROMPT, "max_tokens": 3, "temperature": 0, "depth": 4, "logprobs": 0,
        "kinetic": {"members": [SLUG, SLUG]},
    })  # fmt: skip
    assert same.status_code == 200, same.content
    choice = same.json()["choices"][0]
    tokens = [GPT2.token_from_string(name) for name in choice["logprobs"]["tokens"]]
    assert len(tokens) == 3 and choice["text"] == GPT2.decode(tokens)


def test_a_request_to_one_models_server_root_must_name_that_model(client, imported):
    response = post(client, f"/serve/{SLUG}/v1/completions", {"model": "eqlm-demo", "prompt": "x", "max_tokens": 1})
    assert response.status_code == 400 and response.json()["error"]["param"] == "model"
    ok = post(client, f"/serve/{SLUG}/v1/completions", {"model": f"{SLUG}@depth=4", "prompt": "x", "max_tokens": 1})
    assert ok.status_code == 200, ok.content


@pytest.mark.django_db(transaction=True)  # the live server's thread reads the imported row and the key
def test_lm_eval_through_the_models_server_root_scores_as_the_programme_does(
    live_server, imported, torch_model, settings, tmp_path
):
    from eqlm.programme.score import next_token_logprobs
    from eqlm.scoring import rolling_windows
    from inference.models import ApiKey
    from inference.tests.test_lmeval import BLIMP_TASKS, FIXTURES, run_lm_eval

    settings.API_REQUIRE_KEY = True
    _, key = ApiKey.issue("lm-eval", requests_per_minute=100_000, tokens_per_minute=100_000_000)
    context = 64  # the model's max_positions: lm-eval sends at most max_length - 1 tokens, one more is generated
    tasks = [*BLIMP_TASKS, "eqlm_heldout_rolling"]
    harness = run_lm_eval(live_server, key, tasks, tmp_path, f"{SLUG}@depth=12", f"/serve/{SLUG}", context)

    def portal(ids: list[int]) -> np.ndarray:  # the programme's own scores at the served settings (torch)
        return next_token_logprobs(torch_model, ids, solver="picard", depth=12)

    eot, worst, compared = GPT2.eot_token_id, 0.0, 0
    for task in BLIMP_TASKS:  # each sentence after <|endoftext|> (the remote tokenizer's eos): its summed log-prob
        for row in harness["samples"][task]:
            for request, response in zip(row["arguments"].values(), row["resps"], strict=True):
                assert request["arg_0"] == ""  # no context: lm-eval scores after its prefix token
                ids = [eot, *GPT2.encode(request["arg_1"])]
                worst = max(worst, abs(float(response[0][0]) - float(portal(ids).sum())))
                compared += 1
    docs = [json.loads(line)["text"] for line in (FIXTURES / "kjv_heldout.jsonl").read_text().splitlines()]
    rows = sorted(harness["samples"]["eqlm_heldout_rolling"], key=lambda r: r["doc_id"])
    for doc, row in zip(docs, rows, strict=True):  # lm-eval's disjoint rolling windows of max_length - 2 scored tokens
        seq = [eot, *GPT2.encode(doc)]
        total = sum(
            float(portal(seq[start:end])[first - start - 1 :].sum())
            for start, first, end in rolling_windows(len(seq) - 1, context - 2)
        )
        worst = max(worst, abs(float(row["resps"][0][0]) - total))
        compared += 1
    print(f"\nlm-eval on {SLUG} at depth 12: {compared} requests, largest difference {worst:.2e} nats")
    assert compared == 2 * sum(len(harness["samples"][t]) for t in BLIMP_TASKS) + len(docs) and worst <= 1e-4


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_dial_generates_the_imported_gpt2_model_greedy_as_the_server_does(page, live_server, imported):
    import httpx

    from inference.tests.test_demo_browser import generate_in_page

    page.goto(f"/demo/?model={SLUG}")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.evaluate("window.eqlmDemo.runtime.tokenizer.name") == "gpt2"
    run = generate_in_page(page, depth=4, max_tokens=8)  # the dial's own controls, greedy
    assert run["tokens"] == 8 and run["meanIterations"] == 4 and run["requests"] == []
    ids = page.evaluate(
        "async (prompt) => { const ids = []; for await (const e of window.eqlmDemo.runtime.generate("
        "{prompt, maxTokens: 8, depth: 4, temperature: 0})) ids.push(e.tokenId); return ids; }",
        "And God said",
    )
    api = httpx.post(
        f"{live_server.url}/v1/completions",
        json={"model": SLUG, "prompt": "And God said", "max_tokens": 8, "temperature": 0, "depth": 4, "logprobs": 0},
        timeout=60,
    ).json()["choices"][0]
    assert ids == [GPT2.token_from_string(name) for name in api["logprobs"]["tokens"]]
    assert run["text"] == api["text"] == GPT2.decode(ids)
    page.watch.assert_clean()


def test_the_dial_page_says_a_gpt2_model_reads_gpt2_tokens(client, imported):
    import re

    def notes(model: str) -> str:  # the page's description of the model and what to expect of it
        page = client.get(f"/demo/?model={model}").content.decode()
        parts = ("demo-limitation", "output-expect")
        return "".join(re.search(rf'id="{name}".*?</p>', page, re.S)[0] for name in parts)

    assert "GPT-2 BPE tokens" in notes(SLUG) and "one GPT-2 token at a time" in notes(SLUG)
    assert "byte-level" not in notes(SLUG) and "byte-level" in notes("eqlm-demo")
