"""The units of every measurement: LN2 (nats per bit) and bits/byte from per-byte negative log-likelihoods.

Every module that reports bits reads LN2 and these helpers from here. No torch, no Django.
"""

from __future__ import annotations

import math

import numpy as np

LN2 = math.log(2)  # nats per bit


def mean_bits(nll_nats) -> float:
    """Bits/byte of per-byte negative log-likelihoods in nats: their mean, in bits."""
    return float(np.mean(nll_nats) / LN2)


def mean_bits_of_sum(total_nats, count):
    """Bits/byte of `count` negative log-likelihoods whose sum is `total_nats` (numbers or arrays of them)."""
    return total_nats / count / LN2
