"""Small pure statistics for checking the council record against itself (no Django imports)."""

from __future__ import annotations

import math
from collections.abc import Iterable


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, or None for no values."""
    items = [float(v) for v in values]
    return sum(items) / len(items) if items else None


def sample_sd(values: Iterable[float]) -> float | None:
    """Sample standard deviation (ddof = 1), the programme's "±"; None for fewer than two values."""
    items = [float(v) for v in values]
    if len(items) < 2:
        return None
    centre = sum(items) / len(items)
    return math.sqrt(sum((v - centre) ** 2 for v in items) / (len(items) - 1))


def paired_z(wins: int, losses: int) -> float | None:
    """Sign-test z over the discordant pairs: (wins - losses) / sqrt(wins + losses); None when there are none."""
    if wins < 0 or losses < 0:
        raise ValueError("wins and losses must be non-negative")
    discordant = wins + losses
    if discordant == 0:
        return None
    return (wins - losses) / math.sqrt(discordant)


def agrees(recorded: float | None, derived: float | None, places: int = 2) -> bool:
    """Whether a recorded figure equals a derived one at the recorded figure's precision (half a unit in the last
    place, plus a float tolerance)."""
    if recorded is None or derived is None:
        return recorded is None and derived is None
    return abs(recorded - derived) <= 0.5 * 10**-places + 1e-9


def decimals(value: float) -> int:
    """Decimal places a recorded figure was written with (0.4833 -> 4, 4.42 -> 2)."""
    text = repr(float(value))
    if "e" in text or "." not in text:
        return 0
    return len(text.split(".", 1)[1].rstrip("0"))
