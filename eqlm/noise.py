"""N(0, 1) start states that the browser reproduces bit for bit: splitmix64, then Box–Muller on exact arithmetic.

The `noise` start (generation.py) begins position p of a solve at normals p·D .. p·D + D − 1 of the stream of the
request's seed, so a position's start depends on the seed and its position only, never on how the prompt was
batched. static/js/eqlm-noise.js is the twin; eqlm/tests/test_noise.py runs it under node and holds the two equal,
float32 bit for bit. The manifest names the generator (`noise_rng`, NOISE_RNG below): a change to anything here is a
new name.

Why the transform is written out: libm's log, cos and sin are not correctly rounded, and JavaScript's Math may
round them differently from C's. Here every operation is +, −, ×, ÷ or sqrt on float64 (IEEE-754 correctly
rounded in numpy and in JavaScript alike), in the same order in both languages:

- output i of the stream is splitmix64's (Steele, Lea and Flood 2014; Vigna's reference `next()`): mix the state
  seed + (i + 1)·0x9E3779B97F4A7C15 (mod 2^64);
- normals 2j and 2j + 1 come from outputs 2j and 2j + 1 (x, y): u = ((x >> 11) + 1)·2^−53 in (0, 1],
  r = sqrt(−2 ln u), and the angle 2π·(y >> 11)·2^−53 gives r·cos and r·sin;
- ln u = ln m + e·ln 2 with u = m·2^e, m in [√½, √2] (exact), and ln m = 2·atanh(s), s = (m − 1)/(m + 1), by its
  series (s² ≤ 0.03; 12 terms);
- the angle is reduced exactly in integers to the nearest quarter turn q and a remainder x in [−π/4, π/4], whose
  sine and cosine are their Taylor series (10 terms each), then turned by q;
- each normal is rounded once to float32.
"""

from __future__ import annotations

import numpy as np

from .units import LN2 as _LN2  # 0.6931471805599453, the JS twin's LN2

NOISE_RNG = "splitmix64-boxmuller-v1"

_MASK = (1 << 64) - 1
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0  # 2^-53, exact
_SQRT2 = 1.4142135623730951
_TWO_PI = 6.283185307179586
# series coefficients, built by the same divisions in the JS twin
_LOG = [1.0 / (2 * k + 1) for k in range(12)]  # atanh(s)/s = sum s^2k / (2k + 1)
_SIN = [1.0]  # sin(x)/x = sum (-1)^k x^2k / (2k + 1)!
_COS = [1.0]  # cos(x) = sum (-1)^k x^2k / (2k)!
for _k in range(1, 10):
    _SIN.append(-_SIN[-1] / ((2 * _k) * (2 * _k + 1)))
    _COS.append(-_COS[-1] / ((2 * _k - 1) * (2 * _k)))


def splitmix64(seed: int, count: int, offset: int = 0) -> np.ndarray:
    """Outputs offset .. offset + count − 1 of splitmix64 seeded with `seed` (mod 2^64), as uint64."""
    i = np.arange(offset + 1, offset + count + 1, dtype=np.uint64)
    x = np.uint64(seed & _MASK) + i * _GAMMA  # wraps mod 2^64
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


def _horner(x2: np.ndarray, coefficients: list[float]) -> np.ndarray:
    acc = np.full_like(x2, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = acc * x2 + c
    return acc


def _log_unit(bits: np.ndarray) -> np.ndarray:
    """ln u for u = (bits + 1)·2^-53, bits < 2^53 (u in (0, 1])."""
    k = (bits + np.uint64(1)).astype(np.float64)  # exact: k <= 2^53
    mantissa, exponent = np.frexp(k)  # k = mantissa·2^exponent, mantissa in [0.5, 1)
    m = mantissa * 2.0
    e = exponent.astype(np.float64) - 1.0
    high = m > _SQRT2
    m = np.where(high, m / 2.0, m)
    e = np.where(high, e + 1.0, e)
    f = m - 1.0
    s = f / (2.0 + f)
    ln_m = (s + s) * _horner(s * s, _LOG)
    return ln_m + (e - 53.0) * _LN2


def _cos_sin_turn(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2π·bits·2^-53, bits < 2^53."""
    quarter = (bits + np.uint64(1 << 50)) >> np.uint64(51)  # the nearest quarter turn, 0..4
    rest = bits.astype(np.int64) - (quarter.astype(np.int64) << np.int64(51))  # |rest| <= 2^50
    x = (rest.astype(np.float64) * _TWO_TO_MINUS_53) * _TWO_PI  # in [-π/4, π/4]
    x2 = x * x
    sin, cos = x * _horner(x2, _SIN), _horner(x2, _COS)
    q = (quarter & np.uint64(3)).astype(np.int64)
    c = np.select([q == 0, q == 1, q == 2], [cos, -sin, -cos], sin)
    s = np.select([q == 0, q == 1, q == 2], [sin, cos, -sin], -cos)
    return c, s


def standard_normal(seed: int, count: int, offset: int = 0) -> np.ndarray:
    """Normals offset .. offset + count − 1 of the stream of `seed`, float32 [count]."""
    if count <= 0:
        return np.zeros(0, dtype=np.float32)
    first, end = offset // 2, (offset + count + 1) // 2  # the Box–Muller pairs that hold them
    x = splitmix64(seed, 2 * (end - first), 2 * first)
    shift = np.uint64(11)
    r = np.sqrt(-2.0 * _log_unit(x[0::2] >> shift))
    c, s = _cos_sin_turn(x[1::2] >> shift)
    pairs = np.stack([r * c, r * s], axis=-1).astype(np.float32).ravel()
    return pairs[offset - 2 * first : offset - 2 * first + count]


def start_states(seed: int, first_position: int, positions: int, d: int) -> np.ndarray:
    """The noise start of positions first_position .. + positions − 1: float32 [1, positions, d]."""
    return standard_normal(seed, positions * d, first_position * d).reshape(1, positions, d)
