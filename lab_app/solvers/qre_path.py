"""The principal-branch logit QRE path in λ, from λ = 0, by pseudo-arclength predictor–corrector continuation.

It follows the branch through turning points (where λ alone cannot), reports them and the bifurcation points it
crosses, and ends at λ_max (or, for qre, at the point where the branch first reaches a given λ). The compiled kernel
(qre_kernel.c) takes the same steps when it is built.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.linalg import lu_factor, lu_solve

from . import kernel
from .core import nash_conv
from .qre_newton import _solve, _System


def trace_path(
    A: np.ndarray,
    B: np.ndarray,
    *,
    lam_max: float = 100.0,
    max_points: int = 2000,
    tol: float = 1e-7,
    stop_at: float | None = None,
    deadline: float | None = None,
    compiled: bool = True,
) -> dict:
    """Principal-branch QRE path from λ = 0 by pseudo-arclength predictor–corrector continuation.

    The corrector stops once a Newton step is below tol (relative): convergence is quadratic, so the point
    is then accurate to about tol². Turning points are where dλ/ds changes sign; bifurcation points are
    where the determinant of the augmented Jacobian [[H_w, H_λ], [tᵀ, 0]] changes sign while the tangent
    keeps its orientation. A step whose tangent turns too far, or across which that determinant changes sign,
    is retried at half the length: both are the marks of a jump to another branch (down to steps of 1e-6,
    where a sign change that persists is a bifurcation). The compiled kernel takes the same steps when it is built.
    """
    A = np.ascontiguousarray(A, dtype=float)
    B = np.ascontiguousarray(B, dtype=float)
    lib = kernel.load() if compiled and A.shape[0] + A.shape[1] > 2 else None
    if lib is not None:
        return _trace_compiled(lib, A, B, lam_max, max_points, tol, stop_at, deadline)
    return _trace_numpy(_System(A, B), lam_max, max_points, tol, stop_at, deadline)


def _corrector(sys: _System, aug: np.ndarray, pred: np.ndarray, t: np.ndarray, h: float, tol: float) -> tuple:
    """Newton on H = 0 and t·(z − pred) = 0 from the predicted point: (ok, iterations, z, x, y)."""
    d = sys.d
    zc = pred.copy()
    ok, its = False, 0
    for its in range(1, 9):  # noqa: B007 (its counts the corrector iterations after the loop)
        F, x, y = sys.H(zc[:d], zc[d])
        sys.fill_coupling(aug, x, y, zc[d])
        aug[:d, d] = sys.H_lambda(x, y)
        aug[d, :] = t
        G = np.concatenate((F, [t @ (zc - pred)]))
        dz = _solve(aug, -G)
        if dz is None:
            break
        zc = zc + dz
        step = float(np.abs(dz).max())
        if step > 0.5 * h + 1e-9:  # the predictor was far from any point: shorten the step
            break
        if step <= tol * (1.0 + float(np.abs(zc).max())):
            F, x, y = sys.H(zc[:d], zc[d])
            ok = float(np.abs(F).max()) <= 1e-8 * (1.0 + abs(zc[d]))
            break
    return ok, its, zc, x, y


def _tangent(sys: _System, aug: np.ndarray, zc: np.ndarray, x, y, t: np.ndarray) -> tuple:
    """The new tangent at zc, oriented like the old one t, and the LU factors of the augmented Jacobian."""
    d = sys.d
    sys.fill_coupling(aug, x, y, zc[d])
    aug[:d, d] = sys.H_lambda(x, y)
    aug[d, :] = t
    rhs = np.zeros(d + 1)
    rhs[d] = 1.0
    factors, piv = lu_factor(aug, check_finite=False)
    t_new = lu_solve((factors, piv), rhs, check_finite=False)
    t_new /= math.sqrt(t_new @ t_new)
    return t_new, factors, piv


def _trace_numpy(sys: _System, lam_max, max_points, tol, stop_at, deadline) -> dict:
    """trace_path in numpy."""
    d = sys.d
    lam = 0.0
    w = np.zeros(d)
    x, y = sys.probs(w)
    points = [(0.0, x, y)]
    turning, bifurcations = [], []
    corrector_total = 0
    if d == 0:
        return _path_result(sys, points, turning, bifurcations, "trivial", w, corrector_total)
    # Tangent at λ = 0: H_w = I, so dw/dλ = −H_λ.
    t = np.concatenate((-sys.H_lambda(x, y), [1.0]))
    t /= np.linalg.norm(t)
    z = np.concatenate((w, [lam]))
    h = 0.05 * max(1.0, min(lam_max, 10.0))
    h_max = max(1.0, lam_max / 4)
    det_sign = None
    status = "reached lambda_max"
    aug = np.zeros((d + 1, d + 1))
    aug[:d, :d] = np.eye(d)  # H_w's diagonal blocks; fill_coupling writes the rest at each iterate
    while True:
        if len(points) >= max_points:
            status = "stopped at max_points"
            break
        if deadline is not None and time.monotonic() > deadline:
            from . import TimeLimitExceeded

            raise TimeLimitExceeded(f"stopped at λ = {z[d]:.4g}: past the time limit")
        if h < 1e-12:
            status = "step size underflow"
            break
        ok, its, zc, x, y = _corrector(sys, aug, z + h * t, t, h, tol)
        corrector_total += its
        if not ok:
            h *= 0.5
            continue
        t_new, factors, piv = _tangent(sys, aug, zc, x, y, t)
        if (t @ t_new < 0.95 or zc[d] < 0) and h > 1e-9:
            h *= 0.5  # the tangent turned too far in one step (or λ < 0): a branch jump, not the path
            continue
        # det [[H_w, H_λ], [tᵀ]] has the sign of det [[H_w, H_λ], [t_newᵀ]] (t·t_new > 0), so one LU gives both.
        sign = _lu_det_sign(factors, piv)
        if det_sign is not None and sign != 0 and sign != det_sign and h > 1e-6:
            # The orientation flipped. Along one branch it cannot (turning points keep it): this step jumped to
            # another branch, unless the flip persists down to tiny steps, which is a bifurcation point.
            h *= 0.5
            continue
        lam_new = float(zc[d])
        if t_new[d] * t[d] < 0:
            turning.append(_event(sys, z, zc, t[d], t_new[d], "turning point"))
        elif det_sign is not None and sign != 0 and sign != det_sign:
            bifurcations.append(_event(sys, z, zc, 1.0, -1.0, "bifurcation"))
        det_sign = sign if sign != 0 else det_sign
        if stop_at is not None and lam_new >= stop_at and z[d] < stop_at:
            frac = (stop_at - z[d]) / (lam_new - z[d])
            w_stop = z[:d] + frac * (zc[:d] - z[:d])
            return {"_w_at_stop": w_stop, "_corrector_iterations": corrector_total}
        z, t = zc, t_new
        points.append((lam_new, x, y))
        if lam_new >= lam_max:
            break
        if its <= 3:
            h = min(h * 2.0, h_max, 0.1 + 0.3 * abs(lam_new))
        elif its >= 6:
            h *= 0.6
    if stop_at is not None:
        return {"_w_at_stop": z[:d], "_corrector_iterations": corrector_total}
    return _path_result(sys, points, turning, bifurcations, status, z[:d], corrector_total)


_TRACE_STATUS = {0: "reached lambda_max", 1: "stopped at max_points", 2: "step size underflow"}


def _trace_compiled(lib, A, B, lam_max, max_points, tol, stop_at, deadline) -> dict:
    m, n = A.shape
    width = 2 + m + n
    record = stop_at is None
    points = np.empty((max_points, width)) if record else None
    events = np.empty((max_points, width)) if record else None
    w_end, counts = np.empty(m + n - 2), np.empty(4)
    status = lib.lab_trace(
        m, n, A.ctypes.data, B.ctypes.data, lam_max, max_points, tol, -1.0 if stop_at is None else stop_at,
        -1.0 if deadline is None else deadline, None if points is None else points.ctypes.data,
        None if events is None else events.ctypes.data, w_end.ctypes.data, counts.ctypes.data,
    )  # fmt: skip
    if status < 0:
        raise MemoryError("the QRE kernel could not allocate its work space")
    if status == 4:
        from . import TimeLimitExceeded

        raise TimeLimitExceeded(f"stopped at λ = {counts[3]:.4g}: past the time limit")
    if not record:
        return {"_w_at_stop": w_end, "_corrector_iterations": int(counts[2])}
    rows = points[: int(counts[0])].tolist()
    out_points = [{"lambda": r[0], "x": r[2 : 2 + m], "y": r[2 + m :], "nashconv": r[1]} for r in rows]
    turning, bifurcations = [], []
    for e in events[: int(counts[1])].tolist():
        kind = "turning point" if e[0] == 0 else "bifurcation"
        (turning if e[0] == 0 else bifurcations).append(
            {"kind": kind, "lambda": e[1], "x": e[2 : 2 + m], "y": e[2 + m :]}
        )
    from .nash import limiting_equilibrium

    last = points[int(counts[0]) - 1]
    return {
        "points": out_points,
        "turning_points": turning,
        "bifurcations": bifurcations,
        "status": _TRACE_STATUS[status],
        "lambda_end": rows[-1][0],
        "limit": limiting_equilibrium(A, B, last[2 : 2 + m].copy(), last[2 + m :].copy()),
        "corrector_iterations": int(counts[2]),
    }


def _lu_det_sign(factors: np.ndarray, piv: np.ndarray) -> int:
    signs = np.sign(np.diag(factors))
    if np.any(signs == 0):
        return 0
    swaps = int(np.count_nonzero(piv != np.arange(piv.size)))
    return int(np.prod(signs)) * (-1 if swaps % 2 else 1)


def _event(sys, z0, z1, a0: float, a1: float, kind: str) -> dict:
    """Locate a sign change of a quantity linearly between two path points."""
    frac = a0 / (a0 - a1) if a0 != a1 else 0.5
    zi = z0 + frac * (z1 - z0)
    x, y = sys.probs(zi[:-1])
    return {"kind": kind, "lambda": float(zi[-1]), "x": x.tolist(), "y": y.tolist()}


def _path_result(sys, points, turning, bifurcations, status, w_end, corrector_total) -> dict:
    from .nash import limiting_equilibrium

    out_points = [
        {"lambda": lam, "x": x.tolist(), "y": y.tolist(), "nashconv": nash_conv(sys.A, sys.B, x, y)}
        for lam, x, y in points
    ]
    lam, x, y = points[-1]
    return {
        "points": out_points,
        "turning_points": turning,
        "bifurcations": bifurcations,
        "status": status,
        "lambda_end": lam,
        "limit": limiting_equilibrium(sys.A, sys.B, x, y),
        "corrector_iterations": corrector_total,
    }
