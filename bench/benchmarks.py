"""Benchmarks app speed: ingest rows/s and compare/table latency at 10k, 100k and 1M stored rows (SQLite).

Usage: .venv/bin/python bench/benchmarks.py [--sizes 10000 100000 1000000] [--repeat 20]

Each size uses a fresh SQLite file under var/ (deleted afterwards): synthetic rows in the generic long
format are ingested through `ingest_records` in batches (one transaction each), then the programme's
real rows and declared tables are seeded on top and the compare API and table endpoints are timed with
the cache disabled (every request recomputes from rows). Goals: ingest >= 20,000 rows/s; compare and
table endpoints <= 100 ms at 1M rows.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_INGEST = 20_000
GOAL_LATENCY_MS = 100.0
BATCH = 50_000


def synthetic_records(total: int):
    """Yield `total` generic records: 5 seeds x 4 arms per experiment, a loss curve of 496 steps + 4 scalars each."""
    per_arm = 500
    arms = ("A1", "A2", "A3", "B1")
    produced, exp = 0, 0
    while produced < total:
        for seed in range(5):
            for arm in arms:
                run = f"synth{exp:04d}/seed{seed}"
                base = {"run": run, "experiment": f"synth{exp:04d}", "arm": arm, "seed": seed,
                        "config_hash": f"{exp:064x}", "git_commit": "bench", "model_family": "tied"}  # fmt: skip
                for metric, value in (("blimp_accuracy", 0.6 + seed / 100), ("final_loss", 3.0),
                                      ("peak_memory_mb", 8000.0), ("train_time_sec", 600.0)):  # fmt: skip
                    if produced >= total:
                        return
                    yield {**base, "metric": metric, "value": value, "n": 1000}
                    produced += 1
                for step in range(per_arm - 4):
                    if produced >= total:
                        return
                    yield {**base, "metric": "train_loss", "value": 10.0 - step / 100, "step": step * 20}
                    produced += 1
        exp += 1


def timed_get(client, url: str, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code, response.content[:200])
    return statistics.median(samples), max(samples)


def run_size(size: int, repeat: int) -> dict:
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from benchmarks_app.seed import seed
    from results.models import ResultRow
    from results.records import ingest_records

    call_command("migrate", verbosity=0)
    batch, ingested, elapsed, cpu = [], 0, 0.0, 0.0
    for record in synthetic_records(size):
        batch.append(record)
        if len(batch) == BATCH:
            start, start_cpu = time.perf_counter(), time.process_time()
            ingested += ingest_records(batch, source_name=f"bench batch {ingested}")
            elapsed += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            batch = []
    if batch:
        start, start_cpu = time.perf_counter(), time.process_time()
        ingested += ingest_records(batch, source_name=f"bench batch {ingested}")
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
    seed()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    client = Client()
    compare_url = "/api/benchmarks/compare?treatment=exp32:C1&baseline=exp10_5090:A1&metric=blimp_accuracy"
    synth_url = "/api/benchmarks/compare?treatment=synth0000:A3&baseline=synth0000:A1&metric=blimp_accuracy"
    results = {
        "rows": ResultRow.objects.count(),
        "ingest_rows_per_s": ingested / elapsed if elapsed else float("nan"),
        "ingest_rows_per_cpu_s": ingested / cpu if cpu else float("nan"),
        "load_average": os.getloadavg()[0],
        "compare_f45": timed_get(client, compare_url, repeat),
        "compare_synthetic": timed_get(client, synth_url, repeat),
        "table_f45": timed_get(client, "/api/benchmarks/tables/f45-equal-compute/", repeat),
        "table_budget_sweep": timed_get(client, "/api/benchmarks/tables/f24-budget-sweep/", repeat),
        "table_adaptive": timed_get(client, "/api/benchmarks/tables/exp31-adaptive-depth/", repeat),
        "tables_list_all9": timed_get(client, "/api/benchmarks/tables/", max(3, repeat // 4)),
    }
    return results


def child(size: int, repeat: int) -> int:
    """Measure one size in this process (DATABASE_URL already points at a fresh file)."""
    import json

    import django
    from django.conf import settings

    django.setup()
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    print("RESULT " + json.dumps(run_size(size, repeat)))
    return 0


def main() -> int:
    import json
    import subprocess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return child(args.one, args.repeat)
    print(f"{'rows':>9} {'ingest rows/s':>14} {'endpoint':<20} {'median ms':>10} {'max ms':>8}  goal", flush=True)
    for size in args.sizes:
        db_path = ROOT / "var" / f"bench_benchmarks_{os.getpid()}_{size}.sqlite3"
        db_path.unlink(missing_ok=True)
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{db_path}", "DJANGO_SETTINGS_MODULE": "portal.settings",
               "LOG_LEVEL": "WARNING"}  # fmt: skip
        try:
            out = subprocess.run(
                [sys.executable, __file__, "--one", str(size), "--repeat", str(args.repeat)],
                env=env, capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
        except subprocess.CalledProcessError as exc:
            print(exc.stdout, exc.stderr, file=sys.stderr)
            return 1
        finally:
            db_path.unlink(missing_ok=True)
        res = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
        ok = "ok" if res["ingest_rows_per_s"] >= GOAL_INGEST else "MISSED"
        print(f"{res['rows']:>9,} {res['ingest_rows_per_s']:>14,.0f} {'(ingest)':<20} {'':>10} {'':>8}  "
              f">= {GOAL_INGEST:,} rows/s: {ok} (ratio {res['ingest_rows_per_s'] / GOAL_INGEST:.2f}; "
              f"{res['ingest_rows_per_cpu_s']:,.0f} rows per CPU-second; "
              f"load average {res['load_average']:.1f})")  # fmt: skip
        for name in ("compare_f45", "compare_synthetic", "table_f45", "table_budget_sweep", "table_adaptive",
                     "tables_list_all9"):  # fmt: skip
            median, worst = res[name]
            goal = "" if name == "tables_list_all9" else (
                f"<= {GOAL_LATENCY_MS:.0f} ms: {'ok' if median <= GOAL_LATENCY_MS else 'MISSED'} "
                f"(ratio {median / GOAL_LATENCY_MS:.2f})")  # fmt: skip
            print(f"{'':>9} {'':>14} {name:<20} {median:>10.1f} {worst:>8.1f}  {goal}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
