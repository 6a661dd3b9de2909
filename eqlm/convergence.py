"""Quality and convergence by depth: held-out bits/byte, residual quantiles, converged fraction (no Django).

One loop (`iterate`) drives either backend, torch (`TorchBackend`, the workers) or onnxruntime (`OnnxBackend`,
the web side and the browser's graphs), over non-overlapping windows of held-out bytes:

- fixed depth: every position runs d iterations from z = 0; at each depth 1..max_depth the loop records each
  position's negative log-likelihood of the next byte and its relative residual at that iteration,
  r_d = ||f(z_{d-1}) - z_{d-1}|| / ||z_{d-1}||, the figure the step graph returns and the halting rule reads;
- adaptive: a position stops after the first iteration whose r_d < tol (or at the cap) and keeps its state:
  the iteration is eqlm.fixed_point's, the one `EqLM.solve(tol=...)` and `eqlm.decoder.process` run.

`profile_by_depth` and `adaptive_point` turn those into the figures the evaluation stores as result rows
(`merge_points` joins the points of disjoint parts); `matched_fixed_depth` compares an adaptive point with fixed
depth at the same mean depth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .fixed_point import FixedPoint, NumpyOps, TorchOps
from .limits import DEFAULT_SOLVER, DEPTH_MAX, SOLVERS
from .logprobs import nll_from_logits
from .units import mean_bits_of_sum

# The dial's tolerance slider: 10^-3 .. 10^-0.5 in quarter decades (templates/inference/demo.html).
DIAL_TOLERANCES = tuple(float(f"{10 ** (-3 + 0.25 * k):.3g}") for k in range(11))
ADAPTIVE_TOLERANCES = (0.03, 0.01, 0.003, 0.001)


def tolerance_key(tol: float) -> float:
    """A tolerance rounded to three significant figures, the form stored in result-row conditions."""
    return float(f"{tol:.3g}")


def windows_of(data: bytes, window: int, limit: int | None = None) -> np.ndarray:
    """Non-overlapping windows [N, window] of byte ids; each window's first byte is context only."""
    arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    count = len(arr) // window
    if limit is not None:
        count = min(count, int(limit))
    return arr[: count * window].reshape(count, window)


def converged_fraction(residuals: np.ndarray, tol: float) -> float:
    """Share of positions whose relative residual is below tol (float32 comparison, as the halting rule)."""
    r = np.asarray(residuals, dtype=np.float32)
    return float(np.mean(r < np.float32(tol))) if r.size else float("nan")


def residual_quantiles(residuals: np.ndarray, quantiles=(0.5, 0.95)) -> dict[float, float]:
    """Quantiles of the relative residuals (linear interpolation, numpy's default)."""
    r = np.asarray(residuals, dtype=np.float64).ravel()
    return {q: float(np.quantile(r, q)) for q in quantiles}


@dataclass
class DepthFigures:
    """What one depth of one solver measured."""

    depth: int
    bits_per_byte: float
    residual_median: float
    residual_p95: float
    converged: dict[float, float]  # tolerance -> share of positions with residual < tolerance
    positions: int


@dataclass
class SolverProfile:
    solver: str
    by_depth: dict[int, DepthFigures] = field(default_factory=dict)

    def curve(self, name: str) -> dict[int, float]:
        return {d: getattr(f, name) for d, f in sorted(self.by_depth.items())}


@dataclass
class AdaptivePoint:
    """Adaptive halting at one tolerance: the cost (mean iterations) and what it buys (bits/byte)."""

    solver: str
    tol: float
    cap: int
    mean_iterations: float
    bits_per_byte: float
    halted_fraction: float  # positions that met the tolerance before the cap
    positions: int
    matched_depth: float | None = None  # fixed depth at the same mean depth (interpolated)
    matched_bits_per_byte: float | None = None

    @property
    def cost_vs_matched(self) -> float | None:
        if self.matched_bits_per_byte is None:
            return None
        return self.bits_per_byte - self.matched_bits_per_byte


def positions_mean(values: list[float | None], positions: list[int]) -> float | None:
    """The mean over all positions of figures that are each a mean over their own part's positions (disjoint
    parts of one measurement), so each part weighs by its positions; None when a part has no such figure."""
    if any(v is None for v in values):
        return None
    return sum(v * n for v, n in zip(values, positions, strict=True)) / sum(positions)


def merge_points(parts: list[AdaptivePoint], fixed_curve: dict[int, float] | None = None) -> AdaptivePoint:
    """One pass's adaptive point from those of its parts (disjoint windows, the same solver, tol and cap). The
    matched fixed depth is a function of the merged mean depth, so it is found again from `fixed_curve`."""
    first = parts[0]
    if len(parts) == 1 and not fixed_curve:
        return first
    if any((p.solver, p.tol, p.cap) != (first.solver, first.tol, first.cap) for p in parts):
        raise ValueError("parts of one adaptive point share its solver, tol and cap")
    positions = [p.positions for p in parts]

    def mean(name: str) -> float:
        return positions_mean([getattr(p, name) for p in parts], positions)

    point = AdaptivePoint(
        solver=first.solver,
        tol=first.tol,
        cap=first.cap,
        mean_iterations=mean("mean_iterations"),
        bits_per_byte=mean("bits_per_byte"),
        halted_fraction=mean("halted_fraction"),
        positions=sum(positions),
    )
    if fixed_curve:
        point.matched_depth = point.mean_iterations
        point.matched_bits_per_byte = matched_fixed_depth(fixed_curve, point.mean_iterations)
    return point


def matched_fixed_depth(curve: dict[int, float], mean_depth: float) -> float | None:
    """Fixed-depth bits/byte at a (fractional) mean depth, linear between the neighbouring measured depths."""
    if not curve:
        return None
    depths = sorted(curve)
    x = min(max(mean_depth, depths[0]), depths[-1])
    return float(np.interp(x, depths, [curve[d] for d in depths]))


# --- backends ----------------------------------------------------------------------------------------------


class OnnxBackend:
    """The exported embed/step/head graphs (eqlm.decoder.OnnxEqLM), numpy in and out."""

    name = "onnxruntime"

    def __init__(self, model):
        self.model = model
        self.max_positions = model.max_positions

    def embed(self, ids: np.ndarray):
        b, t = ids.shape
        return self.model.embed(ids, np.broadcast_to(np.arange(t), (b, t)))

    def zeros_like(self, x):
        return np.zeros_like(x)

    def ops(self) -> NumpyOps:
        return NumpyOps()

    def step(self, z, inj):
        empty = self.model.empty_kv(z.shape[0])
        fz, _, _, r = self.model.step(z, inj, empty, empty)
        return fz, np.asarray(r)

    def numpy(self, x) -> np.ndarray:
        return np.asarray(x)

    def nll(self, z, targets: np.ndarray) -> np.ndarray:
        return nll_from_logits(self.model.head(z), targets)


class TorchBackend:
    """An EqLM in torch (CPU or CUDA); residuals and log-likelihoods come back as numpy."""

    name = "torch"

    def __init__(self, model, device: str = "cpu"):
        import torch

        self.torch = torch
        self.model = model.eval().to(device)
        self.device = device
        self.max_positions = model.config.max_positions

    def embed(self, ids: np.ndarray):
        return self.model.embed(self.torch.as_tensor(ids, device=self.device))

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def ops(self) -> TorchOps:
        # Anderson's algebra in float64, as the numpy twin that the ONNX side runs does it
        return TorchOps(anderson_dtype=self.torch.float64)

    def step(self, z, inj):
        from .model import relative_residual

        fz, _, _ = self.model.block(z, inj)
        return fz, relative_residual(fz, z).float()  # float32, as the step graph's, for the halting comparison

    def numpy(self, x) -> np.ndarray:
        return x.cpu().numpy()

    def nll(self, z, targets: np.ndarray) -> np.ndarray:
        logits = self.model.head(z).double()
        t = self.torch.as_tensor(targets, device=self.device)
        out = self.torch.nn.functional.cross_entropy(logits.flatten(0, 1), t.flatten(), reduction="none")
        return out.reshape(t.shape).cpu().numpy()


def _no_grad(backend):
    if isinstance(backend, TorchBackend):
        return backend.torch.no_grad()
    import contextlib

    return contextlib.nullcontext()


def iterate(
    backend, ids: np.ndarray, max_depth: int, solver: str = DEFAULT_SOLVER, tol: float | None = None
) -> Iterator[tuple[int, object, np.ndarray, np.ndarray]]:
    """Yield (depth, z, residual [B,T], active-before-this-step [B,T]) for depth 1..max_depth (or until all halt).

    Without tol every position iterates; with tol a position halts after the iteration whose residual < tol.
    The iteration is fixed_point.FixedPoint's, as in EqLM.solve and the decoder; residuals and masks come back
    as numpy.
    """
    inj = backend.embed(ids)

    def step(z, _):
        return backend.step(z, inj)

    solve = FixedPoint(step, backend.zeros_like(inj), max_depth, ops=backend.ops(), solver=solver, tol=tol)
    for depth in solve:
        yield depth, solve.z, backend.numpy(solve.step_residual), backend.numpy(solve.updated)


def _batches(windows: np.ndarray, batch: int) -> Iterator[np.ndarray]:
    for start in range(0, len(windows), batch):
        yield windows[start : start + batch]


def profile_by_depth(
    backend,
    windows: np.ndarray,
    solver: str = DEFAULT_SOLVER,
    max_depth: int = DEPTH_MAX,
    tolerances=DIAL_TOLERANCES,
    batch: int = 8,
    progress: Callable[[float], None] | None = None,
) -> SolverProfile:
    """Fixed-depth figures at every depth 1..max_depth for the windows (each window's first byte is context)."""
    nll_sum = np.zeros(max_depth + 1)
    residuals: list[list[np.ndarray]] = [[] for _ in range(max_depth + 1)]
    count = 0
    batches = list(_batches(windows, batch))
    with _no_grad(backend):
        for done, chunk in enumerate(batches):
            inputs, targets = chunk[:, :-1], chunk[:, 1:]
            for depth, z, r, _ in iterate(backend, inputs, max_depth, solver):
                nll_sum[depth] += float(backend.nll(z, targets).sum())
                residuals[depth].append(np.asarray(r, dtype=np.float32).ravel())
            count += targets.size
            if progress:
                progress((done + 1) / len(batches))
    profile = SolverProfile(solver)
    for depth in range(1, max_depth + 1):
        r = np.concatenate(residuals[depth])
        q = residual_quantiles(r)
        profile.by_depth[depth] = DepthFigures(
            depth=depth,
            bits_per_byte=mean_bits_of_sum(nll_sum[depth], count),
            residual_median=q[0.5],
            residual_p95=q[0.95],
            converged={tolerance_key(t): converged_fraction(r, t) for t in tolerances},
            positions=count,
        )
    return profile


def adaptive_point(
    backend,
    windows: np.ndarray,
    tol: float,
    solver: str = DEFAULT_SOLVER,
    cap: int = DEPTH_MAX,
    batch: int = 8,
    fixed_curve: dict[int, float] | None = None,
) -> AdaptivePoint:
    """Adaptive halting at tol (cap iterations at most): mean iterations per position and held-out bits/byte."""
    nll_sum = 0.0
    iterations = 0
    halted = 0
    count = 0
    with _no_grad(backend):
        for chunk in _batches(windows, batch):
            inputs, targets = chunk[:, :-1], chunk[:, 1:]
            its = np.zeros(inputs.shape, dtype=np.int64)
            met = np.zeros(inputs.shape, dtype=bool)
            final = None
            for _, z, r, was_active in iterate(backend, inputs, cap, solver, tol):
                its += was_active
                met |= was_active & (r < np.float32(tol))
                final = z
            nll_sum += float(backend.nll(final, targets).sum())
            iterations += int(its.sum())
            halted += int(met.sum())
            count += targets.size
    point = AdaptivePoint(
        solver=solver,
        tol=tolerance_key(tol),
        cap=cap,
        mean_iterations=iterations / count,
        bits_per_byte=mean_bits_of_sum(nll_sum, count),
        halted_fraction=halted / count,
        positions=count,
    )
    if fixed_curve:
        point.matched_depth = point.mean_iterations
        point.matched_bits_per_byte = matched_fixed_depth(fixed_curve, point.mean_iterations)
    return point


@dataclass
class Evaluation:
    """The whole "quality and convergence by depth" evaluation of one model."""

    profiles: dict[str, SolverProfile]
    adaptive: list[AdaptivePoint]
    windows: int
    window: int
    backend: str


def evaluate(
    backend,
    windows: np.ndarray,
    solvers=SOLVERS,
    max_depth: int = DEPTH_MAX,
    tolerances=ADAPTIVE_TOLERANCES,
    cap: int = DEPTH_MAX,
    batch: int = 8,
    progress: Callable[[float, str], None] | None = None,
) -> Evaluation:
    """Fixed depth 1..max_depth per solver, then the adaptive rule at each tolerance against the same curve."""
    steps = len(solvers) * (1 + len(tolerances))
    done = 0

    def report(message: str, within: float = 0.0) -> None:
        if progress:
            progress((done + within) / steps, message)

    profiles, adaptive = {}, []
    for solver in solvers:
        profiles[solver] = profile_by_depth(
            backend,
            windows,
            solver,
            max_depth,
            batch=batch,
            progress=lambda f, s=solver: report(f"{s}: fixed depth 1-{max_depth}", f),
        )
        done += 1
        curve = profiles[solver].curve("bits_per_byte")
        for tol in tolerances:
            report(f"{solver}: adaptive, tol {tol:g}")
            adaptive.append(adaptive_point(backend, windows, tol, solver, cap, batch, curve))
            done += 1
    report("done")
    return Evaluation(profiles, adaptive, len(windows), int(windows.shape[1]) if len(windows) else 0, backend.name)
