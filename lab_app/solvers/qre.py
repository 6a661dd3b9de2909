"""Logit quantal response equilibria: Newton on log-odds at one λ, and the principal-branch path in λ.

Unknowns are log-odds against each player's first action, w = (u, v) with x = softmax(0, u), y = softmax(0, v).
The QRE equations are H(w, λ) = (u − λ·D_A y, v − λ·D_B x) = 0, where D_A y are row payoff differences
(A y)_i − (A y)_0 and D_B x the column ones. The Jacobian is analytic, so Newton converges quadratically.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.linalg import lu_factor, lu_solve
from scipy.linalg.lapack import dgesv

from eqlm.logprobs import softmax

from . import kernel
from .core import nash_conv


class _System:
    """The QRE equations of one game and their analytic derivatives."""

    def __init__(self, A: np.ndarray, B: np.ndarray):
        self.A, self.B = A, B
        self.m, self.n = A.shape
        self.DA = A[1:] - A[0]  # (m-1, n)
        self.DBt = (B[:, 1:] - B[:, :1]).T  # (n-1, m)
        self.d = self.m + self.n - 2
        self._J = np.eye(self.d)
        self._zu = np.zeros(self.m)
        self._zv = np.zeros(self.n)

    def probs(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = self.m - 1
        zu, zv = self._zu, self._zv
        zu[1:] = w[:k]
        zv[1:] = w[k:]
        return softmax(zu), softmax(zv)

    def H(self, w: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x, y = self.probs(w)
        k = self.m - 1
        F = np.empty(self.d)
        F[:k] = w[:k] - lam * (self.DA @ y)
        F[k:] = w[k:] - lam * (self.DBt @ x)
        return F, x, y

    def H_lambda(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return -np.concatenate((self.DA @ y, self.DBt @ x))

    def H_w(self, x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
        J = self._J.copy()
        self.fill_coupling(J, x, y, lam)
        return J

    def fill_coupling(self, J: np.ndarray, x: np.ndarray, y: np.ndarray, lam: float) -> None:
        """Write the off-diagonal blocks of H_w into J (its diagonal blocks are identities)."""
        k = self.m - 1
        if k and self.n > 1:
            # −λ D_A · dy/dv with dy/dv = (diag(y) − y yᵀ)[:, 1:], i.e. λ (D_A y − D_A[:, j]) y_j
            np.multiply((self.DA @ y)[:, None] - self.DA[:, 1:], lam * y[1:], out=J[:k, k : self.d])
            np.multiply((self.DBt @ x)[:, None] - self.DBt[:, 1:], lam * x[1:], out=J[k : self.d, :k])

    def residual(self, x: np.ndarray, y: np.ndarray, lam: float) -> float:
        """max |x − softmax(λAy)|, |y − softmax(λBᵀx)|: the fixed-point residual in probability space."""
        rx = np.abs(x - softmax(lam * (self.A @ y))).max()
        ry = np.abs(y - softmax(lam * (self.B.T @ x))).max()
        return float(max(rx, ry))

    def log_odds(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.concatenate((np.log(x[1:]) - math.log(x[0]), np.log(y[1:]) - math.log(y[0])))


def _solve(M: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """M⁻¹b by LAPACK's dgesv directly (numpy's wrapper costs more than the solve at these sizes)."""
    _, _, sol, info = dgesv(M, b)
    return sol if info == 0 else None


def _newton(sys: _System, lam: float, w: np.ndarray, tol: float, max_iter: int = 60) -> tuple:
    """Damped Newton on H(·, λ) with a backtracking line search on ‖H‖₂. Returns (w, x, y, residual, ok, its).

    Iterates until the log-odds residual is tiny, then checks the probability-space residual against tol.
    """
    F, x, y = sys.H(w, lam)
    norm = math.sqrt(F @ F)
    for it in range(max_iter + 1):
        if float(np.abs(F).max()) <= tol:
            res = sys.residual(x, y, lam)
            if res <= tol:
                return w, x, y, res, True, it
        if it == max_iter:
            break
        dw = _solve(sys.H_w(x, y, lam), -F)
        if dw is None:
            break
        step = 1.0
        while True:
            w_try = w + step * dw
            F_try, x_try, y_try = sys.H(w_try, lam)
            norm_try = math.sqrt(F_try @ F_try)
            if norm_try <= (1 - 1e-4 * step) * norm or step < 1e-6:
                break
            step *= 0.5
        if step < 1e-6:
            break
        w, F, x, y, norm = w_try, F_try, x_try, y_try, norm_try
    return w, x, y, sys.residual(x, y, lam), False, it


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
    sys = _System(A, B)
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
        pred = z + h * t
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
        corrector_total += its
        if not ok:
            h *= 0.5
            continue
        # New tangent, oriented like the old one.
        sys.fill_coupling(aug, x, y, zc[d])
        aug[:d, d] = sys.H_lambda(x, y)
        aug[d, :] = t
        rhs = np.zeros(d + 1)
        rhs[d] = 1.0
        factors, piv = lu_factor(aug, check_finite=False)
        t_new = lu_solve((factors, piv), rhs, check_finite=False)
        t_new /= math.sqrt(t_new @ t_new)
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
