/* Logit quantal response equilibria: Newton at one λ and the principal-branch path by pseudo-arclength
 * continuation (the twin of lab_app/solvers/qre_newton.py and qre_path.py and their compiled kernel qre_kernel.c,
 * step for step).
 * Unknowns are log-odds against each player's first action, w = (u, v); everything runs on flat Float64Arrays
 * allocated once per call, so a 12×12 game at λ = 10 takes about a millisecond.
 */
import { nashConv } from "./core.js";
import { limitingEquilibrium } from "./nash.js";

/** The QRE equations H(w, λ) = (u − λ·D_A y, v − λ·D_B x) of one game, with work buffers. */
class QreSystem {
  constructor(A, B) {
    const m = A.length, n = A[0].length;
    this.A = A;
    this.B = B;
    this.m = m;
    this.n = n;
    this.k = m - 1;
    this.d = m + n - 2;
    this.Af = Float64Array.from(A.flat());
    this.Bf = Float64Array.from(B.flat());
    this.DA = new Float64Array((m - 1) * n); // A[i+1] − A[0]
    this.DBt = new Float64Array((n - 1) * m); // B[:, j+1] − B[:, 0]
    for (let i = 0; i < m - 1; i++) for (let j = 0; j < n; j++) this.DA[i * n + j] = A[i + 1][j] - A[0][j];
    for (let j = 0; j < n - 1; j++) for (let i = 0; i < m; i++) this.DBt[j * m + i] = B[i][j + 1] - B[i][0];
    this.x = new Float64Array(m);
    this.y = new Float64Array(n);
    this.DAy = new Float64Array(Math.max(m - 1, 0));
    this.DBx = new Float64Array(Math.max(n - 1, 0));
    this.work = new Float64Array(Math.max(m, n));
  }
  /** p = softmax(0, w[off .. off+len−2]) */
  static softmaxLogOdds(w, off, len, p) {
    let mx = 0;
    for (let i = 0; i < len - 1; i++) if (w[off + i] > mx) mx = w[off + i];
    p[0] = Math.exp(-mx);
    let s = p[0];
    for (let i = 1; i < len; i++) {
      p[i] = Math.exp(w[off + i - 1] - mx);
      s += p[i];
    }
    for (let i = 0; i < len; i++) p[i] /= s;
  }
  probs(w, x, y) {
    QreSystem.softmaxLogOdds(w, 0, this.m, x);
    QreSystem.softmaxLogOdds(w, this.k, this.n, y);
  }
  /** F = H(w, λ); leaves x, y, D_A y and D_B x in this. */
  H(w, lam, F) {
    const { k, m, n, DA, DBt, x, y, DAy, DBx } = this;
    this.probs(w, x, y);
    for (let i = 0; i < k; i++) {
      let acc = 0;
      const o = i * n;
      for (let j = 0; j < n; j++) acc += DA[o + j] * y[j];
      DAy[i] = acc;
      F[i] = w[i] - lam * acc;
    }
    for (let j = 0; j < n - 1; j++) {
      let acc = 0;
      const o = j * m;
      for (let i = 0; i < m; i++) acc += DBt[o + i] * x[i];
      DBx[j] = acc;
      F[k + j] = w[k + j] - lam * acc;
    }
  }
  /** H_w (d×d) into the top-left of row-major M with row length ld, at the last evaluated point. */
  Hw(lam, M, ld) {
    const { k, m, n, d, DA, DBt, x, y, DAy, DBx } = this;
    for (let r = 0; r < d; r++) {
      const o = r * ld;
      for (let c = 0; c < d; c++) M[o + c] = 0;
      M[o + r] = 1;
    }
    if (k && n > 1) {
      for (let i = 0; i < k; i++) {
        const o = i * ld + k;
        for (let j = 0; j < n - 1; j++) M[o + j] = (DAy[i] - DA[i * n + j + 1]) * (lam * y[j + 1]);
      }
      for (let j = 0; j < n - 1; j++) {
        const o = (k + j) * ld;
        for (let i = 0; i < k; i++) M[o + i] = (DBx[j] - DBt[j * m + i + 1]) * (lam * x[i + 1]);
      }
    }
  }
  /** [[H_w, H_λ], [tᵀ, 0]] at the last evaluated point. */
  augmented(lam, t, M) {
    const { d, k, n, DAy, DBx } = this;
    const ld = d + 1;
    this.Hw(lam, M, ld);
    for (let i = 0; i < k; i++) M[i * ld + d] = -DAy[i];
    for (let j = 0; j < n - 1; j++) M[(k + j) * ld + d] = -DBx[j];
    for (let c = 0; c <= d; c++) M[d * ld + c] = t[c];
  }
  /** max |x − softmax(λAy)|, |y − softmax(λBᵀx)|: the fixed-point residual in probability space. */
  residual(x, y, lam) {
    const { m, n, Af, Bf, work } = this;
    let worst = 0;
    for (let side = 0; side < 2; side++) {
      const len = side === 0 ? m : n;
      let mx = -Infinity;
      for (let a = 0; a < len; a++) {
        let acc = 0;
        if (side === 0) for (let j = 0; j < n; j++) acc += Af[a * n + j] * y[j];
        else for (let i = 0; i < m; i++) acc += Bf[i * n + a] * x[i];
        work[a] = lam * acc;
        if (work[a] > mx) mx = work[a];
      }
      let s = 0;
      for (let a = 0; a < len; a++) {
        work[a] = Math.exp(work[a] - mx);
        s += work[a];
      }
      const p = side === 0 ? x : y;
      for (let a = 0; a < len; a++) worst = Math.max(worst, Math.abs(p[a] - work[a] / s));
    }
    return worst;
  }
}

/** LU with partial pivoting of row-major M (n×n) in place, then M u = b into b. Returns the determinant's sign
 * (±1), or 0 when a pivot is exactly zero (b is then left unsolved). */
function luSolveInPlace(M, n, b) {
  let sign = 1;
  for (let c = 0; c < n; c++) {
    let p = c, best = Math.abs(M[c * n + c]);
    for (let r = c + 1; r < n; r++) {
      const v = Math.abs(M[r * n + c]);
      if (v > best) {
        best = v;
        p = r;
      }
    }
    if (best === 0) return 0;
    if (p !== c) {
      for (let j = 0; j < n; j++) {
        const tmp = M[c * n + j];
        M[c * n + j] = M[p * n + j];
        M[p * n + j] = tmp;
      }
      const tb = b[c];
      b[c] = b[p];
      b[p] = tb;
      sign = -sign;
    }
    const pivot = M[c * n + c];
    if (pivot < 0) sign = -sign;
    for (let r = c + 1; r < n; r++) {
      const f = M[r * n + c] / pivot;
      if (f === 0) continue;
      const ro = r * n, co = c * n;
      for (let j = c + 1; j < n; j++) M[ro + j] -= f * M[co + j];
      b[r] -= f * b[c];
    }
  }
  for (let r = n - 1; r >= 0; r--) {
    let s = b[r];
    const ro = r * n;
    for (let j = r + 1; j < n; j++) s -= M[ro + j] * b[j];
    b[r] = s / M[ro + r];
  }
  return sign;
}

const absMax = (v, len) => {
  let r = 0;
  for (let i = 0; i < len; i++) if (Math.abs(v[i]) > r) r = Math.abs(v[i]);
  return r;
};
const dotp = (a, b, len) => {
  let r = 0;
  for (let i = 0; i < len; i++) r += a[i] * b[i];
  return r;
};

/** Damped Newton on H(·, λ) with a backtracking line search on ‖H‖₂; w (a Float64Array) is updated in place. */
function newton(sys, lam, w, tol, maxIter = 60) {
  const { d, m, n } = sys;
  const J = new Float64Array(d * d), F = new Float64Array(d), dw = new Float64Array(d);
  const wt = new Float64Array(d), Ft = new Float64Array(d);
  const x = new Float64Array(m), y = new Float64Array(n);
  sys.H(w, lam, F);
  x.set(sys.x);
  y.set(sys.y);
  let nrm = Math.sqrt(dotp(F, F, d)), res = 0, ok = false, it = 0;
  for (it = 0; it <= maxIter; it++) {
    if (absMax(F, d) <= tol) {
      res = sys.residual(x, y, lam);
      if (res <= tol) {
        ok = true;
        break;
      }
    }
    if (it === maxIter) break;
    sys.H(w, lam, Ft); // restores D_A y, D_B x at the accepted point (a rejected trial overwrote them)
    sys.Hw(lam, J, d);
    for (let i = 0; i < d; i++) dw[i] = -F[i];
    if (!luSolveInPlace(J, d, dw)) break;
    let step = 1, nt = 0;
    for (;;) {
      for (let i = 0; i < d; i++) wt[i] = w[i] + step * dw[i];
      sys.H(wt, lam, Ft);
      nt = Math.sqrt(dotp(Ft, Ft, d));
      if (nt <= (1 - 1e-4 * step) * nrm || step < 1e-6) break;
      step *= 0.5;
    }
    if (step < 1e-6) break;
    w.set(wt);
    F.set(Ft);
    x.set(sys.x);
    y.set(sys.y);
    nrm = nt;
  }
  if (!ok) res = sys.residual(x, y, lam);
  return { w, x, y, res, ok, its: it };
}

/** The logit QRE at λ on the principal branch, to fixed-point residual ≤ tol (see the Python twin). */
export function qre(A, B, lam, tol = 1e-12, zeroSum = false) {
  const m = A.length, n = A[0].length;
  if (m + n === 2) return qreResult(A, B, lam, [1], [1], 0, true, 0, "trivial", zeroSum);
  let ok = false, its = 0, r = null, method = null;
  if (zeroSum) {
    r = newton(new QreSystem(A, B), lam, new Float64Array(m + n - 2), tol, 8);
    ok = r.ok;
    its = r.its;
    method = "newton";
  }
  // The arclength tracer to where the branch first reaches λ, then Newton in log-odds against the likeliest actions.
  if (!ok) {
    const path = tracePath(A, B, { lamMax: lam, stopAt: lam }); // points to 1e-7: Newton polishes the end
    const { p, q, w } = rebase(m, path.wAtStop);
    const perm = (M) => p.map((i) => q.map((j) => M[i][j]));
    r = newton(new QreSystem(perm(A), perm(B)), lam, w, tol);
    r.x = p.map((i) => r.x[i]);
    r.y = q.map((j) => r.y[j]);
    ok = r.ok;
    its += r.its + path.correctorIterations;
    method = "arclength continuation + newton";
  }
  return qreResult(A, B, lam, Array.from(r.x), Array.from(r.y), r.res, ok, its, method, zeroSum);
}

/** Log-odds against each player's likeliest action (see the Python twin): two swaps, each its own inverse. */
function rebase(m, w) {
  const u = [0, ...w.slice(0, m - 1)], v = [0, ...w.slice(m - 1)];
  const argmax = (a) => a.reduce((best, val, i) => (val > a[best] ? i : best), 0);
  const i = argmax(u), j = argmax(v);
  const p = [...u.keys()], q = [...v.keys()];
  [p[0], p[i]] = [i, 0];
  [q[0], q[j]] = [j, 0];
  return { p, q, w: Float64Array.from([...p.slice(1).map((a) => u[a] - u[i]), ...q.slice(1).map((b) => v[b] - v[j])]) };
}

function qreResult(A, B, lam, x, y, res, ok, its, method, zeroSum) {
  const nc = nashConv(A, B, x, y);
  const out = { lambda: lam, x, y, residual: res, converged: ok, newton_iterations: its, method, nashconv: nc };
  if (zeroSum) out.exploitability = nc / 2;
  return out;
}

/** Principal-branch QRE path by pseudo-arclength predictor–corrector continuation (see the Python twin). */
export function tracePath(A, B, { lamMax = 100, maxPoints = 2000, tol = 1e-7, stopAt = null } = {}) {
  const m = A.length, n = A[0].length;
  const points = [[0, Array(m).fill(1 / m), Array(n).fill(1 / n)]];
  const turning = [], bifurcations = [];
  let correctorTotal = 0;
  if (m + n === 2) return pathResult(A, B, [[0, [1], [1]]], turning, bifurcations, "trivial", correctorTotal);
  const sys = new QreSystem(A, B);
  const d = sys.d, D = d + 1;
  const M = new Float64Array(D * D), z = new Float64Array(D), t = new Float64Array(D), tn = new Float64Array(D);
  const pred = new Float64Array(D), zc = new Float64Array(D), dz = new Float64Array(D), F = new Float64Array(d);
  const px = new Float64Array(m), py = new Float64Array(n);
  sys.H(z, 0, F);
  points[0] = [0, Array.from(sys.x), Array.from(sys.y)];
  for (let i = 0; i < sys.k; i++) t[i] = sys.DAy[i];
  for (let j = 0; j < n - 1; j++) t[sys.k + j] = sys.DBx[j];
  t[d] = 1;
  let tnorm = Math.sqrt(dotp(t, t, D));
  for (let i = 0; i < D; i++) t[i] /= tnorm;
  let h = 0.05 * Math.max(1, Math.min(lamMax, 10));
  const hMax = Math.max(1, lamMax / 4);
  let detSign = 0;
  let status = "reached lambda_max";
  for (;;) {
    if (points.length >= maxPoints) { status = "stopped at max_points"; break; }
    if (h < 1e-12) { status = "step size underflow"; break; }
    for (let i = 0; i < D; i++) pred[i] = z[i] + h * t[i];
    zc.set(pred);
    let ok = false, its = 0;
    for (its = 1; its < 9; its++) {
      sys.H(zc, zc[d], F);
      sys.augmented(zc[d], t, M);
      let g = 0;
      for (let i = 0; i < D; i++) g += t[i] * (zc[i] - pred[i]);
      for (let i = 0; i < d; i++) dz[i] = -F[i];
      dz[d] = -g;
      if (!luSolveInPlace(M, D, dz)) break;
      for (let i = 0; i < D; i++) zc[i] += dz[i];
      const step = absMax(dz, D);
      if (step > 0.5 * h + 1e-9) break; // the predictor was far from any point: shorten the step
      if (step <= tol * (1 + absMax(zc, D))) {
        sys.H(zc, zc[d], F);
        ok = absMax(F, d) <= 1e-8 * (1 + Math.abs(zc[d]));
        break;
      }
    }
    if (its === 9) its = 8;
    correctorTotal += its;
    if (!ok) { h *= 0.5; continue; }
    // New tangent, oriented like the old one; sys holds x, y at zc.
    sys.augmented(zc[d], t, M);
    tn.fill(0);
    tn[d] = 1;
    const sign = luSolveInPlace(M, D, tn);
    if (!sign) { h *= 0.5; continue; }
    tnorm = Math.sqrt(dotp(tn, tn, D));
    for (let i = 0; i < D; i++) tn[i] /= tnorm;
    if ((dotp(t, tn, D) < 0.95 || zc[d] < 0) && h > 1e-9) {
      h *= 0.5; // the tangent turned too far in one step (or λ < 0): a branch jump, not the path
      continue;
    }
    if (detSign !== 0 && sign !== detSign && h > 1e-6) {
      h *= 0.5; // the orientation flipped: another branch, unless it persists at tiny steps (a bifurcation)
      continue;
    }
    const lamNew = zc[d];
    let kind = null, a0 = 0, a1 = 0;
    if (tn[d] * t[d] < 0) [kind, a0, a1] = ["turning point", t[d], tn[d]];
    else if (detSign !== 0 && sign !== detSign) [kind, a0, a1] = ["bifurcation", 1, -1];
    if (kind) {
      const frac = a0 !== a1 ? a0 / (a0 - a1) : 0.5;
      for (let i = 0; i < D; i++) dz[i] = z[i] + frac * (zc[i] - z[i]);
      sys.probs(dz, px, py);
      (kind === "turning point" ? turning : bifurcations).push({ kind, lambda: dz[d], x: Array.from(px), y: Array.from(py) });
    }
    detSign = sign;
    if (stopAt !== null && lamNew >= stopAt && z[d] < stopAt) {
      const frac = (stopAt - z[d]) / (lamNew - z[d]);
      const wAtStop = Array.from(z.subarray(0, d), (v, i) => v + frac * (zc[i] - v));
      return { wAtStop, correctorIterations: correctorTotal };
    }
    z.set(zc);
    t.set(tn);
    points.push([lamNew, Array.from(sys.x), Array.from(sys.y)]);
    if (lamNew >= lamMax) break;
    if (its <= 3) h = Math.min(h * 2, hMax, 0.1 + 0.3 * Math.abs(lamNew));
    else if (its >= 6) h *= 0.6;
  }
  if (stopAt !== null) return { wAtStop: Array.from(z.subarray(0, d)), correctorIterations: correctorTotal };
  return pathResult(A, B, points, turning, bifurcations, status, correctorTotal);
}

function pathResult(A, B, points, turning, bifurcations, status, correctorTotal) {
  const outPoints = points.map(([lam, x, y]) => ({ lambda: lam, x, y, nashconv: nashConv(A, B, x, y) }));
  const [lam, x, y] = points[points.length - 1];
  return {
    points: outPoints,
    turning_points: turning,
    bifurcations,
    status,
    lambda_end: lam,
    limit: limitingEquilibrium(A, B, x, y),
    corrector_iterations: correctorTotal,
  };
}
