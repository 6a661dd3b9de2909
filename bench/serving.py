"""Serving at the machine's limits: a served model's tokens/s as fractions of the read-bandwidth and compute bounds.

    .venv/bin/python bench/serving.py [--models anytime explicit] [--tokens 32] [--rounds 3] [--threads 2]
        [--folder DIR]

First the limits, on the serving threads (onnxruntime's CPU provider, `--threads` intra-op threads, graphs built
with onnx.helper; bench/serving_limits.py; each the fastest of its runs in a second):
- read bandwidth: an fp32 GEMV (one row times MatMul initializers) over a buffer of each part's own size: the
  block (one EqLM iteration's weights, in the block's own matrix shapes; an explicit transformer's layers, all of
  them), the tied head (one [d, V] matrix), and for reference one matrix 4x the L3;
- compute: the block's MatMuls (its own weight shapes) at batch 1, 2, 4 and 8 (int8: the same MatMuls quantised by
  onnxruntime.quantization.quantize_dynamic).

Then, for the full-size random-weight anytime EqLM (120.7M parameters) and the 124M explicit baseline (built from
eqlm.programme.config published_config, imported and exported through the portal's own path, as
bench/programme_model.py does), per precision (int8 when the manifest lists `_int8` graphs):
- the bandwidth bound, tokens/s = 1 / (depth x block bytes / block bandwidth + head bytes / head bandwidth);
- one reader's greedy tokens/s on the runtime (eqlm.generation.Generator, `--threads`) and its fraction of it;
- 1, 2, 4 and 8 concurrent greedy streaming /v1/completions clients (depth 12, from a process of their own over real
  HTTP to a threaded server in the bench's process; after an unmeasured round of 8 clients of 8 tokens): aggregate
  tokens/s, the median of `--rounds` rounds (3), and its fraction of the roofline at that batch, min(compute,
  bandwidth x arithmetic intensity); p50 and p95 time to first token under 8 clients, over every round's requests.
Last, the 80k demo's bench/generate.py figures, in the same run (the small models must not get slower).
The load average is printed before and after. Targets (one reader >= 60% of the bandwidth bound; 8 clients >= 3x
one client and >= 50% of the batch-8 roofline; int8 one reader >= 2.5x fp32) are marked met or NOT met.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import serving_clients as clients_mod  # noqa: E402
from bench import serving_limits as limits  # noqa: E402

DEPTH = 12
BATCHES = (1, 2, 4, 8)


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def set_up_django(folder: Path, concurrent: int, threads: int) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        VAR_DIR=str(folder),
        MEDIA_ROOT=str(folder / "media"),
        DATABASE_URL=f"sqlite:///{folder / 'bench.sqlite3'}",
        WARM_UP_MODEL="0",
        API_REQUIRE_KEY="0",
        API_MAX_CONCURRENT_GENERATIONS=str(concurrent),
        API_ONNX_THREADS=str(threads),
        API_ANON_REQUESTS_PER_MINUTE="1000000",
        API_ANON_TOKENS_PER_MINUTE="100000000",
        LOG_LEVEL="WARNING",
    )
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0)


def served_model(name: str, folder: Path):
    """The registered, exported row of the random-weight programme model `name` (kept in `folder` for a rerun)."""
    from bench.programme_model import build
    from models_app.exports import export_registered_model
    from models_app.imports import register_checkpoint
    from models_app.models import RegisteredModel

    slug = f"bench-{name}"
    row = RegisteredModel.objects.filter(slug=slug).first()
    if row is None:
        path, seconds = build(name, folder)
        print(f"{name}: built in {seconds:.0f} s", flush=True)
        row, _ = register_checkpoint(path, slug=slug)
        path.unlink()
    return export_registered_model(row.pk)


def measure_limits(costs: dict[str, limits.Costs], width: int, threads: int) -> dict:
    """Bandwidth over each part's own bytes per token (an EqLM's one block, an explicit transformer's layers, the
    head) and over 4x the L3; GEMM FLOP/s of the block's shapes per batch."""
    l3 = limits.l3_bytes()
    out = {"l3": l3, "bandwidth": {}, "gemm": {}}
    sizes = {}
    for p, cost in costs.items():
        layers = cost.block.shapes * (cost.depth if cost.layers else 1)
        sizes[f"block {p}"] = limits.buffer_shapes(cost.block_working_set, width, layers)
        sizes[f"head {p}"] = limits.buffer_shapes(cost.head.nbytes, width)
    sizes["4x L3"] = limits.buffer_shapes(4 * l3, width)
    for key, shapes in sizes.items():
        nbytes = 4 * sum(k * n for k, n in shapes)
        out["bandwidth"][key] = limits.gemv_bandwidth(shapes, threads)
        print(f"  GEMV {key:<14} {nbytes / 1e6:>8.1f} MB  {out['bandwidth'][key] / 1e9:6.1f} GB/s", flush=True)
    for p, cost in costs.items():
        for batch in BATCHES:
            rate = limits.gemm_flops(cost.block.shapes, batch, threads, int8=p == "int8")
            out["gemm"][(f"block {p}", batch)] = rate
            print(f"  GEMM block {p:<8} batch {batch}  {rate / 1e9:6.1f} GFLOP/s", flush=True)
    return out


def measure_model(name: str, folder: Path, server, args) -> list[dict]:
    """One row per precision of model `name`."""
    import json

    from models_app import serving

    row = served_model(name, folder)
    onnx_dir = Path(row.onnx_dir)
    manifest = json.loads((onnx_dir / "manifest.json").read_text())
    precisions = [p for p in manifest.get("precisions", ["fp32"]) if p in ("fp32", "int8")]
    costs = {p: limits.model_costs(onnx_dir, manifest, DEPTH, p) for p in precisions}
    costs = {p: c for p, c in costs.items() if c is not None}
    print(f"\n{name} ({row.slug}): d_model {manifest['d_model']}, precisions {', '.join(costs)}", flush=True)
    measured = measure_limits(costs, int(manifest["d_model"]), args.threads)
    serving.reset()
    rows = []
    for precision, cost in costs.items():
        rows.append(measure_precision(name, row.slug, onnx_dir, precision, cost, measured, server, args))
    return rows


def measure_precision(name, slug, onnx_dir, precision, cost, measured, server, args) -> dict:
    bandwidth = measured["bandwidth"]
    block_bw, head_bw = bandwidth[f"block {precision}"], bandwidth[f"head {precision}"]
    bound = limits.bandwidth_bound(cost, block_bw, head_bw)
    row = {"model": name, "precision": precision, "cost": cost, "block_bw": block_bw, "head_bw": head_bw,
           "ref_bw": bandwidth["4x L3"], "bound": bound, "load_before": load_text()}  # fmt: skip
    row["gemm"] = {b: measured["gemm"][(f"block {precision}", b)] for b in BATCHES}
    row["one_reader"] = clients_mod.one_reader(onnx_dir, precision, args.threads, DEPTH, args.tokens)
    print(f"  {precision}: one reader {row['one_reader']:.2f} tokens/s, bound {bound:.2f}", flush=True)
    clients_mod.warm_up(server, slug, DEPTH, precision, clients=max(BATCHES))
    row["clients"] = {}
    for n in BATCHES:
        result = clients_mod.rounds_of_clients(server, slug, n, args.tokens, DEPTH, precision, args.rounds)
        row["clients"][n] = result
        roof = limits.roofline(cost, n, row["gemm"][n], bound)
        note = f", {len(result.errors)} failed: {result.errors[0]}" if result.errors else ""
        print(f"  {n} clients: {result.tokens_per_s:.2f} tokens/s, roofline {roof:.2f}{note}", flush=True)
    row["load_after"] = load_text()
    return row


def print_table(rows: list[dict]) -> None:
    print("\n| model | precision | block bw GB/s | head bw GB/s | 4x L3 bw GB/s | GEMM GFLOP/s b1 / b8 "
          "| MB per token | GFLOP per token | bandwidth bound tok/s | one reader tok/s (of bound) "
          "| /v1 1 / 2 / 4 / 8 clients tok/s (of roofline) | TTFT p50 / p95 ms, 8 clients |")  # fmt: skip
    print("|" + "---|" * 12)
    for row in rows:
        cost, gemm, clients = row["cost"], row["gemm"], row["clients"]
        rates = []
        for n in BATCHES:
            roof = limits.roofline(cost, n, gemm[n], row["bound"])
            rates.append(f"{clients[n].tokens_per_s:.2f} ({clients[n].tokens_per_s / roof:.0%})")
        eight = clients[8]
        print(f"| {row['model']} | {row['precision']} | {row['block_bw'] / 1e9:.1f} | {row['head_bw'] / 1e9:.1f} "
              f"| {row['ref_bw'] / 1e9:.1f} | {gemm[1] / 1e9:.1f} / {gemm[8] / 1e9:.1f} "
              f"| {cost.bytes_per_token / 1e6:.0f} | {cost.flops_per_token / 1e9:.2f} | {row['bound']:.2f} "
              f"| {row['one_reader']:.2f} ({row['one_reader'] / row['bound']:.0%}) | {' / '.join(rates)} "
              f"| {eight.ttft_ms(0.5):.0f} / {eight.ttft_ms(0.95):.0f} |")  # fmt: skip


def print_targets(rows: list[dict]) -> None:
    def mark(ok: bool) -> str:
        return "met" if ok else "NOT met"

    fp32 = {r["model"]: r for r in rows if r["precision"] == "fp32"}
    print("\ntargets")
    for row in rows:
        head = f"  {row['model']} {row['precision']}:"
        if row["precision"] == "fp32":
            share = row["one_reader"] / row["bound"]
            print(f"{head} one reader {share:.0%} of the bandwidth bound (>= 60%): {mark(share >= 0.6)}")
        one, eight = row["clients"][1].tokens_per_s, row["clients"][8].tokens_per_s
        roof = limits.roofline(row["cost"], 8, row["gemm"][8], row["bound"])
        print(
            f"{head} 8 clients {eight / max(one, 1e-9):.2f}x one client (>= 3x): {mark(eight >= 3 * one)}; "
            f"{eight / roof:.0%} of the batch-8 roofline (>= 50%): {mark(eight >= 0.5 * roof)}"
        )
        if row["precision"] == "int8" and row["model"] in fp32:
            ratio = row["one_reader"] / fp32[row["model"]]["one_reader"]
            print(f"{head} one reader {ratio:.2f}x fp32 (>= 2.5x): {mark(ratio >= 2.5)}")
    for row in rows:
        print(f"  {row['model']} {row['precision']}: {row['load_before']} before, {row['load_after']} after")


def demo_figures(tokens: int) -> None:
    """bench/generate.py on the 80k demo, in a child process on this run's scratch database."""
    print("\neqlm-demo: bench/generate.py (same run)", flush=True)
    script = [sys.executable, str(ROOT / "bench" / "generate.py"), "--tokens", str(tokens)]
    subprocess.run(script, cwd=ROOT, env=dict(os.environ), check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=["anytime", "explicit"], choices=["anytime", "explicit"])
    parser.add_argument("--tokens", type=int, default=32, help="greedy tokens per generation")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each client count (their median)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="the serving threads")
    parser.add_argument("--folder", type=Path, help="keep the built models here (reused by a later run)")
    parser.add_argument("--demo-tokens", type=int, default=128, help="bench/generate.py's tokens on eqlm-demo")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo's bench/generate.py figures")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="eqlm-serving-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{load_text()} at the start; {args.threads} serving threads; depth {DEPTH}; {args.tokens} tokens")
    rows = []
    try:
        set_up_django(folder, max(BATCHES), args.threads)
        server = clients_mod.serve_threaded()
        for name in args.models:
            rows += measure_model(name, folder, server, args)
        server.shutdown()
        if rows:
            print_table(rows)
            print_targets(rows)
        if not args.no_demo:
            demo_figures(args.demo_tokens)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n{load_text()} at the end")


if __name__ == "__main__":
    main()
