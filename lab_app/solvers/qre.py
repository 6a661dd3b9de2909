"""Logit quantal response equilibria at one λ: Newton from the centroid (zero-sum games), or along the principal
branch to λ (qre_path.trace_path) and Newton there.

The equations and Newton are qre_newton's, the path in λ is qre_path's.
"""

from __future__ import annotations

import numpy as np

from . import kernel
from .core import nash_conv
from .qre_newton import _newton, _System
from .qre_path import trace_path


def qre(
    A: np.ndarray, B: np.ndarray, lam: float, *, tol: float = 1e-12, zero_sum: bool = False, compiled: bool = True
) -> dict:
    """The logit QRE at λ on the principal branch, to fixed-point residual ≤ tol.

    Zero-sum games have one QRE per λ, so Newton starts from the centroid. Otherwise (or if that fails) the
    branch is followed from λ = 0 by the arclength path tracer to where it first reaches λ, and Newton finishes
    there. (Continuation in λ alone cannot pass a turning point: beyond one it lands on another branch.)
    The compiled kernel takes the same steps when it is built; `compiled=False` runs the numpy code.
    """
    A = np.ascontiguousarray(A, dtype=float)
    B = np.ascontiguousarray(B, dtype=float)
    m, n = A.shape
    if m + n == 2:
        x, y = np.ones(1), np.ones(1)
        return _qre_result(A, B, lam, x, y, 0.0, True, 0, "trivial", zero_sum)
    lib = kernel.load() if compiled else None
    if lib is not None:
        return _qre_compiled(lib, A, B, lam, tol, zero_sum)
    sys = _System(A, B)
    ok, its, w = False, 0, np.zeros(sys.d)
    if zero_sum:
        w, x, y, res, ok, its = _newton(sys, lam, w, tol, max_iter=8)
        method = "newton"
    if not ok:
        path = trace_path(A, B, lam_max=lam, stop_at=lam, compiled=False)
        p, q, w = _rebase(m, path["_w_at_stop"])
        w, x, y, res, ok, its2 = _newton(_System(A[p][:, q], B[p][:, q]), lam, w, tol)
        x, y = x[p], y[q]
        its += its2 + path["_corrector_iterations"]
        method = "arclength continuation + newton"
    return _qre_result(A, B, lam, x, y, res, ok, its, method, zero_sum)


def _rebase(m: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-odds against each player's most likely action instead of the first: (row swap, column swap, w).

    At large λ the first action's probability can be e^-1000, and log-odds against it then hold the answer in
    numbers of size λ, where rounding stops Newton at a residual of ~1e-12; against the likeliest action the
    numbers stay small. The swaps are transpositions, so each is its own inverse.
    """
    u, v = np.concatenate(([0.0], w[: m - 1])), np.concatenate(([0.0], w[m - 1 :]))
    i, j = int(np.argmax(u)), int(np.argmax(v))
    p, q = np.arange(u.size), np.arange(v.size)
    p[0], p[i], q[0], q[j] = i, 0, j, 0
    return p, q, np.concatenate(((u[p] - u[i])[1:], (v[q] - v[j])[1:]))


def _qre_compiled(lib, A: np.ndarray, B: np.ndarray, lam: float, tol: float, zero_sum: bool) -> dict:
    m, n = A.shape
    w, x, y, info = np.zeros(m + n - 2), np.empty(m), np.empty(n), np.empty(2)
    a, b, wp, xp, yp, ip = A.ctypes.data, B.ctypes.data, w.ctypes.data, x.ctypes.data, y.ctypes.data, info.ctypes.data
    ok, its = 0, 0
    if zero_sum:
        ok = lib.lab_newton(m, n, a, b, lam, wp, tol, 8, xp, yp, ip)
        its, method = int(info[1]), "newton"
    if ok != 1:
        counts = np.empty(4)
        w[:] = 0.0
        status = lib.lab_trace(m, n, a, b, lam, 2000, 1e-7, lam, -1.0, None, None, wp, counts.ctypes.data)
        p, q, w = _rebase(m, w)
        Ap, Bp = np.ascontiguousarray(A[p][:, q]), np.ascontiguousarray(B[p][:, q])
        ok = lib.lab_newton(m, n, Ap.ctypes.data, Bp.ctypes.data, lam, w.ctypes.data, tol, 60, xp, yp, ip)
        x, y = x[p], y[q]
        ok = ok if status >= 0 else -1
        its += int(info[1]) + int(counts[2])
        method = "arclength continuation + newton"
    if ok < 0:
        raise MemoryError("the QRE kernel could not allocate its work space")
    return _qre_result(A, B, lam, x, y, float(info[0]), ok == 1, its, method, zero_sum)


def _qre_result(A, B, lam, x, y, res, ok, its, method, zero_sum) -> dict:
    nc = nash_conv(A, B, x, y)
    out = {
        "lambda": lam,
        "x": x.tolist(),
        "y": y.tolist(),
        "residual": res,
        "converged": bool(ok),
        "newton_iterations": its,
        "method": method,
        "nashconv": nc,
    }
    if zero_sum:
        out["exploitability"] = nc / 2
    return out
