"""Streaming under load: N streaming generations at once all finish, interleaved; past the cap, 503 + Retry-After.

    .venv/bin/python bench/streams.py [--streams 8] [--extra 4] [--tokens 160] [--json out.json]

Starts the portal under gunicorn (one process, threads, API_MAX_CONCURRENT_GENERATIONS = --streams) and opens
--streams streaming /v1/completions at once. Checks that every stream ends with [DONE], that they ran
interleaved (every stream had its first token before any stream finished) and how evenly (slowest/fastest
tokens per second). While they run, --extra more requests must be refused at once with 503 and a Retry-After
header, never left hanging. Exits 1 when any of that fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPT = "And it came to pass, when"


def one_stream(base: str, tokens: int, record: dict, started: threading.Barrier) -> None:
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": tokens, "stream": True, "depth": 8}
    started.wait()
    t0 = time.monotonic()
    record.update(start=t0, chunks=[], status=None, done=False)
    try:
        with httpx.stream("POST", base + "/v1/completions", json=body, timeout=120) as response:
            record["status"] = response.status_code
            for line in response.iter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    record["done"] = True
                    break
                record["chunks"].append(time.monotonic())
    except httpx.HTTPError as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
    record["end"] = time.monotonic()


def refused(base: str, tokens: int, record: dict) -> None:
    body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": tokens, "stream": True}
    t0 = time.monotonic()
    try:
        response = httpx.post(base + "/v1/completions", json=body, timeout=10)
        record.update(status=response.status_code, retry_after=response.headers.get("Retry-After"))
        record["error_shape"] = response.status_code != 503 or "error" in response.json()
    except httpx.HTTPError as exc:
        record.update(status=None, error=f"{type(exc).__name__}")
    record["seconds"] = time.monotonic() - t0


def run_streams(base: str, streams: int, extra: int, tokens: int) -> dict:
    records = [{} for _ in range(streams)]
    barrier = threading.Barrier(streams)
    threads = [threading.Thread(target=one_stream, args=(base, tokens, r, barrier)) for r in records]
    for thread in threads:
        thread.start()
    # Once every stream has its first token, the cap is full: the extra requests must be refused at once.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(r.get("chunks") for r in records):
        time.sleep(0.02)
    beyond = [{} for _ in range(extra)]
    extra_threads = [threading.Thread(target=refused, args=(base, tokens, r)) for r in beyond]
    for thread in extra_threads:
        thread.start()
    for thread in extra_threads + threads:
        thread.join(150)
    finished = [r for r in records if r.get("done") and r.get("status") == 200]
    first_finish = min((r["end"] for r in records if "end" in r), default=0)
    interleaved = all(r.get("chunks") and r["chunks"][0] < first_finish for r in records)
    rates = [len(r["chunks"]) / max(1e-6, r["chunks"][-1] - r["start"]) for r in records if r.get("chunks")]
    refusals = [r for r in beyond if r.get("status") == 503 and r.get("retry_after") and r.get("error_shape")]
    return {
        "streams": streams,
        "finished": len(finished),
        "interleaved": interleaved,
        "tokens_per_stream": [len(r.get("chunks", [])) for r in records],
        "tokens_per_second_min": round(min(rates), 1) if rates else 0,
        "tokens_per_second_max": round(max(rates), 1) if rates else 0,
        "fairness": round(min(rates) / max(rates), 2) if rates else 0,
        "wall_seconds": round(max((r.get("end", 0) for r in records), default=0) - min(r["start"] for r in records), 1),
        "extra": extra,
        "refused_503_with_retry_after": len(refusals),
        "slowest_refusal_seconds": round(max((r.get("seconds", 99) for r in beyond), default=0), 2),
        "extra_statuses": [r.get("status") for r in beyond],
        "errors": [r["error"] for r in records + beyond if "error" in r],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--extra", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=160)
    parser.add_argument("--json")
    args = parser.parse_args()
    from bench.server import portal_server

    cap = str(args.streams)
    with portal_server(workers=1, threads=args.streams + args.extra + 4, API_MAX_CONCURRENT_GENERATIONS=cap) as base:
        result = run_streams(base, args.streams, args.extra, args.tokens)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    ok = (
        result["finished"] == args.streams
        and result["interleaved"]
        and result["refused_503_with_retry_after"] == args.extra
        and result["slowest_refusal_seconds"] < 5
    )
    print(
        f"{'PASS' if ok else 'FAIL'} streams: {result['finished']}/{args.streams} finished, interleaved "
        f"{result['interleaved']}, fairness {result['fairness']}, {result['refused_503_with_retry_after']}/"
        f"{args.extra} beyond the cap refused with 503 + Retry-After in <= {result['slowest_refusal_seconds']} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
