"""Shared pieces of the solvers: simplex projection, NashConv, and fractions for display (softmax: eqlm.logprobs)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .games import SolverInputError

METRIC_NOTE = (
    "NashConv = Σ over both players of (best-response payoff − current payoff); "
    "for zero-sum games exploitability = NashConv / 2 is reported too."
)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (sort-based, Held et al. / Duchi et al.)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / ind > 0)[0][-1]
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def nash_conv(A: np.ndarray, B: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Σ_i (best-response payoff − current payoff); zero exactly at a Nash equilibrium."""
    Ay = A @ y
    Btx = B.T @ x
    return float(max(Ay.max() - x @ Ay, 0.0) + max(Btx.max() - x @ (B @ y), 0.0))


def profile(A: np.ndarray, B: np.ndarray, x: np.ndarray, y: np.ndarray, zero_sum: bool) -> dict:
    """A strategy profile as the JSON every solver returns: strategies, payoffs and the metric."""
    nc = nash_conv(A, B, x, y)
    out = {
        "x": x.tolist(),
        "y": y.tolist(),
        "payoff_row": float(x @ A @ y),
        "payoff_col": float(x @ B @ y),
        "nashconv": nc,
    }
    if zero_sum:
        out["exploitability"] = nc / 2
    return out


def fraction_string(value: float, max_denominator: int = 1000, tol: float = 1e-9) -> str | None:
    """ "3/7" when the value is within tol of a fraction with a small denominator, else None."""
    if value == 0.0 or value == 1.0:  # most entries of a limiting equilibrium; Fraction is slow
        return "0" if value == 0.0 else "1"
    frac = Fraction(float(value)).limit_denominator(max_denominator)
    if abs(float(frac) - value) > tol:
        return None
    return str(frac.numerator) if frac.denominator == 1 else f"{frac.numerator}/{frac.denominator}"


def start_point(spec, size: int, field: str, kind: str = "uniform") -> np.ndarray:
    """A start strategy: an explicit probability vector, "uniform", or "skewed" (∝ 1..k or k..1)."""
    if spec is None:
        spec = kind
    if spec == "uniform":
        return np.full(size, 1.0 / size)
    if spec in ("skewed", "skewed_reverse"):
        w = np.arange(1, size + 1, dtype=float)
        if spec == "skewed_reverse":
            w = w[::-1].copy()
        return w / w.sum()
    return probability_vector(spec, size, field)


def probability_vector(spec, size: int, field: str, positive: bool = False) -> np.ndarray:
    if not isinstance(spec, list) or len(spec) != size:
        raise SolverInputError(field, f"must be a list of {size} probabilities")
    try:
        v = np.array(spec, dtype=float)
    except (TypeError, ValueError):
        raise SolverInputError(field, "must contain numbers only")
    if not np.all(np.isfinite(v)) or np.any(v < 0) or (positive and np.any(v <= 0)):
        raise SolverInputError(field, "entries must be finite and " + ("positive" if positive else "non-negative"))
    total = v.sum()
    if not abs(total - 1.0) <= 1e-6:
        raise SolverInputError(field, f"entries must sum to 1 (they sum to {total:.6g})")
    return v / total
