/* Logit quantal response equilibria: Newton at one λ and the principal-branch path by pseudo-arclength
 * continuation (the twin of lab_app/solvers/qre.py, step for step).
 */
import { zeros, matvec, tmatvec, dot, absMax, norm2, maxAbsDiff, solveLinear, determinant, softmax, nashConv } from "./core.js";
import { limitingEquilibrium } from "./nash.js";

export function qreSystem(A, B) {
  const m = A.length, n = A[0].length;
  const DA = A.slice(1).map((row) => row.map((v, j) => v - A[0][j])); // (m-1)×n
  const DBt = []; // (n-1)×m
  for (let j = 1; j < n; j++) DBt.push(A.map((_, i) => B[i][j] - B[i][0]));
  const d = m + n - 2;
  const sys = { A, B, m, n, DA, DBt, d };
  sys.probs = (w) => [softmax([0, ...w.slice(0, m - 1)]), softmax([0, ...w.slice(m - 1)])];
  sys.H = (w, lam) => {
    const [x, y] = sys.probs(w);
    const k = m - 1;
    const F = new Array(d);
    const DAy = matvec(DA, y);
    const DBx = matvec(DBt, x);
    for (let i = 0; i < k; i++) F[i] = w[i] - lam * DAy[i];
    for (let j = 0; j < n - 1; j++) F[k + j] = w[k + j] - lam * DBx[j];
    return [F, x, y];
  };
  sys.Hlambda = (x, y) => [...matvec(DA, y), ...matvec(DBt, x)].map((v) => -v);
  sys.Hw = (x, y, lam) => {
    const k = m - 1;
    const J = [...Array(d)].map((_, i) => {
      const r = zeros(d);
      r[i] = 1;
      return r;
    });
    if (k && n > 1) {
      const DAy = matvec(DA, y);
      for (let i = 0; i < k; i++) for (let j = 1; j < n; j++) J[i][k + j - 1] = -lam * (DA[i][j] * y[j] - DAy[i] * y[j]);
      const DBx = matvec(DBt, x);
      for (let j = 0; j < n - 1; j++) for (let i = 1; i < m; i++) J[k + j][i - 1] = -lam * (DBt[j][i] * x[i] - DBx[j] * x[i]);
    }
    return J;
  };
  sys.residual = (x, y, lam) => {
    const sx = softmax(matvec(A, y).map((v) => lam * v));
    const sy = softmax(tmatvec(B, x).map((v) => lam * v));
    return Math.max(maxAbsDiff(x, sx), maxAbsDiff(y, sy));
  };
  return sys;
}

export function newton(sys, lam, w, tol, maxIter = 60) {
  let [F, x, y] = sys.H(w, lam);
  let nrm = norm2(F);
  let it = 0;
  for (it = 0; it <= maxIter; it++) {
    if (absMax(F) <= tol) {
      const res = sys.residual(x, y, lam);
      if (res <= tol) return { w, x, y, res, ok: true, its: it };
    }
    if (it === maxIter) break;
    const dw = solveLinear(sys.Hw(x, y, lam), F.map((v) => -v));
    if (!dw) break;
    let step = 1, wTry, FTry, xTry, yTry, nTry;
    for (;;) {
      wTry = w.map((v, i) => v + step * dw[i]);
      [FTry, xTry, yTry] = sys.H(wTry, lam);
      nTry = norm2(FTry);
      if (nTry <= (1 - 1e-4 * step) * nrm || step < 1e-6) break;
      step *= 0.5;
    }
    if (step < 1e-6) break;
    w = wTry; F = FTry; x = xTry; y = yTry; nrm = nTry;
  }
  return { w, x, y, res: sys.residual(x, y, lam), ok: false, its: it };
}

export function qre(A, B, lam, tol = 1e-12, zeroSum = false) {
  const sys = qreSystem(A, B);
  if (sys.d === 0) return qreResult(sys, lam, [1], [1], 0, true, 0, "trivial", zeroSum);
  let ok = false, its = 0, r = null, method = null;
  if (zeroSum) {
    r = newton(sys, lam, zeros(sys.d), tol, 8);
    ok = r.ok; its = r.its; method = "newton";
  }
  // The arclength tracer to where the branch first reaches λ, then Newton (see the Python twin).
  if (!ok) {
    const path = tracePath(A, B, { lamMax: lam, tol: 1e-10, stopAt: lam });
    const { p, q, w } = rebase(sys.m, path.wAtStop);
    const perm = (M) => p.map((i) => q.map((j) => M[i][j]));
    r = newton(qreSystem(perm(A), perm(B)), lam, w, tol);
    r.x = p.map((i) => r.x[i]);
    r.y = q.map((j) => r.y[j]);
    ok = r.ok; its += r.its + path.correctorIterations; method = "arclength continuation + newton";
  }
  return qreResult(sys, lam, r.x, r.y, r.res, ok, its, method, zeroSum);
}
/** Log-odds against each player's likeliest action (see the Python twin): two swaps, each its own inverse. */
export function rebase(m, w) {
  const u = [0, ...w.slice(0, m - 1)], v = [0, ...w.slice(m - 1)];
  const argmax = (a) => a.reduce((best, val, i) => (val > a[best] ? i : best), 0);
  const i = argmax(u), j = argmax(v);
  const p = [...u.keys()], q = [...v.keys()];
  [p[0], p[i]] = [i, 0];
  [q[0], q[j]] = [j, 0];
  return { p, q, w: [...p.slice(1).map((a) => u[a] - u[i]), ...q.slice(1).map((b) => v[b] - v[j])] };
}
export function qreResult(sys, lam, x, y, res, ok, its, method, zeroSum) {
  const nc = nashConv(sys.A, sys.B, x, y);
  const out = { lambda: lam, x: x.slice(), y: y.slice(), residual: res, converged: ok, newton_iterations: its, method, nashconv: nc };
  if (zeroSum) out.exploitability = nc / 2;
  return out;
}

export function augmented(sys, x, y, lam, t) {
  const d = sys.d;
  const J = sys.Hw(x, y, lam);
  const hl = sys.Hlambda(x, y);
  const M = J.map((row, i) => [...row, hl[i]]);
  M.push(t.slice());
  void d;
  return M;
}

/** Principal-branch QRE path by pseudo-arclength predictor–corrector continuation (see the Python twin). */
export function tracePath(A, B, { lamMax = 100, maxPoints = 2000, tol = 1e-7, stopAt = null } = {}) {
  const sys = qreSystem(A, B);
  const d = sys.d;
  let lam = 0;
  let w = zeros(d);
  let [x, y] = sys.probs(w);
  const points = [[0, x, y]];
  const turning = [], bifurcations = [];
  let correctorTotal = 0;
  if (d === 0) return pathResult(sys, points, turning, bifurcations, "trivial", correctorTotal);
  let t = [...sys.Hlambda(x, y).map((v) => -v), 1];
  let tn = norm2(t);
  t = t.map((v) => v / tn);
  let z = [...w, lam];
  let h = 0.05 * Math.max(1, Math.min(lamMax, 10));
  const hMax = Math.max(1, lamMax / 4);
  let detSign = null;
  let status = "reached lambda_max";
  for (;;) {
    if (points.length >= maxPoints) { status = "stopped at max_points"; break; }
    if (h < 1e-12) { status = "step size underflow"; break; }
    const pred = z.map((v, i) => v + h * t[i]);
    let zc = pred.slice();
    let ok = false, its = 0;
    for (its = 1; its < 9; its++) {
      let F;
      [F, x, y] = sys.H(zc.slice(0, d), zc[d]);
      const M = augmented(sys, x, y, zc[d], t);
      const G = [...F, dot(t, zc.map((v, i) => v - pred[i]))];
      const dz = solveLinear(M, G.map((v) => -v));
      if (!dz) break;
      zc = zc.map((v, i) => v + dz[i]);
      const step = absMax(dz);
      if (step > 0.5 * h + 1e-9 && its > 1) break;
      if (step <= tol * (1 + absMax(zc))) {
        [F, x, y] = sys.H(zc.slice(0, d), zc[d]);
        ok = absMax(F) <= 1e-8 * (1 + Math.abs(zc[d]));
        break;
      }
    }
    correctorTotal += its;
    if (!ok) { h *= 0.5; continue; }
    const M = augmented(sys, x, y, zc[d], t);
    const rhs = zeros(d + 1);
    rhs[d] = 1;
    let tNew = solveLinear(M, rhs);
    tn = norm2(tNew);
    tNew = tNew.map((v) => v / tn);
    if ((dot(t, tNew) < 0.95 || zc[d] < 0) && h > 1e-9) {
      h *= 0.5; // the tangent turned too far in one step (or λ < 0): a branch jump, not the path
      continue;
    }
    M[d] = tNew.slice();
    const det = determinant(M);
    const sign = det > 0 ? 1 : det < 0 ? -1 : 0;
    const lamNew = zc[d];
    if (tNew[d] * t[d] < 0) turning.push(pathEvent(sys, z, zc, t[d], tNew[d], "turning point"));
    else if (detSign !== null && sign !== 0 && sign !== detSign) bifurcations.push(pathEvent(sys, z, zc, 1, -1, "bifurcation"));
    if (sign !== 0) detSign = sign;
    if (stopAt !== null && lamNew >= stopAt && z[d] < stopAt) {
      const frac = (stopAt - z[d]) / (lamNew - z[d]);
      return { wAtStop: z.slice(0, d).map((v, i) => v + frac * (zc[i] - v)), correctorIterations: correctorTotal };
    }
    z = zc;
    t = tNew;
    points.push([lamNew, x, y]);
    if (lamNew >= lamMax) break;
    if (its <= 3) h = Math.min(h * 2, hMax, 0.1 + 0.3 * Math.abs(lamNew));
    else if (its >= 6) h *= 0.6;
  }
  if (stopAt !== null) return { wAtStop: z.slice(0, d), correctorIterations: correctorTotal };
  return pathResult(sys, points, turning, bifurcations, status, correctorTotal);
}
export function pathEvent(sys, z0, z1, a0, a1, kind) {
  const frac = a0 !== a1 ? a0 / (a0 - a1) : 0.5;
  const zi = z0.map((v, i) => v + frac * (z1[i] - v));
  const [x, y] = sys.probs(zi.slice(0, -1));
  return { kind, lambda: zi[zi.length - 1], x, y };
}
export function pathResult(sys, points, turning, bifurcations, status, correctorTotal) {
  const outPoints = points.map(([lam, x, y]) => ({ lambda: lam, x: x.slice(), y: y.slice(), nashconv: nashConv(sys.A, sys.B, x, y) }));
  const [lam, x, y] = points[points.length - 1];
  return {
    points: outPoints,
    turning_points: turning,
    bifurcations,
    status,
    lambda_end: lam,
    limit: limitingEquilibrium(sys.A, sys.B, x, y),
    corrector_iterations: correctorTotal,
  };
}
