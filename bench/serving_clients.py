"""Serving rates for bench/serving.py: one reader on the runtime, and concurrent /v1 clients over real HTTP."""

from __future__ import annotations

import json
import statistics
import threading
import time
from dataclasses import dataclass, field

PROMPT = "The cat that the dogs chased"


def one_reader(onnx_dir, precision: str, threads: int, depth: int, tokens: int, repeats: int = 2) -> float:
    """Greedy tokens/s of one generation on the runtime alone (eqlm.generation.Generator), the best of `repeats`
    after a warm-up."""
    from eqlm.generation import GenerationRequest, Generator

    kwargs = {"threads": threads}
    if precision != "fp32":
        kwargs["precision"] = precision
    generator = Generator(onnx_dir, **kwargs)
    request = GenerationRequest(prompt=PROMPT, max_tokens=tokens, depth=depth)
    generator.generate(GenerationRequest(prompt=PROMPT, max_tokens=2, depth=depth))
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        result = generator.generate(request)
        best = max(best, result.completion_tokens / (time.perf_counter() - started))
    return best


def serve_threaded():
    """An in-process portal on loopback that serves each request in its own thread."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    class Threading(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        # socketserver listens with a backlog of 5: 8 clients that connect at once overflow it, and a dropped SYN
        # is sent again a second later (a TTFT p95 of 1.1 s against a p50 of 0.26 s). gunicorn's is 2048.
        request_queue_size = 64

    server = make_server("127.0.0.1", 0, get_wsgi_application(), server_class=Threading, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@dataclass
class Clients:
    """N concurrent streaming clients: aggregate tokens/s (all tokens over the wall-clock of the whole round) and
    each request's time to its first text chunk (seconds)."""

    clients: int
    tokens_per_s: float = 0.0
    ttft: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def ttft_ms(self, q: float) -> float:
        if not self.ttft:
            return float("nan")
        ordered = sorted(self.ttft)
        return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _stream_one(url: str, body: dict, out: Clients, counts: list[int], lock: threading.Lock, ready) -> None:
    """One streaming client. Its HTTP client is built before `ready` (a barrier the round's clock starts at): an
    httpx.Client loads the CA bundle for TLS as it is built (about 20% of the process's samples in an 8-client round,
    under py-spy), which is the client's set-up, not the portal's serving, and loopback HTTP needs no TLS."""
    import httpx

    try:
        try:
            client = httpx.Client(timeout=900, verify=False)
        finally:
            ready.wait()  # the round starts for the others even when this client could not be built
        started, first, tokens = time.perf_counter(), None, 0
        with client, client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: {"):
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
                if chunk.get("choices") and chunk["choices"][0].get("text") and first is None:
                    first = time.perf_counter() - started
    except Exception as exc:  # noqa: BLE001 - a failed client is reported in the table, not raised
        with lock:
            out.errors.append(f"{type(exc).__name__}: {exc}"[:200])
        return
    with lock:
        counts.append(tokens)
        if first is not None:
            out.ttft.append(first)


def concurrent_clients(server, slug: str, clients: int, tokens: int, depth: int, precision: str = "fp32") -> Clients:
    """`clients` greedy streaming /v1/completions at once, each for `tokens` tokens at `depth`, from a process of
    their own (as clients are: the server's interpreter holds only the server's work); the clock starts once every
    client is built."""
    import multiprocessing

    url = f"http://127.0.0.1:{server.server_port}/v1/completions"
    body = {"model": slug, "prompt": PROMPT, "max_tokens": tokens, "temperature": 0, "depth": depth, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    if precision != "fp32":
        body["precision"] = precision
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_round, (url, body, clients))


def _round(url: str, body: dict, clients: int) -> Clients:
    """One round of concurrent_clients, in the clients' process."""
    out, counts, lock = Clients(clients), [], threading.Lock()
    ready = threading.Barrier(clients + 1)
    args = (url, body, out, counts, lock, ready)
    workers = [threading.Thread(target=_stream_one, args=args) for _ in range(clients)]
    for worker in workers:
        worker.start()
    ready.wait()
    started = time.perf_counter()
    for worker in workers:
        worker.join()
    out.tokens_per_s = sum(counts) / (time.perf_counter() - started)
    return out


def rounds_of_clients(server, slug: str, clients: int, tokens: int, depth: int, precision: str, rounds: int) -> Clients:
    """`rounds` rounds of concurrent_clients: the median round's tokens/s (a round of 32 tokens lasts a fraction of a
    second, so one round's rate moves with whatever else the machine did in it) and every round's first tokens."""
    runs = [concurrent_clients(server, slug, clients, tokens, depth, precision) for _ in range(rounds)]
    out = Clients(clients, tokens_per_s=median([run.tokens_per_s for run in runs]))
    for run in runs:
        out.ttft += run.ttft
        out.errors += run.errors
    return out


def warm_up(server, slug: str, depth: int, precision: str = "fp32", clients: int = 8, tokens: int = 8) -> None:
    """One round of `clients` clients for `tokens` tokens, unmeasured: the batch's first calls at each shape grow
    onnxruntime's buffers and the process's heap (the first round of 8 ran 1-15% below the next ones), which a
    serving process does once."""
    concurrent_clients(server, slug, clients, tokens, depth, precision)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
