"""Nash equilibria of bimatrix games: vertex enumeration, Lemke–Howson, the zero-sum LP, support polishing.

Polytopes (payoffs shifted positive, A' = A − min A + 1, B' likewise): P = {x ≥ 0 : B'ᵀx ≤ 1} carries
labels i (x_i = 0) and m+j ((B'ᵀx)_j = 1); Q = {y ≥ 0 : A'y ≤ 1} carries labels i ((A'y)_i = 1) and
m+j (y_j = 0). Completely labelled vertex pairs, normalised, are the extreme equilibria.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
from scipy.linalg.lapack import dgesv

from .core import fraction_string, nash_conv, profile

EPS = 1e-9


def _positive(M: np.ndarray) -> np.ndarray:
    return M - M.min() + 1.0


def scale_of(A: np.ndarray, B: np.ndarray) -> float:
    return max(1.0, float(np.abs(A).max()), float(np.abs(B).max()))


def _vertices(M: np.ndarray, deadline: float) -> tuple[list[np.ndarray], bool]:
    """Vertices ≠ 0 of {z ≥ 0 : M z ≤ 1} (M is r×s, z ∈ R^s), as dense vectors; (vertices, complete)."""
    r, s = M.shape
    found: dict[tuple, np.ndarray] = {}
    complete = True
    for k in range(1, min(r, s) + 1):
        supports = np.array(list(itertools.combinations(range(s), k)), dtype=np.intp)
        tights = np.array(list(itertools.combinations(range(r), k)), dtype=np.intp)
        chunk = max(1, 40000 // len(supports))
        for start in range(0, len(tights), chunk):
            if time.monotonic() > deadline:
                return list(found.values()), False
            T = tights[start : start + chunk]
            # mats[a, b] = M[T_a][:, S_b]  (k×k)
            mats = M[T[:, None, :, None], supports[None, :, None, :]].reshape(-1, k, k)
            dets = np.linalg.det(mats)
            keep = np.abs(dets) > 1e-12
            if not keep.any():
                continue
            sol = np.linalg.solve(mats[keep], np.ones((int(keep.sum()), k, 1)))[..., 0]
            sup = np.broadcast_to(supports[None, :, :], (len(T), len(supports), k)).reshape(-1, k)[keep]
            ok = np.all(sol >= -EPS, axis=1)
            for zs, idx in zip(sol[ok], sup[ok], strict=True):
                z = np.zeros(s)
                z[idx] = np.maximum(zs, 0.0)
                if np.all(M @ z <= 1 + EPS):
                    key = tuple(np.round(z, 9))
                    found.setdefault(key, z)
    return list(found.values()), complete


def _labels_p(x: np.ndarray, Bp: np.ndarray, m: int) -> int:
    mask = 0
    for i in np.nonzero(x <= EPS)[0]:
        mask |= 1 << int(i)
    for j in np.nonzero(np.abs(Bp.T @ x - 1) <= EPS)[0]:
        mask |= 1 << (m + int(j))
    return mask


def _labels_q(y: np.ndarray, Ap: np.ndarray, m: int) -> int:
    mask = 0
    for i in np.nonzero(np.abs(Ap @ y - 1) <= EPS)[0]:
        mask |= 1 << int(i)
    for j in np.nonzero(y <= EPS)[0]:
        mask |= 1 << (m + int(j))
    return mask


def equilibrium_key(x, y) -> tuple:
    return tuple(round(float(v), 9) for v in list(x) + list(y))


def vertex_enumeration(A: np.ndarray, B: np.ndarray, time_limit: float = 5.0) -> tuple[list[tuple], bool]:
    """All extreme equilibria (x, y), sorted lexicographically; `complete` is False if time ran out."""
    m, n = A.shape
    Ap, Bp = _positive(A), _positive(B)
    deadline = time.monotonic() + time_limit
    xs, complete_x = _vertices(Bp.T, deadline)
    ys, complete_y = _vertices(Ap, deadline)
    full = (1 << (m + n)) - 1
    lx = [_labels_p(x, Bp, m) for x in xs]
    ly = [_labels_q(y, Ap, m) for y in ys]
    eqs = {}
    for x, a in zip(xs, lx, strict=True):
        for y, b in zip(ys, ly, strict=True):
            if a | b == full:
                xn, yn = x / x.sum(), y / y.sum()
                eqs.setdefault(equilibrium_key(xn, yn), (xn, yn))
    return [eqs[k] for k in sorted(eqs)], complete_x and complete_y


def lemke_howson(A: np.ndarray, B: np.ndarray, label: int = 0, max_pivots: int = 100000) -> tuple:
    """One equilibrium by complementary pivoting from the artificial equilibrium, dropping `label`."""
    m, n = A.shape
    Ap, Bp = _positive(A), _positive(B)
    # Column index = label in both tableaux: P has x (labels 0..m-1) and slacks s (m..m+n-1);
    # Q has slacks r (0..m-1) and y (m..m+n-1).
    tab_p = np.hstack((Bp.T, np.eye(n), np.ones((n, 1))))
    tab_q = np.hstack((np.eye(m), Ap, np.ones((m, 1))))
    basis_p = list(range(m, m + n))
    basis_q = list(range(m))
    entering = label
    in_p = label < m  # the dropped label's variable enters P if it is an x, Q if it is a y
    pivots = 0
    while pivots < max_pivots:
        tab, basis = (tab_p, basis_p) if in_p else (tab_q, basis_q)
        col = tab[:, entering]
        pos = col > EPS
        if not pos.any():
            raise ArithmeticError("Lemke–Howson: unbounded ray (degenerate game)")
        ratios = np.full(col.shape, np.inf)
        ratios[pos] = tab[pos, -1] / col[pos]
        row = int(np.argmin(ratios))
        tab[row] /= tab[row, entering]
        factors = tab[:, entering].copy()
        factors[row] = 0.0
        tab -= np.outer(factors, tab[row])
        leaving = basis[row]
        basis[row] = entering
        pivots += 1
        if leaving == label:
            break
        entering = leaving  # its complementary twin (same label) enters the other tableau
        in_p = not in_p
    else:
        raise ArithmeticError(f"Lemke–Howson did not finish within {max_pivots} pivots (a degenerate game cycles)")
    x = np.zeros(m)
    y = np.zeros(n)
    for r, b in enumerate(basis_p):
        if b < m:
            x[b] = tab_p[r, -1]
    for r, b in enumerate(basis_q):
        if b >= m:
            y[b - m] = tab_q[r, -1]
    x, y = np.maximum(x, 0), np.maximum(y, 0)
    return x / x.sum(), y / y.sum(), pivots


def solve_support(A: np.ndarray, B: np.ndarray, rows, cols) -> tuple[np.ndarray, np.ndarray] | None:
    """The profile with the given supports making each player indifferent over its support, or None."""
    m, n = A.shape
    rows, cols = list(rows), list(cols)
    if not rows or not cols:
        return None
    # y on cols: A[rows, cols] y − v = 0, Σy = 1.
    My = np.zeros((len(rows) + 1, len(cols) + 1))
    My[: len(rows), : len(cols)] = A[rows][:, cols]
    My[: len(rows), -1] = -1
    My[-1, : len(cols)] = 1
    Mx = np.zeros((len(cols) + 1, len(rows) + 1))
    Mx[: len(cols), : len(rows)] = B[rows][:, cols].T
    Mx[: len(cols), -1] = -1
    Mx[-1, : len(rows)] = 1
    rhs_y = np.zeros(len(rows) + 1)
    rhs_y[-1] = 1
    rhs_x = np.zeros(len(cols) + 1)
    rhs_x[-1] = 1
    try:
        if My.shape[0] == My.shape[1] and Mx.shape[0] == Mx.shape[1]:
            # LAPACK's dgesv directly: numpy's wrapper costs more than these small solves.
            *_, sy, info_y = dgesv(My, rhs_y)
            *_, sx, info_x = dgesv(Mx, rhs_x)
            if info_y or info_x:
                return None
        else:
            sy = np.linalg.lstsq(My, rhs_y, rcond=None)[0]
            sx = np.linalg.lstsq(Mx, rhs_x, rcond=None)[0]
    except np.linalg.LinAlgError:
        return None
    x = np.zeros(m)
    y = np.zeros(n)
    x[rows] = sx[:-1]
    y[cols] = sy[:-1]
    if x.min() < -1e-9 or y.min() < -1e-9:
        return None
    x, y = np.maximum(x, 0), np.maximum(y, 0)
    if x.sum() <= 0 or y.sum() <= 0:
        return None
    return x / x.sum(), y / y.sum()


def polish(A: np.ndarray, B: np.ndarray, x: np.ndarray, y: np.ndarray, thresholds=(1e-6,)) -> tuple:
    """Re-solve an approximate equilibrium exactly on its support; keep it only if NashConv improves."""
    best = (x, y, nash_conv(A, B, x, y))
    tried = set()
    for thr in thresholds:
        rows = np.nonzero(x > thr)[0]
        cols = np.nonzero(y > thr)[0]
        support = (rows.tobytes(), cols.tobytes())
        if support in tried:  # thresholds often cut the same support: the same solve again
            continue
        tried.add(support)
        sol = solve_support(A, B, rows, cols)
        if sol is not None:
            nc = nash_conv(A, B, *sol)
            if nc < best[2]:
                best = (sol[0], sol[1], nc)
    return best


def limiting_equilibrium(A: np.ndarray, B: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict:
    """The Nash equilibrium at the end of a QRE path: the end point's support, solved exactly."""
    tol = 1e-9 * scale_of(A, B)
    xs, ys, nc = polish(A, B, x, y, thresholds=(1e-2, 1e-3, 1e-4, 1e-6, 1e-8))
    out = equilibrium_json(A, B, xs, ys)
    out["exact"] = bool(nc <= tol)
    return out


def equilibrium_json(A: np.ndarray, B: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict:
    out = profile(A, B, x, y, zero_sum=False)
    out["x_frac"] = [fraction_string(v) for v in x]
    out["y_frac"] = [fraction_string(v) for v in y]
    return out


def zero_sum_lp(A: np.ndarray) -> dict:
    """Value and maximin strategies of the zero-sum game (A, −A) by two linear programmes (HiGHS)."""
    from scipy.optimize import linprog

    m, n = A.shape
    # Row player: max v s.t. (Aᵀx)_j ≥ v, Σx = 1.
    res_x = linprog(
        np.r_[np.zeros(m), -1.0],
        A_ub=np.c_[-A.T, np.ones(n)],
        b_ub=np.zeros(n),
        A_eq=np.r_[np.ones(m), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * m + [(None, None)],
        method="highs",
    )
    # Column player: min w s.t. (Ay)_i ≤ w, Σy = 1.
    res_y = linprog(
        np.r_[np.zeros(n), 1.0],
        A_ub=np.c_[A, -np.ones(m)],
        b_ub=np.zeros(m),
        A_eq=np.r_[np.ones(n), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * n + [(None, None)],
        method="highs",
    )
    x = np.maximum(res_x.x[:m], 0)
    y = np.maximum(res_y.x[:n], 0)
    x, y, nc = polish(A, -A, x / x.sum(), y / y.sum(), thresholds=(1e-7, 1e-9))
    return {
        "method": "linprog (HiGHS), polished on the support",
        "value": float(x @ A @ y),
        "x": x.tolist(),
        "y": y.tolist(),
        "exploitability": nc / 2,
    }
