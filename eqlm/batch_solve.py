"""Whole decode solves in the batch: the scheduler's thread iterates every row's Picard solve of one new position.

A row hands in its solve once (`BatchScheduler.solve_pass`), where a row that hands in each step wakes, writes its
K/V, runs its solver's bookkeeping and hands in its next step under the one GIL between every two calls (with 8 rows
of the 121M model at int8, that turnaround was about 0.9 ms against a 2.2 ms call). The scheduler runs one
`step_batched` call an iteration for every solve in progress, writes each row's K/V into its cache, and ends a
solve at its depth or, with a tol, once fixed_point.residual_below says so, as
fixed_point.FixedPoint's Picard loop does for one position: z <- f(z), the residual the graph's own. Solves join
and end at iteration boundaries, each at its own iteration slot, past length and depth.

KL halting, Anderson and a solve whose residuals are recorded (history) run their steps one call at a time, as
before (batch_decode's "step" calls).
"""

from __future__ import annotations

import numpy as np

from .decoder import DecodeCache
from .fixed_point import residual_below


class Solve:
    """One row's solve in progress: (z [1, 1, D], inj, cache, depth, tol, settle) and its state."""

    def __init__(self, call, z, inj, cache: DecodeCache, depth: int, tol: float | None, settle: bool):
        self.call, self.z, self.inj, self.cache = call, z, inj, cache
        self.depth, self.settle = int(depth), settle
        self.halt = None if tol is None else residual_below(tol)  # the rule FixedPoint halts a position by
        self.count = 0
        self.residual = np.float64(np.inf)

    def advance(self, z: np.ndarray, k: np.ndarray, v: np.ndarray, residual: np.ndarray) -> bool:
        """Take one iteration's outputs (this row's: z [1, 1, D], k and v [1, H, 1, Dh], residual [1, 1]); True when
        the solve has ended."""
        if not self.settle:  # a settled solve writes its final states' K/V into every slot at the end
            self.cache.put(self.count, k, v)
        before, self.z, self.count = self.z, z, self.count + 1
        self.residual = np.float64(residual[0, 0])
        return self.count >= self.depth or (self.halt is not None and bool(self.halt(residual, before, z)[0, 0]))


def prefix_mask(lengths: list[int], width: int) -> np.ndarray:
    """[rows, width] float32: 1 on each row's first `lengths[row]` positions, 0 on the padding after them."""
    return (np.arange(width)[None, :] < np.asarray(lengths)[:, None]).astype(np.float32)


def padded_pasts(pasts: list[tuple[np.ndarray, np.ndarray]], width: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Each row's past K and V ([..., H, n, Dh], n its own) right-padded with zeros to the longest, or to `width`
    positions if more (one at least: a graph's past is never empty), and stacked, the rows' axis before H:
    [..., B, H, P, Dh]. One copy a row."""
    first, p = pasts[0][0], max(width, *(k.shape[-2] for k, _ in pasts))
    shape = (*first.shape[:-3], len(pasts), first.shape[-3], p, first.shape[-1])
    out = np.empty(shape, dtype=np.float32), np.empty(shape, dtype=np.float32)
    for row, kv in enumerate(pasts):
        for x, padded in zip(kv, out, strict=True):
            n = x.shape[-2]
            padded[..., row, :, :n, :], padded[..., row, :, n:, :] = x, 0.0  # the padding, masked
    return out


def run_steps(scheduler, zs: list, injs: list, pasts: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """One step_batched call for rows of one new position each (z and inj [1, 1, D]; each row's past K and V
    [H, n, Dh], right-padded to the longest and masked); (z_next, k, v, residual) of every row."""
    b = len(zs)
    lengths = [k.shape[1] for k, _ in pasts]
    past_k, past_v = padded_pasts(pasts)
    p = past_k.shape[-2]
    z, inj = (np.concatenate(x).astype(np.float32, copy=False) for x in (zs, injs))
    feed = {"z": z, "inj": inj, "past_k": past_k, "past_v": past_v, "past_valid": prefix_mask(lengths, p)}
    out = scheduler.sessions[0].run(None, feed)
    scheduler.batches += 1
    scheduler.rows_run += b
    scheduler.largest = max(scheduler.largest, b)
    return out


def run_solves(scheduler, solves: list[Solve]) -> list[bool]:
    """One iteration of every solve in one step_batched call, each row's past that of its own iteration slot;
    whether each solve has ended."""
    pasts = [s.cache.view(s.count) for s in solves]
    z, k, v, residual = run_steps(scheduler, [s.z for s in solves], [s.inj for s in solves], pasts)
    return [s.advance(z[i : i + 1], k[i : i + 1], v[i : i + 1], residual[i : i + 1]) for i, s in enumerate(solves)]


def iterate(scheduler, solves: list[Solve]) -> list[Solve]:
    """One iteration of every solve (max_rows to a call): the solves that end are delivered; returns those going on
    (none when the call raised: every row in a solve sees the error)."""
    ended, going = [], []
    try:
        for i in range(0, len(solves), scheduler.max_rows):
            chunk = solves[i : i + scheduler.max_rows]
            for solve, over in zip(chunk, run_solves(scheduler, chunk), strict=True):
                (ended if over else going).append(solve)
    except Exception as error:  # noqa: BLE001 - every row in a solve sees it; the thread goes on
        for solve in solves:
            solve.call.error = error
            solve.call.done.set()
        return []
    for solve in ended:
        solve.call.outputs = [solve.z, solve.count, solve.residual]
        solve.call.done.set()
    return going
