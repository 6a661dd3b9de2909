/* Nash equilibria: vertex enumeration, Lemke–Howson, support polishing, the limiting equilibrium
 * (the twin of lab_app/solvers/nash.py).
 */
import { EPS, zeros, matvec, tmatvec, sum, absMax, solveLinear, determinant, leastSquares, nashConv, profile, fractionString } from "./core.js";

export function positive(M) {
  let lo = Infinity;
  for (const r of M) for (const v of r) if (v < lo) lo = v;
  return M.map((r) => r.map((v) => v - lo + 1));
}
export function scaleOf(A, B) {
  return Math.max(1, ...A.map(absMax), ...B.map(absMax));
}
export function combinations(n, k) {
  const out = [];
  const c = [...Array(k).keys()];
  if (k > n) return out;
  for (;;) {
    out.push(c.slice());
    let i = k - 1;
    while (i >= 0 && c[i] === n - k + i) i--;
    if (i < 0) return out;
    c[i]++;
    for (let j = i + 1; j < k; j++) c[j] = c[j - 1] + 1;
  }
}
export const round9 = (v) => Math.round(v * 1e9) / 1e9;
export const keyOf = (vals) => vals.map((v) => round9(v) + 0).join(",");
export function compareKeys(a, b) {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

/** Vertices ≠ 0 of {z ≥ 0 : M z ≤ 1}; M is r×s. */
export function vertices(M, deadline) {
  const r = M.length, s = M[0].length;
  const found = new Map();
  for (let k = 1; k <= Math.min(r, s); k++) {
    const supports = combinations(s, k);
    const tights = combinations(r, k);
    for (const T of tights) {
      if (Date.now() > deadline) return { list: [...found.values()], complete: false };
      for (const S of supports) {
        const sub = T.map((i) => S.map((j) => M[i][j]));
        if (Math.abs(determinant(sub)) <= 1e-12) continue;
        const sol = solveLinear(sub, zeros(k).map(() => 1));
        if (!sol || sol.some((v) => v < -EPS)) continue;
        const z = zeros(s);
        S.forEach((j, idx) => (z[j] = Math.max(sol[idx], 0)));
        if (matvec(M, z).every((v) => v <= 1 + EPS)) {
          const key = keyOf(z);
          if (!found.has(key)) found.set(key, z);
        }
      }
    }
  }
  return { list: [...found.values()], complete: true };
}
export function vertexEnumeration(A, B, timeLimit = 5) {
  const m = A.length, n = A[0].length;
  const Ap = positive(A), Bp = positive(B);
  const BpT = Bp[0].map((_, j) => Bp.map((row) => row[j]));
  const deadline = Date.now() + timeLimit * 1000;
  const vx = vertices(BpT, deadline);
  const vy = vertices(Ap, deadline);
  const labelsP = (x) => {
    const s = new Set();
    x.forEach((v, i) => v <= EPS && s.add(i));
    tmatvec(Bp, x).forEach((v, j) => Math.abs(v - 1) <= EPS && s.add(m + j));
    return s;
  };
  const labelsQ = (y) => {
    const s = new Set();
    matvec(Ap, y).forEach((v, i) => Math.abs(v - 1) <= EPS && s.add(i));
    y.forEach((v, j) => v <= EPS && s.add(m + j));
    return s;
  };
  const lx = vx.list.map(labelsP), ly = vy.list.map(labelsQ);
  const eqs = new Map();
  vx.list.forEach((x, a) => {
    vy.list.forEach((y, b) => {
      for (let l = 0; l < m + n; l++) if (!lx[a].has(l) && !ly[b].has(l)) return;
      const sx = sum(x), sy = sum(y);
      const xn = x.map((v) => v / sx), yn = y.map((v) => v / sy);
      const key = [...xn, ...yn].map(round9);
      const ks = key.join(",");
      if (!eqs.has(ks)) eqs.set(ks, { key, x: xn, y: yn });
    });
  });
  const list = [...eqs.values()].sort((p, q) => compareKeys(p.key, q.key)).map((e) => [e.x, e.y]);
  return { equilibria: list, complete: vx.complete && vy.complete };
}

export function lemkeHowson(A, B, label = 0, maxPivots = 100000) {
  const m = A.length, n = A[0].length;
  const Ap = positive(A), Bp = positive(B);
  const tabP = [...Array(n)].map((_, j) => [...Bp.map((row) => row[j]), ...zeros(n).map((_, c) => (c === j ? 1 : 0)), 1]);
  const tabQ = [...Array(m)].map((_, i) => [...zeros(m).map((_, c) => (c === i ? 1 : 0)), ...Ap[i], 1]);
  const basisP = [...Array(n).keys()].map((j) => m + j);
  const basisQ = [...Array(m).keys()];
  let entering = label, inP = label < m, pivots = 0, finished = false;
  const W = m + n + 1;
  while (pivots < maxPivots) {
    const tab = inP ? tabP : tabQ, basis = inP ? basisP : basisQ;
    let row = -1, best = Infinity;
    for (let r = 0; r < tab.length; r++) {
      const c = tab[r][entering];
      if (c > EPS) {
        const ratio = tab[r][W - 1] / c;
        if (ratio < best) { best = ratio; row = r; }
      }
    }
    if (row < 0) throw new Error("Lemke–Howson: unbounded ray (degenerate game)");
    const piv = tab[row][entering];
    const pr = tab[row];
    for (let c = 0; c < W; c++) pr[c] /= piv;
    for (let r = 0; r < tab.length; r++) {
      if (r === row) continue;
      const f = tab[r][entering];
      if (f !== 0) for (let c = 0; c < W; c++) tab[r][c] -= f * pr[c];
    }
    const leaving = basis[row];
    basis[row] = entering;
    pivots++;
    if (leaving === label) {
      finished = true;
      break;
    }
    entering = leaving;
    inP = !inP;
  }
  if (!finished) throw new Error(`Lemke–Howson did not finish within ${maxPivots} pivots (a degenerate game cycles)`);
  let x = zeros(m), y = zeros(n);
  basisP.forEach((b, r) => { if (b < m) x[b] = tabP[r][W - 1]; });
  basisQ.forEach((b, r) => { if (b >= m) y[b - m] = tabQ[r][W - 1]; });
  x = x.map((v) => Math.max(v, 0));
  y = y.map((v) => Math.max(v, 0));
  const sx = sum(x), sy = sum(y);
  return { x: x.map((v) => v / sx), y: y.map((v) => v / sy), pivots };
}

export function solveSupport(A, B, rows, cols) {
  const m = A.length, n = A[0].length;
  if (!rows.length || !cols.length) return null;
  const R = rows.length, C = cols.length;
  const My = [...Array(R + 1)].map(() => zeros(C + 1));
  rows.forEach((i, a) => { cols.forEach((j, b) => (My[a][b] = A[i][j])); My[a][C] = -1; });
  for (let b = 0; b < C; b++) My[R][b] = 1;
  const Mx = [...Array(C + 1)].map(() => zeros(R + 1));
  cols.forEach((j, b) => { rows.forEach((i, a) => (Mx[b][a] = B[i][j])); Mx[b][R] = -1; });
  for (let a = 0; a < R; a++) Mx[C][a] = 1;
  const ry = zeros(R + 1); ry[R] = 1;
  const rx = zeros(C + 1); rx[C] = 1;
  const square = R === C;
  const sy = square ? solveLinear(My, ry) : leastSquares(My, ry);
  const sx = square ? solveLinear(Mx, rx) : leastSquares(Mx, rx);
  if (!sy || !sx) return null;
  let x = zeros(m), y = zeros(n);
  rows.forEach((i, a) => (x[i] = sx[a]));
  cols.forEach((j, b) => (y[j] = sy[b]));
  if (Math.min(...x) < -1e-9 || Math.min(...y) < -1e-9) return null;
  x = x.map((v) => Math.max(v, 0));
  y = y.map((v) => Math.max(v, 0));
  const tx = sum(x), ty = sum(y);
  if (tx <= 0 || ty <= 0) return null;
  return [x.map((v) => v / tx), y.map((v) => v / ty)];
}
export function polish(A, B, x, y, thresholds = [1e-6]) {
  let best = [x, y, nashConv(A, B, x, y)];
  for (const thr of thresholds) {
    const rows = [], cols = [];
    x.forEach((v, i) => v > thr && rows.push(i));
    y.forEach((v, j) => v > thr && cols.push(j));
    const sol = solveSupport(A, B, rows, cols);
    if (sol) {
      const nc = nashConv(A, B, sol[0], sol[1]);
      if (nc < best[2]) best = [sol[0], sol[1], nc];
    }
  }
  return best;
}
export function equilibriumJson(A, B, x, y) {
  const out = profile(A, B, x, y, false);
  out.x_frac = x.map((v) => fractionString(v));
  out.y_frac = y.map((v) => fractionString(v));
  return out;
}
export function limitingEquilibrium(A, B, x, y) {
  const tol = 1e-9 * scaleOf(A, B);
  const [xs, ys, nc] = polish(A, B, x, y, [1e-2, 1e-3, 1e-4, 1e-6, 1e-8]);
  const out = equilibriumJson(A, B, xs, ys);
  out.exact = nc <= tol;
  return out;
}
