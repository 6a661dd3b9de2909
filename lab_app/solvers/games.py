"""The game library, a seeded random-game generator shared with the JS twin, and game validation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_SIZE_SERVER = 50
MAX_ABS_PAYOFF = 1e6


class SolverInputError(ValueError):
    """Bad input to a solver; `field` names the offending field (e.g. "game.A", "params.lambda")."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Game:
    name: str
    A: np.ndarray
    B: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape

    @property
    def zero_sum(self) -> bool:
        scale = max(1.0, float(np.abs(self.A).max()), float(np.abs(self.B).max()))
        return bool(np.abs(self.A + self.B).max() <= 1e-12 * scale)

    def to_json(self) -> dict:
        m, n = self.shape
        return {
            "name": self.name,
            "A": self.A.tolist(),
            "B": self.B.tolist(),
            "m": m,
            "n": n,
            "zero_sum": self.zero_sum,
        }


def _zs(A: list[list[float]]) -> tuple[list, list]:
    return A, [[-v for v in row] for row in A]


PRESETS: dict[str, dict] = {
    "matching_pennies": {"label": "Matching pennies", "payoffs": _zs([[1, -1], [-1, 1]])},
    "rps": {"label": "Rock–paper–scissors", "payoffs": _zs([[0, -1, 1], [1, 0, -1], [-1, 1, 0]])},
    "biased_rps": {
        "label": "Biased RPS (Nash 3/7, 3/7, 1/7)",
        "payoffs": _zs([[0, -1, 3], [1, 0, -3], [-3, 3, 0]]),
    },
    "programme_biased_rps": {
        "label": "The programme's biased RPS (B = −A)",
        "payoffs": _zs([[0, -0.8, 1.2], [1, 0, -1.2], [-0.9, 1.1, 0]]),
    },
    "asymmetric_matching_pennies": {
        "label": "Asymmetric matching pennies",
        "payoffs": ([[9, 0], [0, 1]], [[0, 1], [1, 0]]),
    },
    "battle_of_the_sexes": {"label": "Battle of the sexes", "payoffs": ([[3, 0], [0, 2]], [[2, 0], [0, 3]])},
    "prisoners_dilemma": {"label": "Prisoner's dilemma", "payoffs": ([[3, 0], [5, 1]], [[3, 5], [0, 1]])},
    "shapley": {
        "label": "Shapley's game",
        "payoffs": ([[0, 1, 0], [0, 0, 1], [1, 0, 0]], [[0, 0, 1], [1, 0, 0], [0, 1, 0]]),
    },
    "coordination": {"label": "Coordination", "payoffs": ([[2, 0], [0, 1]], [[2, 0], [0, 1]])},
    "random": {"label": "Random game from a seed", "payoffs": None},
}


def mulberry32(seed: int):
    """The 32-bit generator the JS twin also uses, so a seed gives the same random game in both."""
    state = seed & 0xFFFFFFFF

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296.0

    return draw


def random_game(m: int, n: int, seed: int, zero_sum: bool = False) -> Game:
    """Payoffs uniform on [-1, 1) from mulberry32(seed): A row-major, then B (or B = -A)."""
    draw = mulberry32(seed)
    A = np.array([[2 * draw() - 1 for _ in range(n)] for _ in range(m)])
    B = -A if zero_sum else np.array([[2 * draw() - 1 for _ in range(n)] for _ in range(m)])
    return Game(f"random {m}×{n} seed {seed}" + (" zero-sum" if zero_sum else ""), A, B)


def _matrix(value, field: str, max_size: int) -> np.ndarray:
    if not isinstance(value, list) or not value:
        raise SolverInputError(field, "must be a non-empty list of rows")
    if len(value) > max_size:
        raise SolverInputError(field, f"has {len(value)} rows; at most {max_size} are allowed")
    width = None
    for i, row in enumerate(value):
        if not isinstance(row, list) or not row:
            raise SolverInputError(field, f"row {i + 1} must be a non-empty list of numbers")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise SolverInputError(field, f"is ragged: row {i + 1} has {len(row)} entries, row 1 has {width}")
        for j, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SolverInputError(field, f"entry ({i + 1}, {j + 1}) is not a number")
            if not math.isfinite(v):
                raise SolverInputError(field, f"entry ({i + 1}, {j + 1}) is not finite")
            if abs(v) > MAX_ABS_PAYOFF:
                raise SolverInputError(field, f"entry ({i + 1}, {j + 1}) exceeds {MAX_ABS_PAYOFF:g} in magnitude")
    if width > max_size:
        raise SolverInputError(field, f"has {width} columns; at most {max_size} are allowed")
    return np.array(value, dtype=float)


def _int(value, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise SolverInputError(field, f"must be an integer from {lo} to {hi}")
    return value


# the fields each kind of game object takes (anything else is refused rather than ignored)
GAME_FIELDS = {
    "random": ("preset", "m", "n", "seed", "zero_sum"),
    "preset": ("preset",),
    "matrix": ("A", "B", "name"),
}


def refuse_unknown(keys, allowed, prefix: str, what: str) -> None:
    """A key outside `allowed` is refused naming it (`<prefix>.<key>`), never ignored: `what` says whose it is not."""
    for key in keys:
        if key not in allowed:
            raise SolverInputError(f"{prefix}.{key}", f"is not {what} (it takes: {', '.join(allowed)})")


def parse_game(value, max_size: int = MAX_SIZE_SERVER) -> Game:
    """A Game from `"preset"`, `{"preset": name, ...}` or `{"A": [[..]], "B": [[..]]}` (B defaults to −A)."""
    if isinstance(value, str):
        value = {"preset": value}
    if not isinstance(value, dict):
        raise SolverInputError("game", "must be a preset name or an object with A (and B)")
    if "preset" in value:
        name = value["preset"]
        if not isinstance(name, str) or name not in PRESETS:  # a list or an object cannot be looked up
            raise SolverInputError("game.preset", f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
        if name == "random":
            refuse_unknown(value, GAME_FIELDS["random"], "game", "a field of the random game")
            m = _int(value.get("m", 3), "game.m", 1, max_size)
            n = _int(value.get("n", 3), "game.n", 1, max_size)
            seed = _int(value.get("seed", 1), "game.seed", 0, 2**32 - 1)
            zero_sum = value.get("zero_sum", False)
            if not isinstance(zero_sum, bool):
                raise SolverInputError("game.zero_sum", "must be true or false")
            return random_game(m, n, seed, zero_sum)
        refuse_unknown(value, GAME_FIELDS["preset"], "game", f"a field of the preset {name}")
        A, B = PRESETS[name]["payoffs"]
        return Game(name, np.array(A, dtype=float), np.array(B, dtype=float))
    if "A" not in value:
        raise SolverInputError("game.A", "is required (or give a preset)")
    refuse_unknown(value, GAME_FIELDS["matrix"], "game", "a field of a game given by its matrices")
    A = _matrix(value["A"], "game.A", max_size)
    B = -A if value.get("B") is None else _matrix(value["B"], "game.B", max_size)
    if B.shape != A.shape:
        raise SolverInputError("game.B", f"must have the same shape as A ({A.shape[0]}×{A.shape[1]})")
    name = value.get("name", "custom")
    if not isinstance(name, str):
        raise SolverInputError("game.name", "must be a string")
    return Game(name[:80], A, B)
