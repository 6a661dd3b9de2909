"""The JS solvers (static/js/lab/solvers.js, run by node) agree with the Python module to 1e-9."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from lab_app.solvers import Limits, SolverInputError, solve
from lab_app.tests.test_solvers import SHARP_A, SHARP_B

pytestmark = pytest.mark.slow  # node

RUNNER = Path(__file__).with_name("run_js_solvers.cjs")
GAMES = [
    "matching_pennies",
    "rps",
    "biased_rps",
    "programme_biased_rps",
    "asymmetric_matching_pennies",
    "battle_of_the_sexes",
    "prisoners_dilemma",
    "shapley",
    "coordination",
    {"preset": "random", "m": 4, "n": 3, "seed": 7},
    {"preset": "random", "m": 3, "n": 3, "seed": 76},
]


def specs() -> list[dict]:
    out = []
    for game in GAMES:
        out += [
            {"game": game, "solver": "nash"},
            {"game": game, "solver": "qre", "params": {"lambda": 5}},
            {"game": game, "solver": "qre", "params": {"lambda": 60}},
            {"game": game, "solver": "qre_path", "params": {"lambda_max": 200}},
            {"game": game, "solver": "mmd", "params": {"steps": 500, "eta": 0.1, "tau": 0.2}},
            {"game": game, "solver": "mmd", "params": {"steps": 300, "alternating": True, "reset_every": 50}},
            {"game": game, "solver": "gda", "params": {"steps": 300}},
            {"game": game, "solver": "gda", "params": {"steps": 300, "alternating": True}},
        ]
    out.append(
        {
            "game": {"preset": "random", "m": 12, "n": 12, "seed": 5},
            "solver": "nash",
            "params": {"method": "lemke_howson"},
        }
    )
    out.append({"game": "biased_rps", "solver": "mmd", "params": {"magnet_x": [0.5, 0.3, 0.2], "tau": 0.4}})
    # Games where continuation in λ once jumped off the principal branch.
    for size, seed, lam in ((10, 19, 10), (50, 5, 100), (30, 2, 10), (50, 7, 10), (10, 1, 1000)):
        game = {"preset": "random", "m": size, "n": size, "seed": seed}
        out.append({"game": game, "solver": "qre", "params": {"lambda": lam}})
    # A sharp turn of the branch, where a long step once jumped to another branch.
    sharp = {"A": SHARP_A, "B": SHARP_B}
    out.append({"game": sharp, "solver": "qre", "params": {"lambda": 10}})
    out.append({"game": sharp, "solver": "qre_path", "params": {"lambda_max": 20}})
    return out


def run_node(payload: dict) -> list[dict]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run([node, str(RUNNER)], input=json.dumps(payload), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# Timings and counts of internal Newton/corrector iterations are diagnostics, not results: a residual that lands
# on the other side of a stopping threshold by one ulp may cost one iteration more in one language. The JS
# reports the zero-sum value from an equilibrium rather than from an LP.
WORK_COUNTERS = {"elapsed_ms", "corrector_iterations", "newton_iterations"}


def worst_difference(a, b, path="") -> tuple[float, str]:
    """Largest absolute difference between two JSON values (inf where structure or text differs)."""
    if isinstance(a, dict):
        worst = (0.0, path)
        for key, value in a.items():
            if key in WORK_COUNTERS or (key == "method" and "linprog" in str(value)):
                continue
            if key not in b:
                return (float("inf"), f"{path}/{key} missing in JS")
            worst = max(worst, worst_difference(value, b[key], f"{path}/{key}"), key=lambda t: t[0])
        return worst
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return (float("inf"), f"{path}: lengths differ")
        worst = (0.0, path)
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            worst = max(worst, worst_difference(u, v, f"{path}[{i}]"), key=lambda t: t[0])
        return worst
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        if not isinstance(b, (int, float)) or isinstance(b, bool):
            return (float("inf"), f"{path}: {a!r} vs {b!r}")
        return (abs(a - b), path)
    return (0.0, path) if a == b else (float("inf"), f"{path}: {a!r} vs {b!r}")


def test_js_and_python_solvers_agree_to_1e_9_on_the_same_games_and_parameters():
    cases = specs()
    js = run_node({"specs": cases, "limits": {"max_size": 50, "max_steps": 20000}})
    failures = []
    for spec, answer in zip(cases, js, strict=True):
        assert answer["ok"], f"JS failed on {spec}: {answer}"
        worst, where = worst_difference(solve(spec, Limits()), answer["result"])
        if worst > 1e-9:
            failures.append(f"{spec['solver']} on {spec['game']}: {where} differs by {worst:g}")
    assert not failures, "\n".join(failures)


def test_js_and_python_draw_the_same_random_game_from_a_seed():
    js = run_node(
        {"specs": [{"game": {"preset": "random", "m": 5, "n": 4, "seed": 123}, "solver": "qre"}], "limits": {}}
    )
    py = solve({"game": {"preset": "random", "m": 5, "n": 4, "seed": 123}, "solver": "qre"})
    assert js[0]["result"]["game"]["A"] == py["game"]["A"]
    assert js[0]["result"]["game"]["B"] == py["game"]["B"]


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"game": "rps", "solver": "magic"}, "solver"),
        ({"game": {"A": [[1, 2], [3]]}, "solver": "nash"}, "game.A"),
        ({"game": "rps", "solver": "qre", "params": {"lambda": -1}}, "params.lambda"),
        ({"game": "rps", "solver": "mmd", "params": {"steps": 10**9}}, "params.steps"),
        ({"game": "rps", "solver": "qre", "params": {"lamda": 3}}, "params.lamda"),
        ({"game": {"preset": "random", "zero_sum": [1]}, "solver": "nash"}, "game.zero_sum"),
        ({"game": {"preset": "rps", "m": 4}, "solver": "nash"}, "game.m"),
        ({"game": {"A": [[1, 0], [0, 1]], "name": 5}, "solver": "nash"}, "game.name"),
    ],
)
def test_js_rejects_bad_input_naming_the_same_field_as_python(spec, field):
    (answer,) = run_node({"specs": [spec], "limits": {"max_size": 50, "max_steps": 20000}})
    assert not answer["ok"] and answer["field"] == field
    with pytest.raises(SolverInputError) as python:
        solve(spec, Limits())
    assert python.value.field == field
