"""Load: N simulated users (default 50) for S seconds (default 60) against gunicorn with 2 workers, on loopback.

    .venv/bin/python bench/load.py [--users 50] [--seconds 60] [--url http://127.0.0.1:8000] [--json out.json]

Users arrive spread over the first 1.5 s (a ramp, not one burst of 50 at t=0). Each user loops: pick a request
from the mix (pages, table APIs, the findings API, lab solves, /v1/models), send it, wait a think time of 0.5-1.5 s.
Without --url the script starts its own portal (scratch SQLite, seeded; bench/server.py).
Prints p50/p95/p99 per endpoint and exits 1 on any 5xx or failed connection.
Goal (issue 9): zero 5xx; p95 <= 150 ms for pages and table APIs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SOLVE = {"game": "biased_rps", "solver": "qre", "params": {"lambda": 10}}


def request_mix(tables: list[str], findings: list[str]) -> list[tuple[str, str, str, dict | None, int]]:
    """(endpoint name, method, path, json body, weight): what a reader of the portal does most."""
    table = tables[0] if tables else "exp13"
    return [
        ("page /", "GET", "/", None, 6),
        ("page /findings/", "GET", "/findings/", None, 8),
        ("page /findings/<code>/", "GET", "/findings/{finding}/", None, 8),
        ("page /benchmarks/", "GET", "/benchmarks/", None, 6),
        ("page /benchmarks/<table>/", "GET", "/benchmarks/{table}/", None, 8),
        ("page /lab/", "GET", "/lab/", None, 4),
        ("page /council/", "GET", "/council/", None, 4),
        ("page /models/", "GET", "/models/", None, 3),
        ("api /api/findings/", "GET", "/api/findings/", None, 6),
        ("api /api/benchmarks/tables/<table>/", "GET", f"/api/benchmarks/tables/{table}/", None, 8),
        ("api /api/results/", "GET", "/api/results/?experiment=exp13_contraction_at_width", None, 4),
        ("api /api/lab/solve", "POST", "/api/lab/solve", SOLVE, 6),
        ("api /api/health", "GET", "/api/health", None, 2),
        ("api /v1/models", "GET", "/v1/models", None, 3),
    ]


def discover(base: str) -> tuple[list[str], list[str]]:
    with httpx.Client(base_url=base, timeout=30) as client:
        tables = [t["slug"] for t in client.get("/api/benchmarks/tables/").json().get("tables", [])]
        body = client.get("/api/findings/").json()
        findings = [finding["code"] for finding in body.get("results", [])]
    return tables, findings


async def user(client, mix, weights, tables, findings, stop_at, samples, rng):
    await asyncio.sleep(rng.uniform(0, 1.5))  # users arrive spread over one think time, not as one burst at t=0
    while time.monotonic() < stop_at:
        name, method, path, body, _ = rng.choices(mix, weights=weights)[0]
        path = path.format(table=rng.choice(tables or ["exp13"]), finding=rng.choice(findings or ["F1"]))
        started = time.perf_counter()
        try:
            response = await client.request(method, path, json=body)
            status = response.status_code
        except httpx.HTTPError as exc:
            status = f"error: {type(exc).__name__}"
        samples.setdefault(name, []).append((time.perf_counter() - started, status))
        await asyncio.sleep(rng.uniform(0.5, 1.5))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summarise(samples: dict) -> list[dict]:
    rows = []
    for name, hits in sorted(samples.items()):
        times = [t * 1000 for t, _ in hits]
        statuses = [s for _, s in hits]
        rows.append(
            {
                "endpoint": name,
                "requests": len(hits),
                "5xx": sum(1 for s in statuses if isinstance(s, int) and s >= 500),
                "failed": sum(1 for s in statuses if not isinstance(s, int)),
                "other_4xx": sum(1 for s in statuses if isinstance(s, int) and 400 <= s < 500),
                "p50_ms": round(percentile(times, 0.50), 1),
                "p95_ms": round(percentile(times, 0.95), 1),
                "p99_ms": round(percentile(times, 0.99), 1),
                "mean_ms": round(statistics.fmean(times), 1),
            }
        )
    return rows


async def run_load(base: str, users: int, seconds: float, seed: int = 9) -> dict:
    import os

    load_average = round(os.getloadavg()[0], 2)
    tables, findings = discover(base)
    mix = request_mix(tables, findings)
    weights = [m[4] for m in mix]
    samples: dict[str, list] = {}
    limits = httpx.Limits(max_connections=users + 10, max_keepalive_connections=users + 10)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        stop_at = time.monotonic() + seconds
        started = time.monotonic()
        await asyncio.gather(
            *(
                user(client, mix, weights, tables, findings, stop_at, samples, random.Random(seed + i))
                for i in range(users)
            )
        )
        elapsed = time.monotonic() - started
    rows = summarise(samples)
    total = sum(r["requests"] for r in rows)
    return {
        "users": users,
        "load_average": load_average,
        "seconds": round(elapsed, 1),
        "requests": total,
        "requests_per_second": round(total / elapsed, 1),
        "5xx": sum(r["5xx"] for r in rows),
        "failed": sum(r["failed"] for r in rows),
        "endpoints": rows,
    }


def print_report(result: dict) -> None:
    rate = result["requests_per_second"]
    print(f"{result['users']} users, {result['seconds']} s: {result['requests']} requests ({rate}/s), ", end="")
    print(f"5xx {result['5xx']}, failed connections {result['failed']}")
    print(f"{'endpoint':44} {'n':>6} {'5xx':>4} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for r in result["endpoints"]:
        print(f"{r['endpoint']:44} {r['requests']:>6} {r['5xx']:>4} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['p99_ms']:>8}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--url", help="an already running portal (default: start gunicorn with 2 workers)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="write the result here as JSON")
    args = parser.parse_args()
    if args.url:
        result = asyncio.run(run_load(args.url, args.users, args.seconds))
    else:
        from bench.server import portal_server

        with portal_server(workers=args.workers) as base:
            result = asyncio.run(run_load(base, args.users, args.seconds))
            result["server"] = f"gunicorn, {args.workers} sync workers, scratch SQLite (seeded), loopback"
    print_report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    ok = result["5xx"] == 0 and result["failed"] == 0
    print(
        ("PASS" if ok else "FAIL")
        + f" load: {result['requests']} requests, {result['5xx']} 5xx, {result['failed']} failed"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
