"""Matrix-game solvers (numpy only): `solve(spec)` is the one entry point the API, jobs and tests share.

A spec is `{"game": preset-name | {"preset", ...} | {"A", "B"}, "solver": mmd|gda|qre|qre_path|nash,
"params": {...}}`; the result is plain JSON, the same shape the JS twin (static/js/lab/solvers.js) returns.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from . import dynamics, nash, qre, qre_path
from .core import METRIC_NOTE, nash_conv, probability_vector, start_point
from .games import PRESETS, Game, SolverInputError, parse_game, random_game, refuse_unknown

__all__ = [
    "nash_conv",
    "PRESETS",
    "Game",
    "Limits",
    "PARAMETERS",
    "SolverInputError",
    "TimeLimitExceeded",
    "parse_game",
    "random_game",
    "refuse_unknown",
    "solve",
    "SOLVERS",
]

SOLVERS = ("mmd", "gda", "qre", "qre_path", "nash")
# the parameters each solver takes: a key outside its list is refused rather than silently ignored
PARAMETERS = {
    "mmd": ("eta", "tau", "steps", "record", "reset_every", "tol", "alternating", "x0", "y0", "magnet_x", "magnet_y"),
    "gda": ("eta", "steps", "record", "tol", "alternating", "x0", "y0"),
    "qre": ("lambda", "tol"),
    "qre_path": ("lambda_max", "max_points"),
    "nash": ("method", "label", "time_limit"),
}


class TimeLimitExceeded(RuntimeError):
    """A solver ran past the deadline it was given."""


@dataclass(frozen=True)
class Ctx:
    dry: bool = False  # validate only
    deadline: float | None = None  # time.monotonic() value


@dataclass(frozen=True)
class Limits:
    max_size: int = 50
    max_steps: int = 20000
    max_lambda: float = 1e6
    max_path_points: int = 5000
    max_enumeration_size: int = 8
    time_limit: float = 5.0


def _number(params: dict, key: str, default: float, lo: float, hi: float, *, lo_open: bool = False) -> float:
    value = params.get(key, default)
    field = f"params.{key}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SolverInputError(field, "must be a finite number")
    if value < lo or (lo_open and value == lo) or value > hi:
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise SolverInputError(field, f"must be {low} and <= {hi:g} (got {value:g})")
    return float(value)


def _integer(params: dict, key: str, default: int, lo: int, hi: int) -> int:
    value = params.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SolverInputError(f"params.{key}", "must be an integer")
    if value < lo or value > hi:
        raise SolverInputError(f"params.{key}", f"must be from {lo} to {hi} (got {value})")
    return value


def _flag(params: dict, key: str, default: bool = False) -> bool:
    value = params.get(key, default)
    if not isinstance(value, bool):
        raise SolverInputError(f"params.{key}", "must be true or false")
    return value


def solve(
    spec: dict, limits: Limits | None = None, *, validate_only: bool = False, deadline: float | None = None
) -> dict:
    """Validate a spec and run its solver. Raises SolverInputError naming the bad field.

    `validate_only` checks everything and returns the normalised spec without solving; `deadline` (a
    time.monotonic() value) makes long solvers raise TimeLimitExceeded once passed.
    """
    limits = limits or Limits()
    if not isinstance(spec, dict):
        raise SolverInputError("spec", "must be a JSON object")
    solver = spec.get("solver")
    if solver not in SOLVERS:
        raise SolverInputError("solver", f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    params = spec.get("params")
    params = {} if params is None else params  # false, 0 or "" are not a missing object
    if not isinstance(params, dict):
        raise SolverInputError("params", "must be an object")
    refuse_unknown(params, PARAMETERS[solver], "params", f"a parameter of {solver}")
    game = parse_game(spec.get("game"), limits.max_size)
    started = time.perf_counter()
    body, used = _RUNNERS[solver](game, params, limits, Ctx(validate_only, deadline))
    if validate_only:
        return {"solver": solver, "game": game.to_json(), "params": used}
    out = {
        "solver": solver,
        "game": game.to_json(),
        "params": used,
        "metric": "nashconv",
        "metric_note": METRIC_NOTE,
        **body,
        "elapsed_ms": (time.perf_counter() - started) * 1000,
    }
    return out


def _starts(game: Game, params: dict, positive: bool) -> tuple[np.ndarray, np.ndarray, dict]:
    m, n = game.shape
    sx = params.get("x0", "skewed")
    sy = params.get("y0", "skewed_reverse")
    x0 = start_point(sx, m, "params.x0")
    y0 = start_point(sy, n, "params.y0")
    if positive and (x0.min() <= 0 or y0.min() <= 0):
        raise SolverInputError("params.x0" if x0.min() <= 0 else "params.y0", "must be strictly positive for MMD")
    return x0, y0, {"x0": sx, "y0": sy}


def _run_mmd(game: Game, params: dict, limits: Limits, ctx: Ctx):
    m, n = game.shape
    eta = _number(params, "eta", 0.1, 0, 1e3, lo_open=True)
    tau = _number(params, "tau", 0.1, 0, 1e3)
    steps = _integer(params, "steps", 1000, 1, limits.max_steps)
    record = _integer(params, "record", 200, 1, 2000)
    reset_every = _integer(params, "reset_every", 0, 0, limits.max_steps)
    tol = _number(params, "tol", 0.0, 0, 1)
    alternating = _flag(params, "alternating")
    x0, y0, starts = _starts(game, params, positive=True)
    rho_x = params.get("magnet_x")
    rho_y = params.get("magnet_y")
    mx = np.full(m, 1 / m) if rho_x is None else probability_vector(rho_x, m, "params.magnet_x", positive=True)
    my = np.full(n, 1 / n) if rho_y is None else probability_vector(rho_y, n, "params.magnet_y", positive=True)
    used = {"eta": eta, "tau": tau, "steps": steps, "alternating": alternating, "reset_every": reset_every,
            "tol": tol, "record": record, "magnet_x": mx.tolist(), "magnet_y": my.tolist(), **starts}  # fmt: skip
    if ctx.dry:
        return None, used
    target = None
    if tau > 0 and not reset_every:
        # MMD's fixed point: the logit QRE at λ = 1/τ of the game shifted by τ·log ρ.
        shifted_A = game.A + tau * np.log(mx)[:, None]
        shifted_B = game.B + tau * np.log(my)[None, :]
        fixed = qre.qre(shifted_A, shifted_B, 1 / tau, zero_sum=game.zero_sum and rho_x is None and rho_y is None)
        target = (np.array(fixed["x"]), np.array(fixed["y"]))
    body = dynamics.mmd(
        game.A, game.B, x0, y0, eta=eta, tau=tau, steps=steps, magnet_x=mx, magnet_y=my,
        alternating=alternating, reset_every=reset_every, tol=tol, record=record, zero_sum=game.zero_sum,
        deadline=ctx.deadline, target=target,
    )  # fmt: skip
    if target is not None:
        body["qre_target"] = {"lambda": 1 / tau, "x": fixed["x"], "y": fixed["y"], "residual": fixed["residual"]}
    return body, used


def _run_gda(game: Game, params: dict, limits: Limits, ctx: Ctx):
    eta = _number(params, "eta", 0.05, 0, 1e3, lo_open=True)
    steps = _integer(params, "steps", 1000, 1, limits.max_steps)
    record = _integer(params, "record", 200, 1, 2000)
    tol = _number(params, "tol", 0.0, 0, 1)
    alternating = _flag(params, "alternating")
    x0, y0, starts = _starts(game, params, positive=False)
    used = {"eta": eta, "steps": steps, "alternating": alternating, "tol": tol, "record": record, **starts}
    if ctx.dry:
        return None, used
    body = dynamics.gda(
        game.A, game.B, x0, y0, eta=eta, steps=steps, alternating=alternating, tol=tol, record=record,
        zero_sum=game.zero_sum, deadline=ctx.deadline,
    )  # fmt: skip
    return body, used


def _run_qre(game: Game, params: dict, limits: Limits, ctx: Ctx):
    lam = _number(params, "lambda", 10.0, 0, limits.max_lambda)
    tol = _number(params, "tol", 1e-12, 1e-15, 1e-3)
    if ctx.dry:
        return None, {"lambda": lam, "tol": tol}
    body = qre.qre(game.A, game.B, lam, tol=tol, zero_sum=game.zero_sum)
    return body, {"lambda": lam, "tol": tol}


def _run_qre_path(game: Game, params: dict, limits: Limits, ctx: Ctx):
    lam_max = _number(params, "lambda_max", 100.0, 0, limits.max_lambda, lo_open=True)
    max_points = _integer(params, "max_points", 1000, 2, limits.max_path_points)
    if ctx.dry:
        return None, {"lambda_max": lam_max, "max_points": max_points}
    body = qre_path.trace_path(game.A, game.B, lam_max=lam_max, max_points=max_points, deadline=ctx.deadline)
    return body, {"lambda_max": lam_max, "max_points": max_points}


def _run_nash(game: Game, params: dict, limits: Limits, ctx: Ctx):
    m, n = game.shape
    method = params.get("method", "auto")
    if method not in ("auto", "enumerate", "lemke_howson"):
        raise SolverInputError("params.method", "must be auto, enumerate or lemke_howson")
    label = _integer(params, "label", 0, 0, m + n - 1)
    time_limit = _number(params, "time_limit", limits.time_limit, 0, limits.time_limit, lo_open=True)
    if method == "auto":
        method = "enumerate" if max(m, n) <= limits.max_enumeration_size else "lemke_howson"
    if method == "enumerate" and max(m, n) > limits.max_enumeration_size:
        raise SolverInputError(
            "params.method", f"vertex enumeration is limited to {limits.max_enumeration_size} actions per player here"
        )
    if ctx.dry:
        return None, {"method": method, "label": label, "time_limit": time_limit}
    if ctx.deadline is not None:
        time_limit = max(0.01, min(time_limit, ctx.deadline - time.monotonic()))
    if method == "enumerate":
        found, complete = nash.vertex_enumeration(game.A, game.B, time_limit=time_limit)
        pivots = None
    else:
        x, y, pivots = nash.lemke_howson(game.A, game.B, label=label)
        x, y, _ = nash.polish(game.A, game.B, x, y, thresholds=(1e-9,))
        found, complete = [(x, y)], None
    body = {
        "method": method,
        "complete": complete,
        "pivots": pivots,
        "equilibria": [nash.equilibrium_json(game.A, game.B, x, y) for x, y in found],
    }
    if game.zero_sum:
        body["zero_sum"] = nash.zero_sum_lp(game.A)
        for eq in body["equilibria"]:
            eq["exploitability"] = eq["nashconv"] / 2
    return body, {"method": method, "label": label, "time_limit": time_limit}


_RUNNERS = {"mmd": _run_mmd, "gda": _run_gda, "qre": _run_qre, "qre_path": _run_qre_path, "nash": _run_nash}
