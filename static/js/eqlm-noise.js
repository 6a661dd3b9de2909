/* The noise start's N(0, 1) states in the browser: the twin of eqlm/noise.py, float32 bit for bit.

   splitmix64 on BigInt, then Box–Muller written with +, −, ×, ÷ and sqrt only (correctly rounded in JavaScript as
   in numpy), in the same order as the Python module, whose docstring gives the derivation. Position p of a solve
   starts at normals p·D .. p·D + D − 1 of the stream of the request's seed. eqlm/tests/test_noise.py runs this
   file under node and compares it with Python. The manifest's `noise_rng` names this generator: check it equals
   NOISE_RNG before trusting the noise to match the server's. */

export const NOISE_RNG = "splitmix64-boxmuller-v1";

const MASK = (1n << 64n) - 1n;
const GAMMA = 0x9e3779b97f4a7c15n;
const MIX1 = 0xbf58476d1ce4e5b9n;
const MIX2 = 0x94d049bb133111ebn;
const TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0;
const LN2 = 0.6931471805599453;
const SQRT2 = 1.4142135623730951;
const TWO_PI = 6.283185307179586;
const TWO_TO_32 = 4294967296;
const POW2 = [1];
for (let i = 1; i <= 53; i++) POW2.push(POW2[i - 1] * 2);
const LOG = [];
for (let k = 0; k < 12; k++) LOG.push(1.0 / (2 * k + 1));
const SIN = [1.0];
const COS = [1.0];
for (let k = 1; k < 10; k++) {
  SIN.push(-SIN[SIN.length - 1] / ((2 * k) * (2 * k + 1)));
  COS.push(-COS[COS.length - 1] / ((2 * k - 1) * (2 * k)));
}

/* Output `index` (from 0) of splitmix64 seeded with `seed` (mod 2^64), as a BigInt. */
export function splitmix64(seed, index) {
  let x = (BigInt.asUintN(64, BigInt(seed)) + (BigInt(index) + 1n) * GAMMA) & MASK;
  x = ((x ^ (x >> 30n)) * MIX1) & MASK;
  x = ((x ^ (x >> 27n)) * MIX2) & MASK;
  return x ^ (x >> 31n);
}

function horner(x2, coefficients) {
  let acc = coefficients[coefficients.length - 1];
  for (let i = coefficients.length - 2; i >= 0; i--) acc = acc * x2 + coefficients[i];
  return acc;
}

/* ln u for u = (bits + 1)·2^-53, bits < 2^53. */
function logUnit(bits) {
  const k = Number(bits) + 1; // exact: k <= 2^53
  const high = Math.floor(k / TWO_TO_32);
  let e = high > 0 ? 63 - Math.clz32(high) : 31 - Math.clz32(k >>> 0); // k = m·2^e, m in [1, 2)
  let m = k / POW2[e];
  if (m > SQRT2) {
    m = m / 2.0;
    e = e + 1;
  }
  const f = m - 1.0;
  const s = f / (2.0 + f);
  const lnM = (s + s) * horner(s * s, LOG);
  return lnM + (e - 53.0) * LN2;
}

/* [cos, sin] of 2π·bits·2^-53, bits < 2^53. */
function cosSinTurn(bits) {
  const quarter = (bits + (1n << 50n)) >> 51n; // the nearest quarter turn, 0..4
  const rest = Number(bits - (quarter << 51n)); // |rest| <= 2^50
  const x = rest * TWO_TO_MINUS_53 * TWO_PI; // in [-π/4, π/4]
  const x2 = x * x;
  const sin = x * horner(x2, SIN);
  const cos = horner(x2, COS);
  switch (Number(quarter & 3n)) {
    case 0:
      return [cos, sin];
    case 1:
      return [-sin, cos];
    case 2:
      return [-cos, -sin];
    default:
      return [sin, -cos];
  }
}

/* Normals offset .. offset + count − 1 of the stream of `seed`, as a Float32Array of `count`. */
export function standardNormal(seed, count, offset = 0) {
  const out = new Float32Array(Math.max(count, 0));
  for (let n = 0; n < count; n++) {
    const index = offset + n;
    const pair = Math.floor(index / 2);
    if (n > 0 && index % 2 === 1) {
      continue; // filled with its pair's first normal below
    }
    const x = splitmix64(seed, 2 * pair) >> 11n;
    const y = splitmix64(seed, 2 * pair + 1) >> 11n;
    const r = Math.sqrt(-2.0 * logUnit(x));
    const [c, s] = cosSinTurn(y);
    if (index % 2 === 0) {
      out[n] = Math.fround(r * c);
      if (n + 1 < count) out[n + 1] = Math.fround(r * s);
    } else {
      out[n] = Math.fround(r * s); // the stream begins at a pair's second normal
    }
  }
  return out;
}

/* The noise start of `positions` positions from `firstPosition`, [positions × d] row-major (a [1, T, D] tensor). */
export function startStates(seed, firstPosition, positions, d) {
  return standardNormal(seed, positions * d, firstPosition * d);
}
