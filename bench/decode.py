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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eqlm import convergence as cv  # noqa: E402
from eqlm.decoder import DecodeCache, OnnxEqLM, process  # noqa: E402
from eqlm.evaluate import heldout_text  # noqa: E402
from eqlm.fixed_point import iterate  # noqa: E402
from eqlm.generation import GenerationRequest, Generator  # noqa: E402
from eqlm.limits import DEFAULT_SOLVER, SOLVERS  # noqa: E402
from eqlm.model_files import KJV_SLICE as SLICE  # noqa: E402
from eqlm.units import LN2, mean_bits, mean_bits_of_sum  # noqa: E402


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


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two token lists differ (None when one is a prefix of the other)."""
    return next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def path_agreement(generator: Generator, prompts: list[str], tokens: int, depth: int, solver: str, seed: int = 0):
    """Free-running greedy decoding at fixed `depth` from the zero start and from the noise start (seeded by `seed`):
    (share of greedy tokens they agree on, where each parting continuation parts)."""
    zero = decode(generator, prompts, tokens, depth=depth, solver=solver, start="zero", logprobs=True)
    noise = decode(generator, prompts, tokens, depth=depth, solver=solver, start="noise", seed=seed, logprobs=True)
    return agreement(zero["tokens"], noise["tokens"]), partings(zero, noise)


def partings(zero: dict, noise: dict) -> list[dict]:
    """Where each noise-start continuation first leaves the zero-start one (`decode` runs with logprobs), and how
    close that decision was: the zero start's two likeliest bytes, and the noise start's probability of each side's
    choice. A free-running continuation differs from the parting token on, so one near-tie costs the rest of its
    prompt."""
    rows = []
    for index, (z, n) in enumerate(zip(zero["results"], noise["results"], strict=True)):
        k = first_difference(zero["tokens"][index], noise["tokens"][index])
        if k is None:
            continue
        mine, theirs = z.tokens[k], n.tokens[k]
        top = np.sort(np.exp(mine.logprobs))[::-1]
        rows.append(
            {
                "prompt": index,
                "token": k,
                "zero_top2": [round(float(top[0]), 4), round(float(top[1]), 4)],
                "noise_p_zeros_byte": round(float(np.exp(theirs.logprobs[mine.token_id])), 4),
                "noise_p_own_byte": round(float(np.exp(theirs.logprobs[theirs.token_id])), 4),
            }
        )
    return rows


def halting_positions(
    model: OnnxEqLM, windows: np.ndarray, tol: float | None, cap: int, solver: str, halt: str = "residual"
) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forced cold halting by the rule `halt` (tol None: fixed depth `cap`), one batched solve per window
    (the decoder's path): each position's negative log-likelihood of its next byte (nats) and its iterations."""
    nll, iterations = [], []
    for window in windows:
        ids = [int(b) for b in window[:-1]]
        z, its, _ = process(model, DecodeCache(model, cap), ids, cap, tol, solver, halt=halt)
        nll.append(np.asarray(cv.nll_from_logits(model.head(z)[0], np.asarray(window[1:]))).reshape(-1))
        iterations.append(np.asarray(its).reshape(-1))
    return np.concatenate(nll), np.concatenate(iterations)


BUCKETS = ((1, 4), (5, 8), (9, 12), (13, 16), (17, 24), (25, 48), (49, 10**6))


def halting_breakdown(nll: np.ndarray, its: np.ndarray, fixed_nll: np.ndarray, cap: int) -> list[dict]:
    """Where halting's cost against fixed depth comes from, from `halting_positions` of a rule and of fixed depth:
    the positions grouped by the iteration they halted at. Per group: its share of the positions and its part of the
    cost (bits/byte, summing to the whole cost over the groups)."""
    cost = (nll - fixed_nll) / LN2
    rows = []
    for lo, hi in BUCKETS:
        group = (its >= lo) & (its <= hi)
        if group.any():
            rows.append(
                {
                    "iterations": f"{lo}-{min(hi, cap)}",
                    "share": round(float(group.mean()), 4),
                    "cost": round(float(cost[group].sum() / len(cost)), 4),
                }
            )
    return rows


def settled_bits_per_byte(
    model: OnnxEqLM, windows: np.ndarray, tol: float | None, cap: int, solver: str, warm: bool = True
) -> tuple[float, float]:
    """Teacher-forced decoding one byte at a time against the settled context, as warm-start generation does (each
    position iterates against the solved states before it), from the previous position's final state (`warm`) or
    from zero: (bits/byte, mean iterations per position after each window's first)."""
    nll, iterations, count = 0.0, 0, 0
    for window in windows:
        cache = DecodeCache(model, cap)
        z0 = None
        for position in range(len(window) - 1):
            z, its, _ = process(model, cache, [int(window[position])], cap, tol, solver, z0, settle=True)
            z0 = z if warm else None
            nll += float(cv.nll_from_logits(model.head(z)[0, 0], np.asarray(window[position + 1])))
            iterations += int(its[0]) if position else 0  # the first position has nothing to start from
            count += 1
    return mean_bits_of_sum(nll, count), iterations / (count - len(windows))


def divergences(model: OnnxEqLM, prompts: list[str], cold: dict, warm: dict, cap: int, tol: float, solver: str):
    """Where each warm continuation first leaves the cold one, and what its context looks like once settled.

    For the decision at that token the context (the prompt and the tokens both modes chose before it) is solved
    jointly from zero for `cap` iterations; a context position still above tol there has no fixed point within the
    cap (a cycle, or a very slow approach). Cold decoding lets the new position iterate against such a context as it
    moves; the warm start iterates against the snapshot it settled at. The decision is then solved from zero against
    the settled context, the third opinion.
    """
    rows = []
    for index, (prompt, c, w) in enumerate(zip(prompts, cold["tokens"], warm["tokens"], strict=True)):
        k = first_difference(c, w)
        if k is None:
            continue
        ids = GenerationRequest(prompt=prompt).ids() + c[:k]  # the prompt's ids as the generator takes them
        cache = DecodeCache(model, cap)
        _, _, residual = process(model, cache, ids[:-1], cap, None, solver, settle=True)
        z, _, _ = process(model, cache, ids[-1:], cap, tol, solver, settle=True)
        rows.append(
            {
                "prompt": index,
                "token": k,
                "cold": {"byte": c[k], "iterations": cold["iterations"][index][k]},
                "warm": {"byte": w[k], "iterations": warm["iterations"][index][k]},
                "context_positions_above_tol": int((residual >= tol).sum()),
                "context_max_residual": float(residual.max()),
                "zero_start_on_settled_context": int(np.argmax(model.head(z)[0, -1])),
            }
        )
    return rows


BASIN_STARTS = ("converged + 30% noise", "joint iterate 4", "zero", "predecessor (warm start)")


def basins(model: OnnxEqLM, windows: np.ndarray, depth: int = 128, every: int = 4, seed: int = 0) -> dict:
    """Which starts reach the joint fixed point when one position is iterated against its converged context.

    Each window is solved jointly from z = 0 for `depth` iterations (the reference fixed point z*). Then every
    `every`-th position is iterated alone, its context's keys and values fixed at z*, from four starts. A start
    "returns" when it ends within 5% (relative distance) of z* there. Returns, per start, the share that returns
    and the bits/byte at the states reached.
    """
    rng = np.random.default_rng(seed)
    returned = {name: [] for name in BASIN_STARTS}
    nll = {name: [] for name in BASIN_STARTS}
    for window in windows:
        ids = np.asarray(window, dtype=np.int64)[None, :]
        t_len = ids.shape[1]
        inj, states = model.joint_states(ids, [4, depth])
        z, early = states[depth], states[4]
        empty = model.empty_kv()
        _, k, v, _ = model.step(z, inj, empty, empty)
        for t in range(1, t_len - 1, every):
            target = z[:, t : t + 1]
            size = float(np.linalg.norm(target))
            noise = rng.standard_normal(target.shape).astype(np.float32)
            starts = {
                BASIN_STARTS[0]: target + 0.3 * size * noise / np.sqrt(target.shape[-1]),
                BASIN_STARTS[1]: early[:, t : t + 1],
                BASIN_STARTS[2]: np.zeros_like(target),
                BASIN_STARTS[3]: z[:, t - 1 : t],
            }
            past = (inj[:, t : t + 1], k[:, :, :t], v[:, :, :t])  # position t's injection, its predecessors' K/V
            for name, zt in starts.items():
                zt = iterate(lambda z, past=past: model.step(z, *past)[0], zt.astype(np.float32), depth)
                returned[name].append(float(np.linalg.norm(zt - target)) / size < 0.05)
                nll[name].append(float(cv.nll_from_logits(model.head(zt)[0, 0], np.asarray(window[t + 1]))))
    return {
        name: {"returns": float(np.mean(returned[name])), "bits_per_byte": mean_bits(nll[name])}
        for name in BASIN_STARTS
    }


def main() -> int:
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
    args = parser.parse_args()

    onnx_dir = Path(args.onnx_dir) if args.onnx_dir else ROOT / "models" / args.model / "onnx"
    generator = Generator(onnx_dir, threads=args.threads)
    model = generator.model
    prompts = prompts_from_slice(Path(args.slice), args.prompts)
    adaptive = {"tol": args.tol, "depth": args.cap, "solver": args.solver}
    modes = {
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
    runs: dict[str, dict] = {}
    for _ in range(args.rounds):  # interleaved, the fastest round of each mode kept (greedy: the same tokens)
        for name, request in modes.items():
            run = decode(generator, prompts, args.tokens, **request)
            if name not in runs or run["seconds"] < runs[name]["seconds"]:
                runs[name] = run
    fixed, cold, warm = runs["fixed"], runs["adaptive_cold"], runs["adaptive_warm"]
    kl_rows = {name: runs[name] for name in modes if name.startswith("kl_")}
    warm_kl_rows = {name: runs[f"warm_{name}"] for name in kl_rows}  # keyed by the cold KL row they compare with

    report = {
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
    bpb = {}
    if args.bpb_windows:
        if args.heldout:
            text, source = heldout_text("heldout")
        else:
            text, source = Path(args.slice).read_bytes(), str(Path(args.slice).relative_to(ROOT))
        windows = cv.windows_of(text, model.max_positions, limit=args.bpb_windows)
        backend = cv.OnnxBackend(model)
        started = time.perf_counter()
        bpb["fixed"] = (
            cv.profile_by_depth(backend, windows, args.solver, args.fixed, tolerances=())
            .by_depth[args.fixed]
            .bits_per_byte
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

    iterations_saved = 1 - warm["mean_iterations"] / cold["mean_iterations"]
    speedup = cold["tokens_per_second"] / fixed["tokens_per_second"]
    targets = [
        ("halting", "mean iterations per token <= 16", cold["mean_iterations"], cold["mean_iterations"] <= 16),
        ("halting", "tokens/s >= 2x fixed depth", speedup, speedup >= 2),
        ("warm start", ">= 30% fewer iterations than cold", iterations_saved, iterations_saved >= 0.30),
        (
            "warm start",
            ">= 99% greedy tokens unchanged",
            report["greedy_agreement"]["adaptive_warm_vs_cold"],
            report["greedy_agreement"]["adaptive_warm_vs_cold"] >= 0.99,
        ),
    ]
    if bpb:
        cost = bpb["adaptive_cold"] - bpb["fixed"]
        targets.insert(1, ("halting", "bits/byte cost <= 0.02 vs fixed depth", cost, cost <= 0.02))
    for name, run in kl_rows.items():  # the KL rule, held to the same halting target
        kl_speedup = run["tokens_per_second"] / fixed["tokens_per_second"]
        targets.append((name, "mean iterations per token <= 16", run["mean_iterations"], run["mean_iterations"] <= 16))
        if bpb:
            cost = bpb[name] - bpb["fixed"]
            targets.append((name, "bits/byte cost <= 0.02 vs fixed depth", cost, cost <= 0.02))
        targets.append((name, "tokens/s >= 2x fixed depth", kl_speedup, kl_speedup >= 2))
    for name, run in warm_kl_rows.items():  # the warm start's target under the KL rule, against its cold start
        saved = 1 - run["mean_iterations"] / kl_rows[name]["mean_iterations"]
        same = report["greedy_agreement"][f"warm_{name}_vs_cold"]
        targets.append((f"warm {name}", ">= 30% fewer iterations than cold", saved, saved >= 0.30))
        targets.append((f"warm {name}", ">= 99% greedy tokens unchanged", same, same >= 0.99))
    if "64" in report.get("path_independence", {}):
        same = report["path_independence"]["64"]
        targets.append(
            ("path independence", "depth 64: >= 99% greedy tokens the same from zero and noise", same, same >= 0.99)
        )
    report["targets"] = [
        {"target": f"{group}: {text}", "measured": round(float(v), 4), "holds": bool(ok)}
        for group, text, v, ok in targets
    ]
    # The targets are conjunctions: a part that holds alone (warm start stopping early at a worse fixed
    # point) does not make the target hold.
    groups = ("halting", "warm start", *kl_rows, *(f"warm {name}" for name in warm_kl_rows))
    groups += ("path independence",) if any(g == "path independence" for g, *_ in targets) else ()
    report["combined"] = {group: all(ok for g, _, _, ok in targets if g == group) for group in groups}
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"{report['model']} ({report['onnx_dir']}), {args.solver}, tol {args.tol:g}, cap {args.cap}, "
        f"fixed depth {args.fixed}; {len(prompts)} prompts x {args.tokens} greedy tokens, {args.threads} thread(s)"
    )
    print(f"{'mode':<16}{'iterations/token':>18}{'tokens/s':>10}{'bits/byte':>11}")
    for name in runs:
        row = report["decoding"][name]
        b = f"{bpb[name]:.4f}" if name in bpb else "—"
        print(f"{name:<16}{row['mean_iterations_per_token']:>18.2f}{row['tokens_per_second']:>10.1f}{b:>11}")
    if bpb:
        w = report["bits_per_byte_windows"]
        print(f"bits/byte on {w['windows']} windows of {w['window']} bytes ({w['source']}), {w['seconds']} s")
    for name, rows in report.get("halting_breakdown", {}).items():
        print(f"{name}: cost against fixed depth {args.fixed} by the iteration positions halted at")
        for row in rows:
            print(
                f"  {row['iterations']:>7} iterations: {row['share']:>6.1%} of positions, {row['cost']:+.4f} bits/byte"
            )
    g = report["greedy_agreement"]
    print(
        f"greedy agreement: adaptive vs fixed {g['adaptive_cold_vs_fixed']:.4f}, "
        f"warm vs cold {g['adaptive_warm_vs_cold']:.4f}"
        + "".join(f", {name} vs fixed {g[f'{name}_vs_fixed']:.4f}" for name in kl_rows)
        + "".join(f", warm {name} vs cold {g[f'warm_{name}_vs_cold']:.4f}" for name in warm_kl_rows)
    )
    for depth, same in report.get("path_independence", {}).items():
        print(f"free-running greedy agreement, zero vs noise (seed 0), fixed depth {depth}: {same:.4f}")
        for p in report["path_partings"][depth]:
            print(
                f"  prompt {p['prompt']} parts at token {p['token']}: the zero start's two likeliest bytes "
                f"{p['zero_top2'][0]:.4f} and {p['zero_top2'][1]:.4f}; the noise start gives the zero start's byte "
                f"{p['noise_p_zeros_byte']:.4f} and its own {p['noise_p_own_byte']:.4f}"
            )
    for d in report["divergences"]:
        print(
            f"warm leaves cold at prompt {d['prompt']}, token {d['token']}: cold {bytes([d['cold']['byte']])!r} "
            f"({d['cold']['iterations']} its), warm {bytes([d['warm']['byte']])!r} ({d['warm']['iterations']} its); "
            f"settled context: {d['context_positions_above_tol']} position(s) above tol after {args.cap} iterations "
            f"(max residual {d['context_max_residual']:.2g}); from zero against it: "
            f"{bytes([d['zero_start_on_settled_context']])!r}"
        )
    if "basins" in report:
        b = report["basins"]
        print(
            f"warm-start basins ({b['windows']} windows, one position against its converged context, "
            f"{b['seconds']} s): start, share reaching the joint fixed point, bits/byte there"
        )
        for name, row in b["starts"].items():
            print(f"  {name:<26}{row['returns']:>7.1%}{row['bits_per_byte']:>9.3f}")
    print("targets:")
    for t in report["targets"]:
        print(f"  [{'holds' if t['holds'] else 'MISSED'}] {t['target']}: {t['measured']}")
    for group, holds in report["combined"].items():
        label = f"halting by {group}" if group in kl_rows else group
        verb = "holds at depth 64" if group == "path independence" else "pays"
        print(f"{label} {verb} (every part above): {'holds' if holds else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
