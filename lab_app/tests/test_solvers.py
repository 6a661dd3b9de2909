"""The solver maths, without the database: exact answers, MMD = QRE, GDA cycling, nashpy agreement, QRE path."""

import math
from fractions import Fraction

import nashpy
import numpy as np
import pytest

from eqlm.logprobs import softmax
from lab_app.solvers import Limits, SolverInputError, TimeLimitExceeded, random_game, solve
from lab_app.solvers.core import nash_conv
from lab_app.solvers.nash import lemke_howson, vertex_enumeration
from lab_app.solvers.qre import qre, trace_path


def equilibria(game, **params):
    return solve({"game": game, "solver": "nash", "params": params})["equilibria"]


def as_pairs(eqs):
    return sorted((tuple(round(v, 9) for v in e["x"]), tuple(round(v, 9) for v in e["y"])) for e in eqs)


@pytest.mark.parametrize("game,size", [("matching_pennies", 2), ("rps", 3)])
def test_symmetric_zero_sum_games_have_the_uniform_equilibrium(game, size):
    (eq,) = equilibria(game)
    assert eq["x"] == pytest.approx([1 / size] * size, abs=1e-12)
    assert eq["y"] == pytest.approx([1 / size] * size, abs=1e-12)
    assert eq["nashconv"] <= 1e-9
    assert eq["exploitability"] == eq["nashconv"] / 2


def test_biased_rps_equilibrium_is_three_sevenths_three_sevenths_one_seventh():
    (eq,) = equilibria("biased_rps")
    assert eq["x_frac"] == ["3/7", "3/7", "1/7"]
    assert eq["y_frac"] == ["3/7", "3/7", "1/7"]
    assert eq["x"] == pytest.approx([3 / 7, 3 / 7, 1 / 7], abs=1e-12)
    assert eq["nashconv"] <= 1e-9


def test_battle_of_the_sexes_has_its_three_equilibria():
    eqs = equilibria("battle_of_the_sexes")
    assert as_pairs(eqs) == [((0, 1), (0, 1)), ((0.6, 0.4), (0.4, 0.6)), ((1, 0), (1, 0))]
    assert all(e["nashconv"] <= 1e-9 for e in eqs)


def test_asymmetric_matching_pennies_gives_one_half_and_one_tenth():
    (eq,) = equilibria("asymmetric_matching_pennies")
    assert eq["x"] == pytest.approx([0.5, 0.5], abs=1e-12)
    assert eq["y"] == pytest.approx([0.1, 0.9], abs=1e-12)
    assert eq["y_frac"] == ["1/10", "9/10"]
    assert eq["nashconv"] <= 1e-9


def test_zero_sum_lp_value_matches_the_equilibrium_payoff():
    out = solve({"game": "programme_biased_rps", "solver": "nash"})
    (eq,) = out["equilibria"]
    assert out["zero_sum"]["value"] == pytest.approx(eq["payoff_row"], abs=1e-9)
    assert out["zero_sum"]["exploitability"] <= 1e-9
    assert solve({"game": "biased_rps", "solver": "nash"})["zero_sum"]["value"] == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("game", ["biased_rps", "programme_biased_rps", "rps"])
@pytest.mark.parametrize("tau", [0.2, 0.5])
def test_mmd_run_to_convergence_equals_the_qre_at_inverse_tau(game, tau):
    run = solve({"game": game, "solver": "mmd", "params": {"eta": 0.05, "tau": tau, "steps": 20000, "tol": 1e-15}})
    assert run["converged"]
    target = solve({"game": game, "solver": "qre", "params": {"lambda": 1 / tau}})
    assert target["residual"] <= 1e-10
    assert run["last"]["x"] == pytest.approx(target["x"], abs=1e-9)
    assert run["last"]["y"] == pytest.approx(target["y"], abs=1e-9)
    # The run reports its own fixed point and how far the last iterate is from it.
    assert run["qre_target"]["x"] == pytest.approx(target["x"], abs=1e-12)
    assert run["trace"]["distance_to_qre"][-1] <= 1e-9 < run["trace"]["distance_to_qre"][0]


def test_mmd_with_a_non_uniform_magnet_equals_the_qre_of_the_game_shifted_by_tau_log_rho():
    A = np.array([[0, -1, 3], [1, 0, -3], [-3, 3, 0]], dtype=float)
    tau, rho_x, rho_y = 0.4, np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
    params = {
        "eta": 0.05,
        "tau": tau,
        "steps": 20000,
        "tol": 1e-15,
        "magnet_x": rho_x.tolist(),
        "magnet_y": rho_y.tolist(),
    }
    run = solve({"game": "biased_rps", "solver": "mmd", "params": params})
    assert run["converged"]
    shifted_A = A + tau * np.log(rho_x)[:, None]
    shifted_B = -A + tau * np.log(rho_y)[None, :]
    target = qre(shifted_A, shifted_B, 1 / tau)
    assert run["last"]["x"] == pytest.approx(target["x"], abs=1e-9)
    assert run["last"]["y"] == pytest.approx(target["y"], abs=1e-9)
    assert run["qre_target"]["y"] == pytest.approx(target["y"], abs=1e-12)
    # ... and it is not the plain QRE, so the magnet mattered.
    plain = qre(A, -A, 1 / tau, zero_sum=True)
    assert max(abs(a - b) for a, b in zip(run["last"]["x"], plain["x"], strict=True)) > 1e-3


def test_mmd_with_magnet_resets_approaches_the_nash_equilibrium():
    run = solve(
        {"game": "biased_rps", "solver": "mmd", "params": {"eta": 0.1, "tau": 0.5, "steps": 6000, "reset_every": 100}}
    )
    assert run["last"]["x"] == pytest.approx([3 / 7, 3 / 7, 1 / 7], abs=1e-6)


@pytest.mark.parametrize("alternating", [False, True])
def test_gda_last_iterate_does_not_converge_on_matching_pennies_while_its_average_does(alternating):
    run = solve(
        {"game": "matching_pennies", "solver": "gda",
         "params": {"eta": 0.05, "steps": 5000, "alternating": alternating, "x0": [0.9, 0.1], "y0": [0.3, 0.7]}}
    )  # fmt: skip
    tail = run["trace"]["nashconv_last"][-50:]
    assert min(tail) > 0.05, "the last iterate should keep cycling, far from the equilibrium"
    assert run["average"]["nashconv"] < 0.02
    assert run["average"]["x"] == pytest.approx([0.5, 0.5], abs=0.01)


def test_gda_players_ascend_their_own_payoff():
    # Prisoner's dilemma: defecting (action 2) dominates for both; ascent must find it.
    run = solve(
        {
            "game": "prisoners_dilemma",
            "solver": "gda",
            "params": {"eta": 0.1, "steps": 200, "x0": "uniform", "y0": "uniform"},
        }
    )
    assert run["last"]["x"] == pytest.approx([0, 1])
    assert run["last"]["y"] == pytest.approx([0, 1])


def nashpy_equilibria(A, B):
    eqs = [(x, y) for x, y in nashpy.Game(A, B).vertex_enumeration()]
    return sorted((tuple(np.round(x, 7)), tuple(np.round(y, 7))) for x, y in eqs)


@pytest.mark.slow  # fifty games through nashpy
def test_equilibrium_sets_agree_with_nashpy_on_fifty_random_games():
    rng = np.random.default_rng(20261129)
    for trial in range(50):
        m = 3 if trial < 25 else 4
        A, B = rng.normal(size=(m, m)), rng.normal(size=(m, m))
        ours, complete = vertex_enumeration(A, B)
        assert complete
        mine = sorted((tuple(np.round(x, 7)), tuple(np.round(y, 7))) for x, y in ours)
        assert mine == nashpy_equilibria(A, B), f"game {trial}"
        assert all(nash_conv(A, B, x, y) <= 1e-9 for x, y in ours)


def test_qre_satisfies_its_fixed_point_equations_to_1e_10_on_random_games():
    for seed in range(12):
        game = random_game(4, 3, seed)
        for lam in (0.5, 5.0, 50.0):
            out = qre(game.A, game.B, lam)
            x, y = np.array(out["x"]), np.array(out["y"])
            assert out["converged"]
            assert np.abs(x - softmax(lam * game.A @ y)).max() <= 1e-10
            assert np.abs(y - softmax(lam * game.B.T @ x)).max() <= 1e-10


@pytest.mark.parametrize(
    "size,lam,seed", [(10, 10.0, 19), (50, 100.0, 5), (10, 10.0, 2), (3, 100.0, 76), (30, 10.0, 2), (50, 10.0, 7)]
)
def test_qre_at_one_lambda_is_the_point_of_the_principal_branch_the_path_tracer_reaches(size, lam, seed):
    """qre must not jump to another branch: continuation in λ once did on all of these (30×30 seed 2 by 0.47).

    The reference is the recorded path of the numpy tracer, followed to λ and finished by Newton there.
    """
    game = random_game(size, size, seed)
    out = qre(game.A, game.B, lam)
    path = trace_path(game.A, game.B, lam_max=lam, tol=1e-10, compiled=False)
    before = max((p for p in path["points"] if p["lambda"] < lam), key=lambda p: p["lambda"])
    after = min((p for p in path["points"] if p["lambda"] >= lam), key=lambda p: p["lambda"])
    frac = (lam - before["lambda"]) / (after["lambda"] - before["lambda"])
    start = [(1 - frac) * u + frac * v for u, v in zip(log_odds(before), log_odds(after), strict=True)]
    exact = qre_from(game, lam, np.array(start))
    assert out["converged"]
    assert np.abs(np.array(out["x"] + out["y"]) - exact).max() <= 1e-9


# A 3×3 game (N(0, 1) payoffs rounded to 3 decimals) whose principal branch turns sharply near λ = 2.55: a
# long step once jumped from it to another branch, flagged only as a "bifurcation" (an orientation flip).
SHARP_A = [[-0.432, -1.13, 0.674], [-1.108, 2.014, 0.924], [-0.359, 0.571, 1.612]]
SHARP_B = [[2.834, -0.923, 1.065], [0.518, -0.28, 1.092], [0.507, 1.076, -0.526]]


@pytest.mark.parametrize("compiled", [True, False])
def test_a_sharp_turn_of_the_branch_is_followed_not_jumped(compiled):
    A, B = np.array(SHARP_A), np.array(SHARP_B)
    out = qre(A, B, 10.0, compiled=compiled)
    # Gambit 17's logit_solve_lambda at λ = 10 (its residual 2e-12).
    assert out["x"] == pytest.approx([0.32421434300326335, 0.00037928982918857755, 0.6754063671675482], abs=1e-9)
    assert out["y"] == pytest.approx([0.9997584320842378, 0.00023854824869182147, 3.0196670704561504e-06], abs=1e-9)
    path = trace_path(A, B, lam_max=10.0, compiled=compiled)
    assert path["bifurcations"] == [], "a generic game's branch keeps its orientation"


def log_odds(point: dict) -> list[float]:
    x, y = np.array(point["x"]), np.array(point["y"])
    return list(np.log(x[1:] / x[0])) + list(np.log(y[1:] / y[0]))


def test_the_compiled_kernel_builds_here_and_takes_the_same_steps_as_the_numpy_code():
    import shutil

    from lab_app.solvers import kernel

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: the numpy code runs")
    assert kernel.load() is not None
    for size, seed in ((2, 1), (3, 76), (7, 4), (12, 5), (30, 2)):
        game = random_game(size, size, seed)
        for lam in (1.0, 10.0, 300.0):
            fast, slow = qre(game.A, game.B, lam), qre(game.A, game.B, lam, compiled=False)
            assert fast["method"] == slow["method"] and fast["converged"] and slow["converged"]
            assert np.abs(np.array(fast["x"] + fast["y"]) - np.array(slow["x"] + slow["y"])).max() <= 1e-12
        fast = trace_path(game.A, game.B, lam_max=500.0)
        slow = trace_path(game.A, game.B, lam_max=500.0, compiled=False)
        assert fast["status"] == slow["status"] and fast["corrector_iterations"] == slow["corrector_iterations"]
        assert len(fast["points"]) == len(slow["points"])
        assert len(fast["turning_points"]) == len(slow["turning_points"])
        assert len(fast["bifurcations"]) == len(slow["bifurcations"])
        for u, v in zip(fast["points"], slow["points"], strict=True):
            assert abs(u["lambda"] - v["lambda"]) <= 1e-9 * (1 + v["lambda"])
            assert np.abs(np.array(u["x"] + u["y"]) - np.array(v["x"] + v["y"])).max() <= 1e-9
        assert fast["limit"]["x"] == pytest.approx(slow["limit"]["x"], abs=1e-12)


def qre_from(game, lam: float, w: np.ndarray) -> np.ndarray:
    from lab_app.solvers.qre import _newton, _System

    _, x, y, _, ok, _ = _newton(_System(game.A, game.B), lam, w, 1e-12)
    assert ok
    return np.concatenate([x, y])


def test_qre_at_lambda_100_on_the_biased_rps_is_solved_to_1e_10():
    out = solve({"game": "biased_rps", "solver": "qre", "params": {"lambda": 100}})
    assert out["converged"] and out["residual"] <= 1e-10
    assert out["x"] == pytest.approx([3 / 7, 3 / 7, 1 / 7], abs=0.01)


@pytest.mark.parametrize(
    "game,x,y",
    [
        ("biased_rps", [3 / 7, 3 / 7, 1 / 7], [3 / 7, 3 / 7, 1 / 7]),
        ("asymmetric_matching_pennies", [0.5, 0.5], [0.1, 0.9]),
        ("prisoners_dilemma", [0, 1], [0, 1]),
    ],
)
def test_qre_path_leads_to_the_nash_equilibrium(game, x, y):
    path = solve({"game": game, "solver": "qre_path", "params": {"lambda_max": 1000}})
    assert path["limit"]["exact"]
    assert path["limit"]["x"] == pytest.approx(x, abs=1e-12)
    assert path["limit"]["y"] == pytest.approx(y, abs=1e-12)
    lambdas = [p["lambda"] for p in path["points"]]
    assert lambdas[0] == 0 and lambdas[-1] >= 1000


def test_qre_path_reports_turning_points_where_lambda_folds_back():
    game = random_game(3, 3, 76)
    path = trace_path(game.A, game.B, lam_max=200)
    assert len(path["turning_points"]) == 2
    lambdas = [p["lambda"] for p in path["points"]]
    assert any(b < a for a, b in zip(lambdas, lambdas[1:], strict=False)), "λ must decrease somewhere between folds"
    for p in path["points"][1:]:
        xq, yq = np.array(p["x"]), np.array(p["y"])
        assert np.abs(xq - softmax(p["lambda"] * game.A @ yq)).max() <= 1e-8
    assert path["limit"]["exact"]


def test_qre_path_marks_the_bifurcation_of_the_symmetric_battle_of_the_sexes():
    path = solve({"game": "battle_of_the_sexes", "solver": "qre_path", "params": {"lambda_max": 100}})
    assert len(path["bifurcations"]) == 1
    assert 0 < path["bifurcations"][0]["lambda"] < 100


def test_lemke_howson_finds_an_equilibrium_of_a_large_game():
    game = random_game(30, 30, 11)
    for label in (0, 45):
        x, y, pivots = lemke_howson(game.A, game.B, label=label)
        assert pivots > 0
        assert nash_conv(game.A, game.B, x, y) <= 1e-9
    out = solve({"game": {"preset": "random", "m": 30, "n": 30, "seed": 11}, "solver": "nash"})
    assert out["method"] == "lemke_howson" and out["equilibria"][0]["nashconv"] <= 1e-9


def test_lemke_howson_that_cannot_finish_says_so():
    game = random_game(6, 6, 3)
    with pytest.raises(ArithmeticError):
        lemke_howson(game.A, game.B, max_pivots=1)


def test_random_games_are_reproducible_from_their_seed():
    assert np.array_equal(random_game(4, 5, 9).A, random_game(4, 5, 9).A)
    assert not np.array_equal(random_game(4, 5, 9).A, random_game(4, 5, 10).A)


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"game": "rps", "solver": "magic"}, "solver"),
        ({"game": {"A": [[1, 2], [3]]}, "solver": "nash"}, "game.A"),
        ({"game": {"A": [[1, math.nan]]}, "solver": "nash"}, "game.A"),
        ({"game": {"A": [[1, 2]], "B": [[1, math.inf]]}, "solver": "nash"}, "game.B"),
        ({"game": {"A": [[0.0] * 51]}, "solver": "nash"}, "game.A"),
        ({"game": "rps", "solver": "qre", "params": {"lambda": -1}}, "params.lambda"),
        ({"game": "rps", "solver": "mmd", "params": {"steps": 10**9}}, "params.steps"),
        ({"game": "rps", "solver": "mmd", "params": {"magnet_x": [0.5, 0.5, 0]}}, "params.magnet_x"),
        ({"game": "nope", "solver": "nash"}, "game.preset"),
    ],
)
def test_bad_input_raises_an_error_naming_the_field(spec, field):
    with pytest.raises(SolverInputError) as info:
        solve(spec)
    assert info.value.field == field


def test_a_solver_past_its_deadline_stops():
    import time

    with pytest.raises(TimeLimitExceeded):
        solve({"game": "rps", "solver": "mmd", "params": {"steps": 20000}}, Limits(), deadline=time.monotonic() - 1)


def test_every_output_says_which_metric_it_reports():
    for solver in ("mmd", "gda", "qre", "qre_path", "nash"):
        out = solve({"game": "rps", "solver": solver})
        assert out["metric"] == "nashconv" and "NashConv" in out["metric_note"]


def test_fractions_are_shown_only_when_exact():
    from lab_app.solvers.core import fraction_string

    assert fraction_string(3 / 7) == "3/7"
    assert fraction_string(float(Fraction(1, 10))) == "1/10"
    assert fraction_string(math.pi / 10) is None


@pytest.mark.parametrize("solver", ["mmd", "gda", "qre", "qre_path", "nash"])
def test_each_solver_takes_exactly_the_parameters_it_reports_using(solver):
    from lab_app.solvers import PARAMETERS

    used = solve({"game": "rps", "solver": solver}, validate_only=True)["params"]
    assert set(used) == set(PARAMETERS[solver])
    with pytest.raises(SolverInputError, match=f"params.typo: is not a parameter of {solver}"):
        solve({"game": "rps", "solver": solver, "params": {"typo": 1}})
