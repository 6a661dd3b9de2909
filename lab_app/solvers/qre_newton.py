"""The logit QRE equations of one game (_System, with their analytic Jacobian) and damped Newton on them at one λ.

Unknowns are log-odds against each player's first action, w = (u, v) with x = softmax(0, u), y = softmax(0, v).
The QRE equations are H(w, λ) = (u − λ·D_A y, v − λ·D_B x) = 0, where D_A y are row payoff differences
(A y)_i − (A y)_0 and D_B x the column ones. The Jacobian is analytic, so Newton converges quadratically.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dgesv

from eqlm.logprobs import softmax


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
