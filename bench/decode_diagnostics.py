"""Diagnoses for bench/decode.py: where two greedy continuations part, teacher-forced halting per position and its
cost by the iteration positions halted at, settled (warm-start) bits/byte, where a warm continuation leaves the cold
one, and the warm start's basins."""

import numpy as np

from eqlm import convergence as cv
from eqlm.decoder import DecodeCache, OnnxEqLM, process
from eqlm.fixed_point import iterate
from eqlm.generation import GenerationRequest
from eqlm.units import LN2, mean_bits, mean_bits_of_sum


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two token lists differ (None when one is a prefix of the other)."""
    return next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


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
