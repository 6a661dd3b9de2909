"""The lab's logit QRE agrees with Gambit 17 (pygambit, a dev requirement) on the principal branch.

Gambit's `logit_solve_lambda` follows the principal branch with its own path tracer; the games are the ones
bench/lab.py times and checks (the lab's `random_game(n, n, seed)`), a smaller sample of its agreement run.
Gambit's answers carry their own error (residual up to ~3e-10 here), so agreement is asserted to 1e-8.
"""

import numpy as np
import pytest

from lab_app.solvers import random_game
from lab_app.solvers.qre import _System, qre

gbt = pytest.importorskip("pygambit")


def gambit_qre(A: np.ndarray, B: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    game = gbt.StrategicGame.from_arrays(A, B)
    profile = gbt.qre.logit_solve_lambda(game, lam=[lam])[0].profile
    return (np.array([p for _, p in profile[player]]) for player in ("1", "2"))


SAMPLE = [(size, seed) for size in (2, 3, 5, 10) for seed in range(12)]
SAMPLE += [(30, seed) for seed in range(3)] + [(50, seed) for seed in range(2)] + [(30, 2), (50, 7)]


@pytest.mark.parametrize("size,seed", SAMPLE)
def test_qre_at_lambda_1_10_100_is_gambits_point_of_the_principal_branch(size, seed):
    game = random_game(size, size, seed)
    for lam in (1.0, 10.0, 100.0):
        ours = qre(game.A, game.B, lam)
        gx, gy = gambit_qre(game.A, game.B, lam)
        assert ours["converged"]
        worst = max(np.abs(np.array(ours["x"]) - gx).max(), np.abs(np.array(ours["y"]) - gy).max())
        assert worst <= 1e-8, f"{size}×{size} seed {seed} at λ = {lam}: {worst:.3g} from Gambit"


@pytest.mark.parametrize("size", [2, 3, 5, 10])
def test_qre_at_lambda_1000_agrees_with_gambit_and_is_the_more_exact_fixed_point(size):
    for seed in range(3):
        game = random_game(size, size, seed)
        ours = qre(game.A, game.B, 1000.0)
        gx, gy = gambit_qre(game.A, game.B, 1000.0)
        x, y = np.array(ours["x"]), np.array(ours["y"])
        assert max(np.abs(x - gx).max(), np.abs(y - gy).max()) <= 1e-8
        assert ours["residual"] <= max(1e-12, _System(game.A, game.B).residual(gx, gy, 1000.0))
