"""Server-side generation speed of the demo EqLM: tokens/s by depth, cold vs warm start, time to first streamed token.

    .venv/bin/python bench/generate.py [--model eqlm-demo] [--tokens 128] [--tol 0.01]

Prints tokens/s at depths 4/8/12 on the ONNX generation service (onnxruntime, one thread, greedy), mean
iterations per token with adaptive halting cold vs warm start (and how often greedy tokens agree), and the time
to the first streamed token of POST /v1/completions over real HTTP to an in-process server. Goals (issue 7):
>= 100 tokens/s server-side, first streamed token <= 100 ms.
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
PROMPT = "And it came to pass, when"


def tokens_per_second(generator, depth: int, tokens: int, repeats: int) -> float:
    from eqlm.generation import GenerationRequest

    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        result = generator.generate(GenerationRequest(prompt=PROMPT, max_tokens=tokens, depth=depth))
        best = max(best, result.completion_tokens / (time.perf_counter() - started))
    return best


def cold_vs_warm(generator, tol: float, cap: int, tokens: int) -> tuple[float, float, float]:
    from eqlm.generation import GenerationRequest

    runs = {}
    for warm in (False, True):
        runs[warm] = generator.generate(
            GenerationRequest(prompt=PROMPT, max_tokens=tokens, depth=cap, tol=tol, warm_start=warm)
        )
    cold, warm = runs[False], runs[True]
    agree = sum(a.token_id == b.token_id for a, b in zip(cold.tokens, warm.tokens, strict=False))
    return cold.mean_iterations, warm.mean_iterations, agree / max(1, len(cold.tokens))


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def first_streamed_token_ms(depth: int, samples: int) -> list[float]:
    """Milliseconds from sending a streaming /v1/completions request to receiving its first text chunk."""
    import json

    import httpx
    from django.core.wsgi import get_wsgi_application

    server = make_server(
        "127.0.0.1", 0, get_wsgi_application(), server_class=_ThreadingServer, handler_class=_QuietHandler
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1/completions"
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 16, "temperature": 0, "depth": depth, "stream": True}
    timings = []
    try:
        with httpx.Client(timeout=60) as client:
            for i in range(samples + 1):
                started = time.perf_counter()
                with client.stream("POST", url, json=body) as response:
                    response.raise_for_status()
                    first = None
                    for line in response.iter_lines():
                        if first is None and line.startswith("data: {"):
                            chunk = json.loads(line[6:])
                            if chunk["choices"] and chunk["choices"][0]["text"]:
                                first = (time.perf_counter() - started) * 1000
                if i:  # the first request loads the model
                    timings.append(first)
    finally:
        server.shutdown()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="eqlm-demo", help="the bundled model (models/<id>/) served as the default")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tol", type=float, default=0.01)
    parser.add_argument("--cap", type=int, default=32)
    parser.add_argument("--ttft-samples", type=int, default=10)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ["DEFAULT_MODEL"] = args.model
    os.environ.setdefault("API_ANON_REQUESTS_PER_MINUTE", "100000")
    os.environ.setdefault("API_ANON_TOKENS_PER_MINUTE", "100000000")
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from models_app.serving import resolve

    generator = resolve().runtime()
    manifest = generator.manifest
    print(
        f"model {generator.model_id}: {manifest.get('num_params', '?')} parameters, d_model {manifest['d_model']}, "
        f"context {manifest['max_positions']}; onnxruntime CPU, 1 thread; prompt {len(PROMPT.encode())} bytes, "
        f"{args.tokens} greedy tokens"
    )
    tokens_per_second(generator, 4, 8, 1)  # warm up the sessions
    print(f"\nserver generation speed (best of {args.repeats})")
    print(f"{'depth':>5}  {'tokens/s':>9}  {'ms/token':>8}")
    speeds = {}
    for depth in (4, 8, 12):
        speeds[depth] = tokens_per_second(generator, depth, args.tokens, args.repeats)
        print(f"{depth:>5}  {speeds[depth]:>9.1f}  {1000 / speeds[depth]:>8.2f}")

    cold, warm, agreement = cold_vs_warm(generator, args.tol, args.cap, args.tokens)
    print(f"\nadaptive halting (tol {args.tol}, cap {args.cap}): mean iterations per token")
    print(f"  cold start {cold:.2f}   warm start {warm:.2f}   ({(warm - cold) / cold:+.1%})")
    print(f"  greedy tokens agreeing cold vs warm: {agreement:.1%}")

    ttft = first_streamed_token_ms(8, args.ttft_samples)
    print(f"\ntime to first streamed token, POST /v1/completions stream=true depth 8 over HTTP (n={len(ttft)}):")
    print(f"  median {statistics.median(ttft):.1f} ms, max {max(ttft):.1f} ms")

    print("\ngoals: >= 100 tokens/s at every depth:", "met" if min(speeds.values()) >= 100 else "NOT met")
    print("       first streamed token <= 100 ms (median):", "met" if statistics.median(ttft) <= 100 else "NOT met")


if __name__ == "__main__":
    main()
