/* Shared pieces of the solvers (the twin of lab_app/solvers/core.py): small dense linear algebra, softmax,
 * simplex projection, NashConv, profiles and fractions for display.
 */

export const EPS = 1e-9;
export const METRIC_NOTE =
  "NashConv = Σ over both players of (best-response payoff − current payoff); " +
  "for zero-sum games exploitability = NashConv / 2 is reported too.";

export const zeros = (n) => new Array(n).fill(0);
export const matvec = (M, v) => M.map((row) => dot(row, v));
export const tmatvec = (M, v) => {
  const out = zeros(M[0].length);
  for (let i = 0; i < M.length; i++) {
    const vi = v[i];
    const row = M[i];
    for (let j = 0; j < row.length; j++) out[j] += row[j] * vi;
  }
  return out;
};
export function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
export const sum = (a) => a.reduce((s, v) => s + v, 0);
export const maxOf = (a) => a.reduce((s, v) => (v > s ? v : s), -Infinity);
export const absMax = (a) => a.reduce((s, v) => (Math.abs(v) > s ? Math.abs(v) : s), 0);
export const norm2 = (a) => Math.sqrt(dot(a, a));
export function maxAbsDiff(a, b) {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

/** LU with partial pivoting; returns {lu, perm, sign} or null when a pivot is exactly zero. */
export function luDecompose(M) {
  const n = M.length;
  const a = M.map((r) => r.slice());
  const perm = [...Array(n).keys()];
  let sign = 1;
  for (let k = 0; k < n; k++) {
    let p = k;
    let best = Math.abs(a[k][k]);
    for (let i = k + 1; i < n; i++) {
      const v = Math.abs(a[i][k]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    if (best === 0) return null;
    if (p !== k) {
      [a[p], a[k]] = [a[k], a[p]];
      [perm[p], perm[k]] = [perm[k], perm[p]];
      sign = -sign;
    }
    const pivot = a[k][k];
    const rk = a[k];
    for (let i = k + 1; i < n; i++) {
      const ri = a[i];
      const f = ri[k] / pivot;
      ri[k] = f;
      if (f !== 0) for (let j = k + 1; j < n; j++) ri[j] -= f * rk[j];
    }
  }
  return { lu: a, perm, sign };
}
export function luSolve(f, b) {
  const n = f.lu.length;
  const x = f.perm.map((p) => b[p]);
  for (let i = 0; i < n; i++) {
    const r = f.lu[i];
    let s = x[i];
    for (let j = 0; j < i; j++) s -= r[j] * x[j];
    x[i] = s;
  }
  for (let i = n - 1; i >= 0; i--) {
    const r = f.lu[i];
    let s = x[i];
    for (let j = i + 1; j < n; j++) s -= r[j] * x[j];
    x[i] = s / r[i];
  }
  return x;
}
export function solveLinear(M, b) {
  const f = luDecompose(M);
  return f ? luSolve(f, b) : null;
}
export function determinant(M) {
  const f = luDecompose(M);
  if (!f) return 0;
  let d = f.sign;
  for (let i = 0; i < M.length; i++) d *= f.lu[i][i];
  return d;
}
/** Least squares by the normal equations (only for small unequal-support systems). */
export function leastSquares(M, b) {
  const cols = M[0].length;
  const MtM = [];
  for (let i = 0; i < cols; i++) {
    MtM.push(zeros(cols));
    for (let j = 0; j < cols; j++) for (let r = 0; r < M.length; r++) MtM[i][j] += M[r][i] * M[r][j];
  }
  const Mtb = zeros(cols);
  for (let i = 0; i < cols; i++) for (let r = 0; r < M.length; r++) Mtb[i] += M[r][i] * b[r];
  return solveLinear(MtM, Mtb);
}

export function softmax(z) {
  const mx = maxOf(z);
  const e = z.map((v) => Math.exp(v - mx));
  const s = sum(e);
  return e.map((v) => v / s);
}
export function projectSimplex(v) {
  const u = v.slice().sort((a, b) => b - a);
  let css = 0;
  let rho = 0;
  let theta = 0;
  for (let i = 0; i < u.length; i++) {
    css += u[i];
    if (u[i] - (css - 1) / (i + 1) > 0) {
      rho = i;
      theta = (css - 1) / (i + 1);
    }
  }
  void rho;
  return v.map((a) => Math.max(a - theta, 0));
}
export function nashConv(A, B, x, y) {
  const Ay = matvec(A, y);
  const Btx = tmatvec(B, x);
  const By = matvec(B, y);
  return Math.max(maxOf(Ay) - dot(x, Ay), 0) + Math.max(maxOf(Btx) - dot(x, By), 0);
}
export function profile(A, B, x, y, zeroSum) {
  const nc = nashConv(A, B, x, y);
  const out = {
    x: x.slice(),
    y: y.slice(),
    payoff_row: dot(x, matvec(A, y)),
    payoff_col: dot(x, matvec(B, y)),
    nashconv: nc,
  };
  if (zeroSum) out.exploitability = nc / 2;
  return out;
}
/** "3/7" when value is within tol of a fraction with denominator ≤ maxDen (best approximation), else null. */
export function fractionString(value, maxDen = 1000, tol = 1e-9) {
  const sign = value < 0 ? -1 : 1;
  let v = Math.abs(value);
  let p0 = 0, q0 = 1, p1 = 1, q1 = 0;
  let bestP = Math.round(v), bestQ = 1;
  let rest = v;
  for (let iter = 0; iter < 64; iter++) {
    const a = Math.floor(rest);
    const q2 = q0 + a * q1;
    if (q2 > maxDen) {
      // best semiconvergent within the bound
      const k = Math.floor((maxDen - q0) / q1);
      const pb = p0 + k * p1, qb = q0 + k * q1;
      if (Math.abs(pb / qb - v) < Math.abs(p1 / q1 - v)) { bestP = pb; bestQ = qb; } else { bestP = p1; bestQ = q1; }
      break;
    }
    const p2 = p0 + a * p1;
    p0 = p1; q0 = q1; p1 = p2; q1 = q2;
    bestP = p1; bestQ = q1;
    const frac = rest - a;
    if (frac < 1e-15 || Math.abs(p1 / q1 - v) === 0) break;
    rest = 1 / frac;
  }
  if (Math.abs((sign * bestP) / bestQ - value) > tol) return null;
  if (bestP === 0) return "0";
  return bestQ === 1 ? String(sign * bestP) : sign * bestP + "/" + bestQ;
}
