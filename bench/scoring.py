"""Prompt-scoring throughput against generation speed at the same depth, through /v1 and on the runtime.

    .venv/bin/python bench/scoring.py [--model eqlm-demo] [--depth 12] [--repeats 5] [--tokens 128]

Scoring is `echo: true, max_tokens: 0, logprobs: 1` on full-context windows of held-out text (one batched solve
over the whole prompt); generation is greedy `max_tokens` tokens from a short prompt. Both go over real HTTP to an
in-process server (POST /v1/completions), then again on the ONNX runtime alone (eqlm.scoring.score_prompt and
Generator.generate), and the ratio scoring bytes/s : generation tokens/s is printed. Goal: >= 10x at
depth 12.
"""

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from eqlm.model_files import KJV_SLICE  # noqa: E402

PROMPT = "And it came to pass, when"
GOAL = 10.0


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def windows(text: bytes, size: int, count: int) -> list[bytes]:
    """`count` consecutive windows of `size` bytes, ASCII-safe cuts (the held-out text is ASCII)."""
    return [text[i * size : (i + 1) * size] for i in range(count)]


def over_http(model: str, depth: int, prompts: list[bytes], tokens: int, repeats: int) -> tuple[float, float]:
    """(scoring bytes/s, generation tokens/s), medians over requests, through POST /v1/completions."""
    import httpx
    from django.core.wsgi import get_wsgi_application

    server = make_server(
        "127.0.0.1", 0, get_wsgi_application(), server_class=_ThreadingServer, handler_class=_QuietHandler
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1/completions"
    scoring, generation = [], []
    try:
        with httpx.Client(timeout=120) as client:
            warm = {"model": model, "prompt": PROMPT, "max_tokens": 2, "depth": depth, "temperature": 0}
            client.post(url, json=warm).raise_for_status()  # loads the model
            for _ in range(repeats):
                for prompt in prompts:
                    body = {"model": model, "prompt": list(prompt), "max_tokens": 0, "echo": True, "logprobs": 1}
                    started = time.perf_counter()
                    response = client.post(url, json={**body, "depth": depth})
                    elapsed = time.perf_counter() - started
                    response.raise_for_status()
                    scored = len(response.json()["choices"][0]["logprobs"]["tokens"])
                    assert scored == len(prompt), (scored, len(prompt))
                    scoring.append(len(prompt) / elapsed)
                body = {"model": model, "prompt": PROMPT, "max_tokens": tokens, "temperature": 0, "depth": depth}
                started = time.perf_counter()
                response = client.post(url, json=body)
                elapsed = time.perf_counter() - started
                response.raise_for_status()
                generation.append(response.json()["usage"]["completion_tokens"] / elapsed)
    finally:
        server.shutdown()
    return statistics.median(scoring), statistics.median(generation)


def on_runtime(generator, depth: int, prompts: list[bytes], tokens: int, repeats: int) -> tuple[float, float]:
    """(scoring bytes/s, generation tokens/s), medians, on the ONNX runtime without HTTP."""
    from eqlm.generation import GenerationRequest
    from eqlm.scoring import score_prompt

    scoring, generation = [], []
    for _ in range(repeats):
        for prompt in prompts:
            started = time.perf_counter()
            score_prompt(generator.model, list(prompt), depth)
            scoring.append(len(prompt) / (time.perf_counter() - started))
        started = time.perf_counter()
        result = generator.generate(GenerationRequest(prompt=PROMPT, max_tokens=tokens, depth=depth))
        generation.append(result.completion_tokens / (time.perf_counter() - started))
    return statistics.median(scoring), statistics.median(generation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="eqlm-demo")
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--text", default=str(KJV_SLICE))
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ.setdefault("API_ANON_REQUESTS_PER_MINUTE", "100000")
    os.environ.setdefault("API_ANON_TOKENS_PER_MINUTE", "100000000")
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from models_app.serving import resolve

    generator = resolve(args.model).runtime()
    context = generator.max_positions
    prompts = windows(Path(args.text).read_bytes(), context, args.windows)
    print(
        f"model {args.model}: context {context} bytes, depth {args.depth}, onnxruntime CPU, 1 thread; scoring "
        f"{len(prompts)} held-out windows of {context} bytes (echo, max_tokens 0, logprobs 1); generating "
        f"{args.tokens} greedy tokens; medians of {args.repeats} rounds"
    )
    rows = [
        ("POST /v1/completions (HTTP)", *over_http(args.model, args.depth, prompts, args.tokens, args.repeats)),
        ("eqlm.runtime (no HTTP)", *on_runtime(generator, args.depth, prompts, args.tokens, args.repeats)),
    ]
    print(f"\n{'path':<30} {'scoring bytes/s':>16} {'generation tokens/s':>20} {'ratio':>7}")
    for name, score_rate, gen_rate in rows:
        print(f"{name:<30} {score_rate:>16.0f} {gen_rate:>20.1f} {score_rate / gen_rate:>6.1f}x")
    ratio = rows[0][1] / rows[0][2]
    print(
        f"\ngoal: scoring >= {GOAL:.0f}x generation at depth {args.depth} through /v1:",
        "met" if ratio >= GOAL else "NOT met",
    )


if __name__ == "__main__":
    main()
