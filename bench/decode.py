"""Halting and warm start on a model: adaptive (tol, cap 64) against fixed depth 64 in the same run, cold and warm.

Usage: .venv/bin/python bench/decode.py [--model eqlm-demo] [--tol 0.01] [--cap 64] [--prompts 40] [--tokens 25]
       [--solver picard] [--bpb-windows 16] [--heldout] [--basins 2] [--kl-tol 0.01 0.001] [--rounds 1] [--json]
       [--onnx-dir DIR] [--path-depths 64 128] [--breakdown]

Three decoding modes on the same prompts (the starts of lines of the committed held-out slice), greedy, through the
server's generation service (eqlm/generation.py, onnxruntime): fixed depth 64; adaptive halting at tol with cap 64
(cold start); the same with warm start. Each --kl-tol adds a row: cold adaptive halting by the KL rule (halt "kl":
stop once the KL between successive iterations' next-byte distributions is below that tol, in nats) with the same
cap, held to the same halting target as the residual rule, and a row of the warm start under that rule, held to the
warm start's target against it. Iterations per token are averaged over the tokens after
the first (the first comes from the cold prompt pass in every mode); tokens/s is generated tokens over wall-clock
seconds, prompt pass included (with --rounds N, the fastest of N interleaved rounds: on shared CPUs one round's
timing mostly measures the neighbours). Bits/byte is measured on non-overlapping 256-byte windows of held-out text,
teacher-forced: fixed depth and cold adaptive halting as one batched solve per window (eqlm/convergence.py for the
residual rule, eqlm/decoder.process for the KL rule; both identical to decoding with the per-iteration cache), warm
start by decoding the window one byte at a time (each position starts from the previous position's final state and
iterates against the solved states before it), as generation does.
--heldout uses the whole held-out slice of the corpus (needs Debian's bible-kjv) instead of the committed 4 KB
slice. Every prompt whose warm continuation leaves the cold one is diagnosed at the first token they differ (the
settled context's unconverged positions, and the choice from zero against it). --basins diagnoses a warm start that
misses: one position at a time, iterated against its context's solved states from four starts, and the share of each
that reaches the joint fixed point. --path-depths checks free-running path independence: at each of those fixed
depths the same prompts are decoded greedily from the zero start and from the noise start (N(0, 1), seed 0: the
API's `start: "noise"`), and the share of greedy tokens they agree on is printed; at depth 64 it is a target. Each
prompt whose two continuations part is listed with the token where they part and how close that decision was.
--breakdown splits each halting row's bits/byte cost against fixed depth by the iteration its positions halted at.

Targets, printed part by part and as a whole (a target holds only when every part does):
- halting pays: tol 0.01 (cap 64) uses <= 16 iterations per token on average, costs <= 0.02 bits/byte against fixed
  depth 64, and generates >= 2x as many tokens/s as fixed depth 64;
- warm start pays: at tol 0.01, >= 30% fewer iterations than a cold start with >= 99% of greedy tokens unchanged;
- path independence (with --path-depths 64): >= 99% of free-running greedy tokens the same from zero and from noise.
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from decode_diagnostics import (  # noqa: E402
    basins,
    divergences,
    halting_breakdown,
    halting_positions,
    partings,
    settled_bits_per_byte,
)
from decode_report import print_report, targets  # noqa: E402

from eqlm import convergence as cv  # noqa: E402
from eqlm.decoder import OnnxEqLM  # noqa: E402
from eqlm.evaluate import heldout_text  # noqa: E402
from eqlm.generation import GenerationRequest, Generator  # noqa: E402
from eqlm.limits import DEFAULT_SOLVER, SOLVERS  # noqa: E402
from eqlm.model_files import KJV_SLICE as SLICE  # noqa: E402
from eqlm.units import mean_bits  # noqa: E402


def prompts_from_slice(path: Path, count: int, length: int = 24) -> list[str]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if len(line) > length + 10]
    return [line[:length] for line in lines[:count]]


def decode(generator: Generator, prompts: list[str], tokens: int, **request) -> dict:
    results, started = [], time.perf_counter()
    for prompt in prompts:
        results.append(generator.generate(GenerationRequest(prompt=prompt, max_tokens=tokens, **request)))
    seconds = time.perf_counter() - started
    iterations = [[e.iterations for e in r.tokens] for r in results]
    later = [i for its in iterations for i in its[1:]]
    count = sum(len(r.tokens) for r in results)
    return {
        "results": results,
        "tokens": [[e.token_id for e in r.tokens] for r in results],
        "iterations": iterations,
        "mean_iterations": sum(later) / len(later) if later else float("nan"),
        "tokens_per_second": count / seconds if seconds else float("nan"),
        "seconds": seconds,
    }


def agreement(a: list[list[int]], b: list[list[int]]) -> float:
    same = sum(x == y for s, t in zip(a, b, strict=True) for x, y in zip(s, t, strict=False))
    total = sum(max(len(s), len(t)) for s, t in zip(a, b, strict=True))
    return same / total if total else float("nan")


def path_agreement(generator: Generator, prompts: list[str], tokens: int, depth: int, solver: str, seed: int = 0):
    """Free-running greedy decoding at fixed `depth` from the zero start and from the noise start (seeded by `seed`):
    (share of greedy tokens they agree on, where each parting continuation parts)."""
    zero = decode(generator, prompts, tokens, depth=depth, solver=solver, start="zero", logprobs=True)
    noise = decode(generator, prompts, tokens, depth=depth, solver=solver, start="noise", seed=seed, logprobs=True)
    return agreement(zero["tokens"], noise["tokens"]), partings(zero, noise)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="eqlm-demo", help="a bundled model id (models/<id>/onnx/)")
    parser.add_argument("--onnx-dir", help="an exported model folder (overrides --model)")
    parser.add_argument("--slice", default=str(SLICE), type=lambda p: str(Path(p).resolve()))
    parser.add_argument("--tol", type=float, default=0.01)
    parser.add_argument("--cap", type=int, default=64)
    parser.add_argument("--fixed", type=int, default=64, help="the fixed depth to compare with")
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=25)
    parser.add_argument("--solver", default=DEFAULT_SOLVER, choices=list(SOLVERS))
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (the server's: 1)")
    parser.add_argument("--bpb-windows", type=int, default=16, help="held-out windows for bits/byte (0 = skip)")
    parser.add_argument("--heldout", action="store_true", help="windows from the corpus's held-out slice")
    parser.add_argument(
        "--basins", type=int, default=2, help="held-out windows for the warm-start basin diagnosis (0 = skip)"
    )
    parser.add_argument(
        "--kl-tol", type=float, nargs="*", default=[], help="a row of cold KL halting (halt kl) at each of these tols"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="decode every mode this many times, interleaved, and keep the fastest"
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="with --bpb-windows: each halting row's cost against fixed depth by the iteration positions halted at",
    )
    parser.add_argument(
        "--path-depths",
        type=int,
        nargs="*",
        default=[],
        help="free-running greedy agreement between the zero and noise (seed 0) starts at each of these fixed depths",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _modes(args) -> dict[str, dict]:
    """The decoding modes by name: fixed depth, cold and warm halting, and each KL rule cold and warm."""
    adaptive = {"tol": args.tol, "depth": args.cap, "solver": args.solver}
    return {
        "fixed": {"depth": args.fixed, "solver": args.solver},
        "adaptive_cold": adaptive,
        "adaptive_warm": {**adaptive, "warm_start": True},
        **{f"kl_{tol:g}": {"depth": args.cap, "tol": tol, "halt": "kl", "solver": args.solver} for tol in args.kl_tol},
        # the warm start under each KL rule, against that rule's cold start
        **{
            f"warm_kl_{tol:g}": {"depth": args.cap, "tol": tol, "halt": "kl", "solver": args.solver, "warm_start": True}
            for tol in args.kl_tol
        },
    }


def _decode_rounds(generator: Generator, prompts: list[str], args, modes: dict) -> dict[str, dict]:
    """Every mode decoded `args.rounds` times, interleaved, the fastest round of each kept."""
    runs: dict[str, dict] = {}
    for _ in range(args.rounds):  # interleaved, the fastest round of each mode kept (greedy: the same tokens)
        for name, request in modes.items():
            run = decode(generator, prompts, args.tokens, **request)
            if name not in runs or run["seconds"] < runs[name]["seconds"]:
                runs[name] = run
    return runs


def _decoding_report(
    generator, onnx_dir: Path, prompts: list[str], args, runs: dict, kl_rows: dict, warm_kl_rows: dict
) -> dict:
    """The report's settings, each mode's iterations and speed, and the greedy agreements between modes."""
    fixed, cold, warm = runs["fixed"], runs["adaptive_cold"], runs["adaptive_warm"]
    return {
        "model": generator.model_id,
        "onnx_dir": str(onnx_dir.relative_to(ROOT) if onnx_dir.is_relative_to(ROOT) else onnx_dir),
        "prompts": len(prompts),
        "tokens_per_prompt": args.tokens,
        "solver": args.solver,
        "tol": args.tol,
        "cap": args.cap,
        "fixed_depth": args.fixed,
        "threads": args.threads,
        "rounds": args.rounds,
        "decoding": {
            name: {
                "mean_iterations_per_token": round(run["mean_iterations"], 3),
                "tokens_per_second": round(run["tokens_per_second"], 1),
                "seconds": round(run["seconds"], 2),
            }
            for name, run in runs.items()
        },
        "greedy_agreement": {
            "adaptive_cold_vs_fixed": round(agreement(cold["tokens"], fixed["tokens"]), 4),
            "adaptive_warm_vs_cold": round(agreement(warm["tokens"], cold["tokens"]), 4),
            **{
                f"{name}_vs_fixed": round(agreement(run["tokens"], fixed["tokens"]), 4) for name, run in kl_rows.items()
            },
            **{
                f"warm_{name}_vs_cold": round(agreement(run["tokens"], kl_rows[name]["tokens"]), 4)
                for name, run in warm_kl_rows.items()
            },
        },
    }


def _bits_per_byte(args, model: OnnxEqLM, report: dict) -> dict[str, float]:
    """Teacher-forced bits/byte per mode on held-out windows (with --breakdown, the halting rows' cost by iteration),
    into report; returns them by mode."""
    bpb = {}
    if args.heldout:
        text, source = heldout_text("heldout")
    else:
        text, source = Path(args.slice).read_bytes(), str(Path(args.slice).relative_to(ROOT))
    windows = cv.windows_of(text, model.max_positions, limit=args.bpb_windows)
    backend = cv.OnnxBackend(model)
    started = time.perf_counter()
    bpb["fixed"] = (
        cv.profile_by_depth(backend, windows, args.solver, args.fixed, tolerances=()).by_depth[args.fixed].bits_per_byte
    )
    point = cv.adaptive_point(backend, windows, args.tol, args.solver, args.cap)
    bpb["adaptive_cold"] = point.bits_per_byte
    bpb["adaptive_warm"], warm_its = settled_bits_per_byte(model, windows, args.tol, args.cap, args.solver)
    kl_its, positions = {}, {}
    if args.breakdown:  # the residual rule on the decoder's path, per position (adaptive_point batches it)
        positions["adaptive_cold"] = halting_positions(model, windows, args.tol, args.cap, args.solver)
    for tol in args.kl_tol:
        name = f"kl_{tol:g}"
        positions[name] = nll, its = halting_positions(model, windows, tol, args.cap, args.solver, "kl")
        bpb[name], kl_its[name] = mean_bits(nll), float(its.mean())
    if args.breakdown:
        fixed_nll, _ = halting_positions(model, windows, None, args.fixed, args.solver)  # once, for every rule
        report["halting_breakdown"] = {
            name: halting_breakdown(nll, its, fixed_nll, args.cap) for name, (nll, its) in positions.items()
        }
    report["bits_per_byte"] = {k: round(v, 4) for k, v in bpb.items()}
    report["bits_per_byte_windows"] = {
        "source": source,
        "windows": len(windows),
        "window": model.max_positions,
        "positions": point.positions,
        "adaptive_cold_mean_iterations": round(point.mean_iterations, 3),
        "adaptive_warm_mean_iterations": round(warm_its, 3),
        **{f"{name}_mean_iterations": round(its, 3) for name, its in kl_its.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    return bpb


def main() -> int:
    args = _parser().parse_args()

    onnx_dir = Path(args.onnx_dir) if args.onnx_dir else ROOT / "models" / args.model / "onnx"
    generator = Generator(onnx_dir, threads=args.threads)
    model = generator.model
    prompts = prompts_from_slice(Path(args.slice), args.prompts)
    modes = _modes(args)
    runs = _decode_rounds(generator, prompts, args, modes)
    cold, warm = runs["adaptive_cold"], runs["adaptive_warm"]
    kl_rows = {name: runs[name] for name in modes if name.startswith("kl_")}
    warm_kl_rows = {name: runs[f"warm_{name}"] for name in kl_rows}  # keyed by the cold KL row they compare with

    report = _decoding_report(generator, onnx_dir, prompts, args, runs, kl_rows, warm_kl_rows)
    bpb = {}
    if args.bpb_windows:
        bpb = _bits_per_byte(args, model, report)

    if args.path_depths:
        paths = {
            str(depth): path_agreement(generator, prompts, args.tokens, depth, args.solver)
            for depth in args.path_depths
        }
        report["path_independence"] = {depth: round(same, 4) for depth, (same, _) in paths.items()}
        report["path_partings"] = {depth: rows for depth, (_, rows) in paths.items()}

    report["divergences"] = divergences(model, prompts, cold, warm, args.cap, args.tol, args.solver)

    if args.basins:
        started = time.perf_counter()
        source = Path(args.slice).read_bytes()
        report["basins"] = {
            "windows": args.basins,
            "starts": basins(model, cv.windows_of(source, model.max_positions, limit=args.basins)),
            "seconds": round(time.perf_counter() - started, 1),
        }

    targets(report, runs, bpb, kl_rows, warm_kl_rows)
    if args.json:
        print(json.dumps(report))
        return 0
    print_report(report, args, prompts, runs, bpb, kl_rows, warm_kl_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
