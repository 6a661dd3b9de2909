"""Small pure statistics for checking the council record against itself (no Django imports).

The mean, the sample SD and the "agrees with a printed figure" rule are the benchmarks' own (one rule for the
whole portal); this module adds the sign-test z.
"""

from __future__ import annotations

import math

from results.stats import agrees, mean, sample_sd
from results.stats import decimals_of_value as decimals

__all__ = ["agrees", "decimals", "mean", "paired_z", "sample_sd"]


def paired_z(wins: int, losses: int) -> float | None:
    """Sign-test z over the discordant pairs: (wins - losses) / sqrt(wins + losses); None when there are none."""
    if wins < 0 or losses < 0:
        raise ValueError("wins and losses must be non-negative")
    discordant = wins + losses
    if discordant == 0:
        return None
    return (wins - losses) / math.sqrt(discordant)
