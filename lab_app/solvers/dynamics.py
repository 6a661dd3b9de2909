"""Learning dynamics on matrix games: magnetic mirror descent (MMD) and gradient descent–ascent (GDA).

Both players ascend their own payoff: the row player's gradient is A y, the column player's is Bᵀ x.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .core import nash_conv, profile, project_simplex


def record_stride(steps: int, record: int) -> int:
    return max(1, math.ceil(steps / max(1, record)))


class _Recorder:
    def __init__(self, A, B, steps: int, record: int, target=None):
        self.A, self.B = A, B
        self.target = target  # (x, y) of the QRE an MMD run should converge to, when known
        self.distance: list[float] = []
        self.stride = record_stride(steps, record)
        self.iteration: list[int] = []
        self.nc_last: list[float] = []
        self.nc_avg: list[float] = []
        self.xs: list[list[float]] = []
        self.ys: list[list[float]] = []

    def add(self, t, x, y, ax, ay):
        self.iteration.append(t)
        self.nc_last.append(nash_conv(self.A, self.B, x, y))
        self.nc_avg.append(nash_conv(self.A, self.B, ax, ay))
        self.xs.append(x.tolist())
        self.ys.append(y.tolist())
        if self.target is not None:
            self.distance.append(float(max(np.abs(x - self.target[0]).max(), np.abs(y - self.target[1]).max())))

    def result(self, x, y, ax, ay, zero_sum: bool, iterations: int, converged: bool) -> dict:
        trace = {"iteration": self.iteration, "nashconv_last": self.nc_last, "nashconv_average": self.nc_avg}
        if self.target is not None:
            trace["distance_to_qre"] = self.distance
        return {
            "iterations": iterations,
            "converged": converged,
            "last": profile(self.A, self.B, x, y, zero_sum),
            "average": profile(self.A, self.B, ax, ay, zero_sum),
            "trace": trace,
            "trajectory": {"x": self.xs, "y": self.ys},
        }


def raise_time_limit(t: int):
    from . import TimeLimitExceeded

    raise TimeLimitExceeded(f"stopped at iteration {t}: past the time limit")


def _normalized_logits(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log p, p) for p = softmax(z), computed stably."""
    z = z - z.max()
    e = np.exp(z)
    s = e.sum()
    return z - math.log(s), e / s


def mmd(
    A: np.ndarray,
    B: np.ndarray,
    x0: np.ndarray,
    y0: np.ndarray,
    *,
    eta: float,
    tau: float,
    steps: int,
    magnet_x: np.ndarray,
    magnet_y: np.ndarray,
    alternating: bool = False,
    reset_every: int = 0,
    tol: float = 0.0,
    record: int = 200,
    zero_sum: bool = False,
    deadline: float | None = None,
    target: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    """Magnetic mirror descent with the negative-entropy regulariser (Sokota et al. 2023), exact prox step.

    x⁺ ∝ (x · ρ^{ητ} · exp(η g))^{1/(1+ητ)}, computed on logits. Its fixed point is x = softmax(g/τ + log ρ):
    the logit QRE at λ = 1/τ of the game whose payoffs are shifted by τ·log ρ. With `reset_every = k` the
    magnet is moved to the current iterate every k steps (regularised Nash dynamics). With `target` (that
    QRE), the trace also records the last iterate's max-norm distance to it.
    """
    c = 1.0 / (1.0 + eta * tau)
    ce = c * eta
    zx, x = _normalized_logits(np.log(x0))
    zy, y = _normalized_logits(np.log(y0))
    # The magnet's pull c·ητ·log ρ is constant between resets.
    kx, ky = (c * eta * tau) * np.log(magnet_x), (c * eta * tau) * np.log(magnet_y)
    sx, sy = np.zeros_like(x), np.zeros_like(y)  # running sums of the iterates (averages = sums / t)
    rec = _Recorder(A, B, steps, record, target)
    rec.add(0, x, y, x, y)
    converged, t = False, 0
    Bt = B.T
    for t in range(1, steps + 1):
        if deadline is not None and t % 512 == 0 and time.monotonic() > deadline:
            raise_time_limit(t)
        gx = A @ y
        if not alternating:
            gy = Bt @ x
        zx_new, x_new = _normalized_logits(c * zx + kx + ce * gx)
        if alternating:
            gy = Bt @ x_new
        zy_new, y_new = _normalized_logits(c * zy + ky + ce * gy)
        if tol > 0:
            converged = max(np.abs(x_new - x).max(), np.abs(y_new - y).max()) < tol
        zx, x, zy, y = zx_new, x_new, zy_new, y_new
        sx += x
        sy += y
        if reset_every and t % reset_every == 0:
            kx, ky = (c * eta * tau) * zx, (c * eta * tau) * zy
        if t % rec.stride == 0 or t == steps or converged:
            rec.add(t, x, y, sx / t, sy / t)
        if converged:
            break
    return rec.result(x, y, sx / max(t, 1), sy / max(t, 1), zero_sum, t, converged)


def gda(
    A: np.ndarray,
    B: np.ndarray,
    x0: np.ndarray,
    y0: np.ndarray,
    *,
    eta: float,
    steps: int,
    alternating: bool = False,
    tol: float = 0.0,
    record: int = 200,
    zero_sum: bool = False,
    deadline: float | None = None,
) -> dict:
    """Projected gradient descent–ascent: each player ascends its own payoff, then projects onto the simplex."""
    x, y = x0.astype(float).copy(), y0.astype(float).copy()
    ax, ay = x.copy(), y.copy()
    rec = _Recorder(A, B, steps, record)
    rec.add(0, x, y, ax, ay)
    converged, t = False, 0
    Bt = B.T
    for t in range(1, steps + 1):
        if deadline is not None and t % 512 == 0 and time.monotonic() > deadline:
            raise_time_limit(t)
        x_new = project_simplex(x + eta * (A @ y))
        gy = Bt @ (x_new if alternating else x)
        y_new = project_simplex(y + eta * gy)
        diff = max(np.abs(x_new - x).max(), np.abs(y_new - y).max())
        x, y = x_new, y_new
        ax += (x - ax) / t
        ay += (y - ay) / t
        converged = tol > 0 and diff < tol
        if t % rec.stride == 0 or t == steps or converged:
            rec.add(t, x, y, ax, ay)
        if converged:
            break
    return rec.result(x, y, ax, ay, zero_sum, t, converged)
