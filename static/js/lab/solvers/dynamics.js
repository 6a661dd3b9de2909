/* Learning dynamics: magnetic mirror descent and projected gradient descent–ascent
 * (the twin of lab_app/solvers/dynamics.py).
 */
import { matvec, tmatvec, sum, maxOf, maxAbsDiff, softmax, projectSimplex, nashConv, profile } from "./core.js";

export function recordStride(steps, record) {
  return Math.max(1, Math.ceil(steps / Math.max(1, record)));
}
export function makeRecorder(A, B, steps, record, target) {
  const rec = { stride: recordStride(steps, record), iteration: [], last: [], avg: [], xs: [], ys: [], distance: [] };
  rec.add = (t, x, y, ax, ay) => {
    rec.iteration.push(t);
    rec.last.push(nashConv(A, B, x, y));
    rec.avg.push(nashConv(A, B, ax, ay));
    rec.xs.push(x.slice());
    rec.ys.push(y.slice());
    if (target) rec.distance.push(Math.max(maxAbsDiff(x, target[0]), maxAbsDiff(y, target[1])));
  };
  rec.result = (x, y, ax, ay, zeroSum, iterations, converged) => {
    const trace = { iteration: rec.iteration, nashconv_last: rec.last, nashconv_average: rec.avg };
    if (target) trace.distance_to_qre = rec.distance;
    return {
      iterations,
      converged,
      last: profile(A, B, x, y, zeroSum),
      average: profile(A, B, ax, ay, zeroSum),
      trace,
      trajectory: { x: rec.xs, y: rec.ys },
    };
  };
  return rec;
}
export function normalizedLogits(z) {
  const mx = maxOf(z);
  const zz = z.map((v) => v - mx);
  const e = zz.map(Math.exp);
  const s = sum(e);
  const ls = Math.log(s);
  return [zz.map((v) => v - ls), e.map((v) => v / s)];
}

/** Normalise logits in place: z ← z − logsumexp(z), p ← softmax(z). Same arithmetic as the Python twin. */
export function normalizeInto(z, p) {
  const k = z.length;
  let mx = -Infinity;
  for (let i = 0; i < k; i++) if (z[i] > mx) mx = z[i];
  let s = 0;
  for (let i = 0; i < k; i++) {
    z[i] -= mx;
    p[i] = Math.exp(z[i]);
    s += p[i];
  }
  const ls = Math.log(s);
  for (let i = 0; i < k; i++) {
    z[i] -= ls;
    p[i] /= s;
  }
}
export const flat = (M) => Float64Array.from(M.flat());
export function matvecFlat(Mf, rows, cols, v, out) {
  for (let i = 0; i < rows; i++) {
    let acc = 0;
    const o = i * cols;
    for (let j = 0; j < cols; j++) acc += Mf[o + j] * v[j];
    out[i] = acc;
  }
}
export function tmatvecFlat(Mf, rows, cols, v, out) {
  out.fill(0);
  for (let i = 0; i < rows; i++) {
    const vi = v[i];
    const o = i * cols;
    for (let j = 0; j < cols; j++) out[j] += Mf[o + j] * vi;
  }
}

/** Magnetic mirror descent, negative-entropy regulariser, exact prox step (see the Python docstring).
 * Allocation-free inner loop on typed arrays: 10,000 steps on a 3×3 game take a few milliseconds. */
/** MMD steps t0+1..t1 on the state st (typed arrays); returns the last step done (earlier if converged).
 * Kept small so the JIT optimises it after a few calls: the first run in a page is fast too. */
export function mmdKernel(st, t0, t1) {
  const { m, n, Af, Bf, c, ce, cet, kx, ky, gx, gy, sx, sy, o } = st;
  for (let t = t0 + 1; t <= t1; t++) {
    const x = st.x, y = st.y, zx = st.zx, zy = st.zy, x2 = st.x2, y2 = st.y2, zx2 = st.zx2, zy2 = st.zy2;
    matvecFlat(Af, m, n, y, gx);
    if (!o.alternating) tmatvecFlat(Bf, m, n, x, gy);
    for (let i = 0; i < m; i++) zx2[i] = c * zx[i] + kx[i] + ce * gx[i];
    normalizeInto(zx2, x2);
    if (o.alternating) tmatvecFlat(Bf, m, n, x2, gy);
    for (let j = 0; j < n; j++) zy2[j] = c * zy[j] + ky[j] + ce * gy[j];
    normalizeInto(zy2, y2);
    let converged = false;
    if (o.tol > 0) {
      let diff = 0;
      for (let i = 0; i < m; i++) diff = Math.max(diff, Math.abs(x2[i] - x[i]));
      for (let j = 0; j < n; j++) diff = Math.max(diff, Math.abs(y2[j] - y[j]));
      converged = diff < o.tol;
    }
    st.x = x2; st.x2 = x; st.zx = zx2; st.zx2 = zx;
    st.y = y2; st.y2 = y; st.zy = zy2; st.zy2 = zy;
    for (let i = 0; i < m; i++) sx[i] += x2[i];
    for (let j = 0; j < n; j++) sy[j] += y2[j];
    if (o.reset_every && t % o.reset_every === 0) {
      for (let i = 0; i < m; i++) kx[i] = cet * zx2[i];
      for (let j = 0; j < n; j++) ky[j] = cet * zy2[j];
    }
    if (converged) {
      st.converged = true;
      return t;
    }
  }
  return t1;
}

/** Magnetic mirror descent, negative-entropy regulariser, exact prox step (see the Python docstring). */
export function mmd(A, B, x0, y0, o) {
  const m = A.length, n = A[0].length;
  const c = 1 / (1 + o.eta * o.tau);
  const cet = c * o.eta * o.tau;
  const st = {
    m, n, o, c, cet,
    Af: flat(A), Bf: flat(B), ce: c * o.eta,
    zx: Float64Array.from(x0, Math.log), x: new Float64Array(m), zx2: new Float64Array(m), x2: new Float64Array(m),
    zy: Float64Array.from(y0, Math.log), y: new Float64Array(n), zy2: new Float64Array(n), y2: new Float64Array(n),
    // The magnet's pull c·ητ·log ρ is constant between resets.
    kx: Float64Array.from(o.magnet_x, (v) => cet * Math.log(v)), ky: Float64Array.from(o.magnet_y, (v) => cet * Math.log(v)),
    gx: new Float64Array(m), gy: new Float64Array(n),
    sx: new Float64Array(m), sy: new Float64Array(n), // running sums (averages = sums / t)
    converged: false,
  };
  normalizeInto(st.zx, st.x);
  normalizeInto(st.zy, st.y);
  const avg = (sums, t) => Array.from(sums, (v) => v / t);
  const rec = makeRecorder(A, B, o.steps, o.record, o.target);
  rec.add(0, Array.from(st.x), Array.from(st.y), Array.from(st.x), Array.from(st.y));
  let t = 0;
  while (t < o.steps && !st.converged) {
    const next = Math.min(o.steps, (Math.floor(t / rec.stride) + 1) * rec.stride);
    t = mmdKernel(st, t, next);
    if (t % rec.stride === 0 || t === o.steps || st.converged) rec.add(t, Array.from(st.x), Array.from(st.y), avg(st.sx, t), avg(st.sy, t));
  }
  return rec.result(Array.from(st.x), Array.from(st.y), avg(st.sx, Math.max(t, 1)), avg(st.sy, Math.max(t, 1)), o.zero_sum, t, st.converged);
}

/** Projected gradient descent–ascent: each player ascends its own payoff. */
export function gda(A, B, x0, y0, o) {
  let x = x0.slice(), y = y0.slice();
  const ax = x.slice(), ay = y.slice();
  const rec = makeRecorder(A, B, o.steps, o.record);
  rec.add(0, x, y, ax, ay);
  let converged = false, t = 0;
  for (t = 1; t <= o.steps; t++) {
    const g = matvec(A, y);
    const xNew = projectSimplex(x.map((v, i) => v + o.eta * g[i]));
    const gy = tmatvec(B, o.alternating ? xNew : x);
    const yNew = projectSimplex(y.map((v, j) => v + o.eta * gy[j]));
    const diff = Math.max(maxAbsDiff(xNew, x), maxAbsDiff(yNew, y));
    x = xNew; y = yNew;
    for (let i = 0; i < x.length; i++) ax[i] += (x[i] - ax[i]) / t;
    for (let j = 0; j < y.length; j++) ay[j] += (y[j] - ay[j]) / t;
    converged = o.tol > 0 && diff < o.tol;
    if (t % rec.stride === 0 || t === o.steps || converged) rec.add(t, x, y, ax, ay);
    if (converged) break;
  }
  if (t > o.steps) t = o.steps;
  return rec.result(x, y, ax, ay, o.zero_sum, t, converged);
}
