"""/v1 generations on one model run batched, each as it would alone; past the slots they queue, with a bounded wait."""

import json
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from eqlm.batched_generator import BatchedGenerator
from eqlm.generation import GenerationRequest, Generator
from inference.v1 import ratelimit
from inference.v1.base import served_runtime

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "eqlm-demo" / "onnx"
PROMPT = "And God said"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def served(serve_models, settings):
    serve_models(models_dir=ROOT / "models")
    settings.API_REQUIRE_KEY = False
    settings.API_MAX_CONCURRENT_GENERATIONS = 8
    settings.API_BATCH_MIN_PARAMS = 0  # the trained demo is small: batch it all the same


def streamed_text(url: str, body: dict) -> str:
    pieces = []
    with httpx.stream("POST", f"{url}/v1/completions", json={**body, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choice = json.loads(line[len("data: ") :])["choices"][0]
                pieces.append(choice.get("text") or "")
    return "".join(pieces)


def run_together(run, items) -> None:
    """run(i, item) for every item, each on its own thread, all at once."""
    threads = [threading.Thread(target=run, args=(i, item)) for i, item in enumerate(items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def test_concurrent_streams_on_one_model_are_batched_and_each_streams_its_lone_text(live_server, served):
    depths = [4, 8, 12, 16]
    alone = Generator(DEMO)
    want = [alone.generate(GenerationRequest(prompt=PROMPT, max_tokens=24, depth=d)).text for d in depths]
    got = [None] * len(depths)

    def run(i, depth):
        got[i] = streamed_text(
            live_server.url,
            {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 24, "depth": depth, "temperature": 0},
        )

    run_together(run, depths)
    assert got == want
    runtime = served_runtime("eqlm-demo")
    assert isinstance(runtime, BatchedGenerator) and runtime.scheduler.rows == 0


def test_concurrent_streams_on_an_explicit_transformer_run_its_layers_batched_and_each_streams_its_lone_text(
    live_server, served
):
    prompts = ["And God said", "In the beginning", "Blessed are the", "Thou shalt not"]
    alone = Generator(ROOT / "models" / "explicit-demo" / "onnx")
    want = [alone.generate(GenerationRequest(prompt=p, max_tokens=24)).text for p in prompts]
    got = [None] * len(prompts)

    def run(i, prompt):
        body = {"model": "explicit-demo", "prompt": prompt, "max_tokens": 24, "temperature": 0}
        got[i] = streamed_text(live_server.url, body)

    run_together(run, prompts)
    assert got == want
    runtime = served_runtime("explicit-demo")
    assert isinstance(runtime, BatchedGenerator) and len(runtime.scheduler.sessions) == 1
    assert runtime.scheduler.largest >= 2 and runtime.scheduler.rows == 0


def test_concurrent_int8_streams_are_batched_on_the_int8_graphs_and_each_streams_its_lone_text(
    live_server, serve_models, settings, tmp_path
):
    from eqlm.quantize import add_int8

    shutil.copytree(DEMO, tmp_path / "eqlm-demo" / "onnx")
    add_int8(tmp_path / "eqlm-demo" / "onnx")
    serve_models(models_dir=tmp_path)
    settings.API_REQUIRE_KEY, settings.API_MAX_CONCURRENT_GENERATIONS, settings.API_BATCH_MIN_PARAMS = False, 8, 0
    depths = [4, 8, 12, 16]
    alone = Generator(tmp_path / "eqlm-demo" / "onnx", precision="int8")
    want = [alone.generate(GenerationRequest(prompt=PROMPT, max_tokens=24, depth=d)).text for d in depths]
    got = [None] * len(depths)

    def run(i, depth):
        body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 24, "depth": depth, "temperature": 0}
        got[i] = streamed_text(live_server.url, {**body, "precision": "int8"})

    run_together(run, depths)
    assert got == want
    runtime = served_runtime("eqlm-demo", "int8")
    assert isinstance(runtime, BatchedGenerator) and runtime.scheduler.graphs == ("step_batched_int8",)
    assert runtime.scheduler.largest >= 2 and runtime.scheduler.rows == 0


def _post(url: str) -> httpx.Response:
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 2}
    return httpx.post(f"{url}/v1/completions", json=body, timeout=60)


def test_a_request_past_the_slots_waits_in_the_queue_and_is_answered(live_server, served, settings):
    settings.API_MAX_CONCURRENT_GENERATIONS, settings.API_GENERATION_QUEUE_SECONDS = 1, 60
    held = ratelimit.acquire_generation_slot()
    answer = {}
    try:
        waiter = threading.Thread(target=lambda: answer.update(response=_post(live_server.url)))
        waiter.start()
        for _ in range(600):  # until the request is in the queue
            if len(ratelimit._line) == 1:
                break
            time.sleep(0.05)
        assert len(ratelimit._line) == 1 and "response" not in answer
    finally:
        held.release()
    waiter.join(timeout=60)
    assert answer["response"].status_code == 200


def test_a_wait_past_the_bound_answers_503_with_retry_after(live_server, served, settings):
    settings.API_MAX_CONCURRENT_GENERATIONS, settings.API_GENERATION_QUEUE_SECONDS = 1, 0
    held = ratelimit.acquire_generation_slot()
    try:
        response = _post(live_server.url)
    finally:
        held.release()
    assert response.status_code == 503 and int(response.headers["Retry-After"]) >= 1
    assert response.json()["error"]["code"] == "server_saturated"


def test_a_queue_that_would_take_longer_than_the_bound_refuses_at_once(live_server, served, settings, monkeypatch):
    settings.API_MAX_CONCURRENT_GENERATIONS, settings.API_GENERATION_QUEUE_SECONDS = 1, 10
    monkeypatch.setattr(ratelimit, "_mean_hold", 100.0)  # generations have been holding their slot 100 s
    held = ratelimit.acquire_generation_slot()
    try:
        response = _post(live_server.url)
    finally:
        held.release()
    assert response.status_code == 503 and int(response.headers["Retry-After"]) >= 100


def test_the_queue_is_first_come_first_served(settings):
    settings.API_MAX_CONCURRENT_GENERATIONS, settings.API_GENERATION_QUEUE_SECONDS = 1, 60
    order = []

    def take(name):
        slot = ratelimit.acquire_generation_slot()
        order.append(name)
        slot.release()

    held = ratelimit.acquire_generation_slot()
    try:
        waiters = []
        for n, name in enumerate("ABC", start=1):
            waiters.append(threading.Thread(target=take, args=(name,)))
            waiters[-1].start()
            for _ in range(600):  # until it is in line behind the ones before it
                if len(ratelimit._line) == n:
                    break
                time.sleep(0.01)
    finally:
        held.release()
    for waiter in waiters:
        waiter.join(timeout=60)
    assert order == ["A", "B", "C"]


def test_a_client_that_disconnects_mid_stream_leaves_the_batch(live_server, served):
    runtime = served_runtime("eqlm-demo")
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 250, "depth": 64, "temperature": 0, "stream": True}
    with httpx.stream("POST", f"{live_server.url}/v1/completions", json=body, timeout=60) as response:
        lines = response.iter_lines()
        while not next(lines).startswith("data: "):  # the first event: the generation has joined
            pass
        assert runtime.scheduler.rows == 1
    for _ in range(600):  # the server notices at its next write
        if runtime.scheduler.rows == 0:
            break
        time.sleep(0.05)
    assert runtime.scheduler.rows == 0


def test_a_cards_batched_graph_is_checked_and_served_by_its_sha256(tmp_path):
    from models_app import serving

    folder = tmp_path / "onnx"
    shutil.copytree(DEMO, folder)
    card = serving.read_card("eqlm-demo", folder, "folder")
    assert not card.error and card.file_for_sha(card.graph_sha256["step_batched"]) == folder / "step_batched.onnx"
    with open(folder / "step_batched.onnx", "ab") as graph:
        graph.write(b"\0")
    assert "step_batched" in serving.read_card("eqlm-demo", folder, "folder").error


def test_an_explicit_cards_batched_layers_are_checked_and_served_by_their_sha256(tmp_path):
    from models_app import serving

    folder = tmp_path / "onnx"
    shutil.copytree(DEMO.parent.parent / "explicit-demo" / "onnx", folder)
    card = serving.read_card("explicit-demo", folder, "folder")
    assert not card.error
    assert card.file_for_sha(card.graph_sha256["layer_11_batched"]) == folder / "layer_11_batched.onnx"
    with open(folder / "layer_03_batched.onnx", "ab") as graph:
        graph.write(b"\0")
    assert "layer_03_batched" in serving.read_card("explicit-demo", folder, "folder").error
