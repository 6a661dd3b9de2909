"""The one fixed-point iteration: Picard or Anderson with per-position halting, over numpy or torch arrays.

`EqLM.solve` (torch), the onnxruntime decoder (`decoder.process`, numpy) and the convergence measurements
(`convergence.iterate`, either) all run `FixedPoint`. Each iteration calls the caller's step, which returns f(z)
and each position's relative residual ||f(z) - z|| / ||z||; the next state is f(z) (Picard) or Anderson's mix of
the recent steps. A position halts after the iteration at which the halting rule holds for it (by default its
residual is below `tol`; `kl_below` instead asks that its next-byte distribution has stopped moving); its state stays
frozen from then on, though the step still sees it (its keys and values feed the positions after it). Without a rule
every position runs `max_iter` iterations.

Only array creation, `where`, the KL rule's log-softmax and Anderson's algebra depend on the backend: `NumpyOps`
and `TorchOps` are the twins, held equal on random maps by eqlm/tests/test_fixed_point.py. Torch is imported only
when `TorchOps` is built, so the web process can import this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .limits import DEFAULT_SOLVER, HALTS, SOLVERS

# (z [..., D], iteration index from 0) -> (f(z) [..., D], relative residual [...]); it may also fill a cache
Step = Callable[[Any, int], tuple[Any, Any]]
# (residual [...], z before the iteration, z after it) -> mask [...] of the positions that converged at it.
# Two rules: the relative residual (residual_below) and the KL between the next-byte distributions of successive
# iterates (kl_below); `halting_rule` picks one by its name in limits.HALTS.
HaltRule = Callable[[Any, Any, Any], Any]


def residual_below(tol: float) -> HaltRule:
    """Halt a position once its relative residual is below tol (compared in the residual's dtype, float32)."""

    def rule(residual, before, after):
        return residual < tol

    return rule


def kl_below(tol: float, head: Callable[[Any], Any], ops: NumpyOps | TorchOps) -> HaltRule:
    """Halt a position once KL(p_i || p_(i-1)) < tol (nats): p_i = softmax(head(z_i)), its next-byte distribution.

    The KL is computed in float64 from the head's logits, as Geiping et al. 2025's exit rule does (the
    distribution after the iteration against the one before it). The first iteration compares with the head of the
    start state. Each iteration's distributions are kept for the next, so the head runs once per iteration.
    """
    kept: dict = {}

    def rule(residual, before, after):
        previous = kept["log_probs"] if kept.get("z") is before else ops.log_probs(head, before)
        current = ops.log_probs(head, after)
        kept.update(z=after, log_probs=current)
        return ops.kl(current, previous) < tol

    return rule


def halting_rule(halt: str, tol: float | None, head: Callable[[Any], Any], ops: NumpyOps | TorchOps) -> HaltRule | None:
    """The rule named `halt` (limits.HALTS) at tol; None (every position runs every iteration) without a tol."""
    if halt not in HALTS:
        raise ValueError(f"halt must be {' or '.join(map(repr, HALTS))}")
    if tol is None:
        return None
    return kl_below(tol, head, ops) if halt == "kl" else residual_below(tol)


class NumpyAnderson:
    """Per-position Anderson acceleration (type II, memory m, mixing 1) over D-vectors; the algebra in float64.

    The first `picard_first` updates are Picard's (f(x), nothing remembered); the mix starts after them."""

    def __init__(self, m: int = 5, reg: float = 1e-6, picard_first: int = 0):
        self.m, self.reg, self.picard_left = m, reg, picard_first
        self.xs: list[np.ndarray] = []
        self.gs: list[np.ndarray] = []

    def update(self, x: np.ndarray, fx: np.ndarray) -> np.ndarray:
        if self.picard_left > 0:
            self.picard_left -= 1
            return fx
        self.xs = [*self.xs, x][-self.m :]
        self.gs = [*self.gs, fx - x][-self.m :]
        n = len(self.gs)
        if n == 1:
            return fx
        g = np.stack(self.gs, axis=-1).astype(np.float64)  # [..., D, n]
        gram = np.swapaxes(g, -1, -2) @ g
        scale = np.diagonal(gram, axis1=-2, axis2=-1).mean(-1)[..., None, None] + 1e-12
        gram = gram + self.reg * scale * np.eye(n)
        w = np.linalg.solve(gram, np.ones((*gram.shape[:-1], 1)))
        alpha = w / w.sum(axis=-2, keepdims=True)
        fxs = np.stack([a + b for a, b in zip(self.xs, self.gs, strict=True)], axis=-1).astype(np.float64)
        return (fxs @ alpha)[..., 0].astype(x.dtype)


class TorchAnderson:
    """NumpyAnderson's torch twin. `dtype` (e.g. float64) runs the whole update in it; None keeps the input's."""

    def __init__(self, m: int = 5, reg: float = 1e-6, dtype=None, picard_first: int = 0):
        import torch

        self.torch = torch
        self.m, self.reg, self.dtype, self.picard_left = m, reg, dtype, picard_first
        self.xs: list = []
        self.gs: list = []

    def update(self, x, fx):
        if self.picard_left > 0:
            self.picard_left -= 1
            return fx
        torch = self.torch
        out_dtype = x.dtype
        if self.dtype is not None:
            x, fx = x.to(self.dtype), fx.to(self.dtype)
        self.xs.append(x)
        self.gs.append(fx - x)
        self.xs, self.gs = self.xs[-self.m :], self.gs[-self.m :]
        n = len(self.gs)
        if n == 1:
            return fx.to(out_dtype)
        g = torch.stack(self.gs, dim=-1)  # [..., D, n]
        gram = g.transpose(-1, -2) @ g  # [..., n, n]
        gram = gram + self.reg * (gram.diagonal(dim1=-2, dim2=-1).mean(-1)[..., None, None] + 1e-12) * torch.eye(
            n, dtype=g.dtype, device=g.device
        )
        ones = torch.ones(*gram.shape[:-1], 1, dtype=g.dtype, device=g.device)
        w = torch.linalg.solve(gram, ones)
        alpha = w / w.sum(dim=-2, keepdim=True)  # [..., n, 1]
        fxs = torch.stack([xx + gg for xx, gg in zip(self.xs, self.gs, strict=True)], dim=-1)
        return (fxs @ alpha)[..., 0].to(out_dtype)


class NumpyOps:
    """The numpy side: masks and counts as numpy arrays, last residuals in float64."""

    def mask(self, z) -> np.ndarray:
        return np.ones(z.shape[:-1], dtype=bool)

    def counts(self, z) -> np.ndarray:
        return np.zeros(z.shape[:-1], dtype=np.int64)

    def unset_residual(self, z) -> np.ndarray:
        return np.full(z.shape[:-1], np.inf, dtype=np.float64)

    def where(self, mask, a, b):
        """a where mask holds, else b; a mask [...] applies to every component of states [..., D]."""
        return np.where(mask.reshape(mask.shape + (1,) * (np.ndim(a) - mask.ndim)), a, b)

    def anderson(self, m: int, picard_first: int = 0):
        return NumpyAnderson(m, picard_first=picard_first)

    def log_probs(self, head, z) -> np.ndarray:
        """log-softmax of head(z) over the last axis, in float64."""
        x = np.asarray(head(z), dtype=np.float64)
        x = x - x.max(axis=-1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))

    def kl(self, log_p, log_q) -> np.ndarray:
        """KL(p || q) over the last axis from log-probabilities."""
        return (np.exp(log_p) * (log_p - log_q)).sum(axis=-1)


class TorchOps:
    """The torch side, on z's device. `anderson_dtype` runs Anderson's update in that dtype (None: z's)."""

    def __init__(self, anderson_dtype=None):
        import torch

        self.torch = torch
        self.anderson_dtype = anderson_dtype

    def mask(self, z):
        return self.torch.ones(z.shape[:-1], dtype=self.torch.bool, device=z.device)

    def counts(self, z):
        return self.torch.zeros(z.shape[:-1], dtype=self.torch.long, device=z.device)

    def unset_residual(self, z):
        return self.torch.full(z.shape[:-1], float("inf"), device=z.device)

    def where(self, mask, a, b):
        return self.torch.where(mask.reshape(mask.shape + (1,) * (a.dim() - mask.dim())), a, b)

    def anderson(self, m: int, picard_first: int = 0):
        return TorchAnderson(m, dtype=self.anderson_dtype, picard_first=picard_first)

    def log_probs(self, head, z):
        """NumpyOps.log_probs's twin; outside autograd (a halting decision carries no gradient)."""
        with self.torch.no_grad():
            x = head(z).double()
            x = x - x.amax(dim=-1, keepdim=True)
            return x - x.exp().sum(dim=-1, keepdim=True).log()

    def kl(self, log_p, log_q):
        return (log_p.exp() * (log_p - log_q)).sum(dim=-1)


class FixedPoint:
    """Iterate z <- g(z) from z, at most max_iter times, with per-position halting; iterating it runs the loop.

    Each pass of `for count in fixed_point` is one iteration (count = iterations done). Between passes these
    attributes hold the state after it; after the loop they hold the final state:

    - `z` [..., D]: the states (a halted position keeps its frozen state);
    - `step_residual` [...]: this iteration's residual at every position, halted ones included;
    - `updated` [...]: the positions this iteration moved (still active before it);
    - `active` [...]: the positions still iterating after it;
    - `iterations` [...]: iterations each position used; `residual` [...]: its last residual while active
      (inf before its first iteration).

    A step that returns no residual (None) makes the loop unrolled: no halting, `z` is f(z) (or Anderson's mix) at
    every position, and only `z` and `count` move (`iterates` runs it so).
    """

    def __init__(
        self,
        step: Step,
        z,
        max_iter: int,
        *,
        ops: NumpyOps | TorchOps,
        solver: str = DEFAULT_SOLVER,
        tol: float | None = None,
        halt: HaltRule | None = None,
        anderson_m: int = 5,
        anderson_picard_first: int = 0,
    ):
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}")
        if halt is not None and tol is not None:
            raise ValueError("give tol or a halting rule, not both")
        self.step, self.max_iter, self.ops = step, int(max_iter), ops
        self.halt = halt if halt is not None else residual_below(tol) if tol is not None else None
        self.anderson = ops.anderson(anderson_m, anderson_picard_first) if solver == "anderson" else None
        self.z = z
        self.active = ops.mask(z)
        self.updated = self.active
        self.iterations = ops.counts(z)
        self.residual = ops.unset_residual(z)
        self.step_residual = None
        self.count = 0

    def __iter__(self) -> Iterator[int]:
        ops = self.ops
        for i in range(self.max_iter):
            before = self.z
            fz, r = self.step(before, i)
            new = self.anderson.update(before, fz) if self.anderson is not None else fz
            if r is None:  # unrolled: no residual and no halting, every position moves (see `iterates`)
                self.z, self.count = new, i + 1
                yield self.count
                continue
            self.updated = self.active
            self.z = ops.where(self.updated, new, before)
            self.residual = ops.where(self.updated, r, self.residual)
            self.iterations = self.iterations + self.updated
            self.step_residual = r
            if self.halt is not None:
                self.active = self.updated & ~self.halt(r, before, self.z)
            self.count = i + 1
            yield self.count
            if not self.active.any():
                return

    def run(self) -> FixedPoint:
        """Run the loop to its end (nothing to do between iterations); returns self."""
        for _ in self:
            pass
        return self


def iterates(f: Callable[[Any], Any], z, depth: int) -> Iterator[tuple[int, Any]]:
    """(i, z_i) for i = 1..depth of plain Picard iteration z <- f(z) from z: FixedPoint unrolled, with no residual and
    no halting, so every position moves at every iteration and gradients flow through all (the training trajectories,
    the unrolled model, the zero-start states of the path-independence measure)."""
    ops = NumpyOps() if isinstance(z, np.ndarray) else TorchOps()
    solve = FixedPoint(lambda state, _: (f(state), None), z, depth, ops=ops)
    for i in solve:
        yield i, solve.z


def iterate(f: Callable[[Any], Any], z, depth: int):
    """z_depth of `iterates` (z itself when depth is 0)."""
    last = z
    for _, last in iterates(f, z, depth):  # noqa: B007 (the last state is the answer)
        pass
    return last
