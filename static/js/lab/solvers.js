/* Matrix-game solvers, dependency-free: the JS twin of lab_app/solvers (same algorithms, same JSON).
 * Works as a browser global (window.LabSolvers) and as a CommonJS module in node (tests, benches).
 * Conventions: payoffs A (row) and B (column), m×n; x, y on simplices; both players ascend their own payoff.
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.LabSolvers = factory();
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  const EPS = 1e-9;
  const METRIC_NOTE =
    "NashConv = Σ over both players of (best-response payoff − current payoff); " +
    "for zero-sum games exploitability = NashConv / 2 is reported too.";
  const SOLVERS = ["mmd", "gda", "qre", "qre_path", "nash"];
  const MAX_ABS_PAYOFF = 1e6;

  class SolverInputError extends Error {
    constructor(field, message) {
      super(field + ": " + message);
      this.field = field;
      this.detail = message;
    }
  }

  // ---- small linear algebra ---------------------------------------------------------------------
  const zeros = (n) => new Array(n).fill(0);
  const matvec = (M, v) => M.map((row) => dot(row, v));
  const tmatvec = (M, v) => {
    const out = zeros(M[0].length);
    for (let i = 0; i < M.length; i++) {
      const vi = v[i];
      const row = M[i];
      for (let j = 0; j < row.length; j++) out[j] += row[j] * vi;
    }
    return out;
  };
  function dot(a, b) {
    let s = 0;
    for (let i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  }
  const sum = (a) => a.reduce((s, v) => s + v, 0);
  const maxOf = (a) => a.reduce((s, v) => (v > s ? v : s), -Infinity);
  const absMax = (a) => a.reduce((s, v) => (Math.abs(v) > s ? Math.abs(v) : s), 0);
  const norm2 = (a) => Math.sqrt(dot(a, a));

  /** LU with partial pivoting; returns {lu, perm, sign} or null when a pivot is exactly zero. */
  function luDecompose(M) {
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
  function luSolve(f, b) {
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
  function solveLinear(M, b) {
    const f = luDecompose(M);
    return f ? luSolve(f, b) : null;
  }
  function determinant(M) {
    const f = luDecompose(M);
    if (!f) return 0;
    let d = f.sign;
    for (let i = 0; i < M.length; i++) d *= f.lu[i][i];
    return d;
  }
  /** Least squares by the normal equations (only for small unequal-support systems). */
  function leastSquares(M, b) {
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

  // ---- shared pieces ------------------------------------------------------------------------------
  function softmax(z) {
    const mx = maxOf(z);
    const e = z.map((v) => Math.exp(v - mx));
    const s = sum(e);
    return e.map((v) => v / s);
  }
  function projectSimplex(v) {
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
  function nashConv(A, B, x, y) {
    const Ay = matvec(A, y);
    const Btx = tmatvec(B, x);
    const By = matvec(B, y);
    return Math.max(maxOf(Ay) - dot(x, Ay), 0) + Math.max(maxOf(Btx) - dot(x, By), 0);
  }
  function profile(A, B, x, y, zeroSum) {
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
  function fractionString(value, maxDen = 1000, tol = 1e-9) {
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

  // ---- games --------------------------------------------------------------------------------------
  const zs = (A) => [A, A.map((r) => r.map((v) => (v === 0 ? 0 : -v)))];
  const PRESETS = {
    matching_pennies: { label: "Matching pennies", payoffs: zs([[1, -1], [-1, 1]]) },
    rps: { label: "Rock–paper–scissors", payoffs: zs([[0, -1, 1], [1, 0, -1], [-1, 1, 0]]) },
    biased_rps: { label: "Biased RPS (Nash 3/7, 3/7, 1/7)", payoffs: zs([[0, -1, 3], [1, 0, -3], [-3, 3, 0]]) },
    programme_biased_rps: {
      label: "The programme's biased RPS (B = −A)",
      payoffs: zs([[0, -0.8, 1.2], [1, 0, -1.2], [-0.9, 1.1, 0]]),
    },
    asymmetric_matching_pennies: { label: "Asymmetric matching pennies", payoffs: [[[9, 0], [0, 1]], [[0, 1], [1, 0]]] },
    battle_of_the_sexes: { label: "Battle of the sexes", payoffs: [[[3, 0], [0, 2]], [[2, 0], [0, 3]]] },
    prisoners_dilemma: { label: "Prisoner's dilemma", payoffs: [[[3, 0], [5, 1]], [[3, 5], [0, 1]]] },
    shapley: {
      label: "Shapley's game",
      payoffs: [[[0, 1, 0], [0, 0, 1], [1, 0, 0]], [[0, 0, 1], [1, 0, 0], [0, 1, 0]]],
    },
    coordination: { label: "Coordination", payoffs: [[[2, 0], [0, 1]], [[2, 0], [0, 1]]] },
    random: { label: "Random game from a seed", payoffs: null },
  };

  function mulberry32(seed) {
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function randomGame(m, n, seed, zeroSum = false) {
    const draw = mulberry32(seed);
    const A = [...Array(m)].map(() => [...Array(n)].map(() => 2 * draw() - 1));
    const B = zeroSum ? A.map((r) => r.map((v) => -v)) : [...Array(m)].map(() => [...Array(n)].map(() => 2 * draw() - 1));
    return makeGame(`random ${m}×${n} seed ${seed}` + (zeroSum ? " zero-sum" : ""), A, B);
  }
  function makeGame(name, A, B) {
    const scale = Math.max(1, ...A.map(absMax), ...B.map(absMax));
    let dev = 0;
    for (let i = 0; i < A.length; i++) for (let j = 0; j < A[0].length; j++) dev = Math.max(dev, Math.abs(A[i][j] + B[i][j]));
    return { name, A, B, m: A.length, n: A[0].length, zero_sum: dev <= 1e-12 * scale };
  }
  function gameJson(g) {
    return { name: g.name, A: g.A.map((r) => r.slice()), B: g.B.map((r) => r.slice()), m: g.m, n: g.n, zero_sum: g.zero_sum };
  }
  function checkMatrix(value, field, maxSize) {
    if (!Array.isArray(value) || value.length === 0) throw new SolverInputError(field, "must be a non-empty list of rows");
    if (value.length > maxSize) throw new SolverInputError(field, `has ${value.length} rows; at most ${maxSize} are allowed`);
    let width = null;
    value.forEach((row, i) => {
      if (!Array.isArray(row) || row.length === 0) throw new SolverInputError(field, `row ${i + 1} must be a non-empty list of numbers`);
      if (width === null) width = row.length;
      else if (row.length !== width)
        throw new SolverInputError(field, `is ragged: row ${i + 1} has ${row.length} entries, row 1 has ${width}`);
      row.forEach((v, j) => {
        if (typeof v !== "number") throw new SolverInputError(field, `entry (${i + 1}, ${j + 1}) is not a number`);
        if (!Number.isFinite(v)) throw new SolverInputError(field, `entry (${i + 1}, ${j + 1}) is not finite`);
        if (Math.abs(v) > MAX_ABS_PAYOFF) throw new SolverInputError(field, `entry (${i + 1}, ${j + 1}) exceeds 1e+06 in magnitude`);
      });
    });
    if (width > maxSize) throw new SolverInputError(field, `has ${width} columns; at most ${maxSize} are allowed`);
    return value.map((r) => r.map(Number));
  }
  function checkInt(value, field, lo, hi) {
    if (!Number.isInteger(value) || value < lo || value > hi) throw new SolverInputError(field, `must be an integer from ${lo} to ${hi}`);
    return value;
  }
  function parseGame(value, maxSize = 50) {
    if (typeof value === "string") value = { preset: value };
    if (!value || typeof value !== "object" || Array.isArray(value))
      throw new SolverInputError("game", "must be a preset name or an object with A (and B)");
    if ("preset" in value) {
      const name = value.preset;
      if (!Object.prototype.hasOwnProperty.call(PRESETS, name))
        throw new SolverInputError("game.preset", `unknown preset '${name}'; choose one of ${Object.keys(PRESETS).join(", ")}`);
      if (name === "random") {
        const m = checkInt(value.m ?? 3, "game.m", 1, maxSize);
        const n = checkInt(value.n ?? 3, "game.n", 1, maxSize);
        const seed = checkInt(value.seed ?? 1, "game.seed", 0, 2 ** 32 - 1);
        return randomGame(m, n, seed, Boolean(value.zero_sum));
      }
      const [A, B] = PRESETS[name].payoffs;
      return makeGame(name, A.map((r) => r.slice()), B.map((r) => r.slice()));
    }
    if (!("A" in value)) throw new SolverInputError("game.A", "is required (or give a preset)");
    const A = checkMatrix(value.A, "game.A", maxSize);
    const B = value.B == null ? A.map((r) => r.map((v) => -v)) : checkMatrix(value.B, "game.B", maxSize);
    if (B.length !== A.length || B[0].length !== A[0].length)
      throw new SolverInputError("game.B", `must have the same shape as A (${A.length}×${A[0].length})`);
    const name = typeof value.name === "string" ? value.name.slice(0, 80) : "custom";
    return makeGame(name, A, B);
  }

  // ---- dynamics: MMD and GDA ----------------------------------------------------------------------
  function recordStride(steps, record) {
    return Math.max(1, Math.ceil(steps / Math.max(1, record)));
  }
  function makeRecorder(A, B, steps, record, target) {
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
  function normalizedLogits(z) {
    const mx = maxOf(z);
    const zz = z.map((v) => v - mx);
    const e = zz.map(Math.exp);
    const s = sum(e);
    const ls = Math.log(s);
    return [zz.map((v) => v - ls), e.map((v) => v / s)];
  }
  function maxAbsDiff(a, b) {
    let d = 0;
    for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
    return d;
  }

  /** Normalise logits in place: z ← z − logsumexp(z), p ← softmax(z). Same arithmetic as the Python twin. */
  function normalizeInto(z, p) {
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
  const flat = (M) => Float64Array.from(M.flat());
  function matvecFlat(Mf, rows, cols, v, out) {
    for (let i = 0; i < rows; i++) {
      let acc = 0;
      const o = i * cols;
      for (let j = 0; j < cols; j++) acc += Mf[o + j] * v[j];
      out[i] = acc;
    }
  }
  function tmatvecFlat(Mf, rows, cols, v, out) {
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
  function mmdKernel(st, t0, t1) {
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
  function mmd(A, B, x0, y0, o) {
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
  function gda(A, B, x0, y0, o) {
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

  // ---- logit QRE ----------------------------------------------------------------------------------
  function qreSystem(A, B) {
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

  function newton(sys, lam, w, tol, maxIter = 60) {
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

  function qre(A, B, lam, tol = 1e-12, zeroSum = false) {
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
  function rebase(m, w) {
    const u = [0, ...w.slice(0, m - 1)], v = [0, ...w.slice(m - 1)];
    const argmax = (a) => a.reduce((best, val, i) => (val > a[best] ? i : best), 0);
    const i = argmax(u), j = argmax(v);
    const p = [...u.keys()], q = [...v.keys()];
    [p[0], p[i]] = [i, 0];
    [q[0], q[j]] = [j, 0];
    return { p, q, w: [...p.slice(1).map((a) => u[a] - u[i]), ...q.slice(1).map((b) => v[b] - v[j])] };
  }
  function qreResult(sys, lam, x, y, res, ok, its, method, zeroSum) {
    const nc = nashConv(sys.A, sys.B, x, y);
    const out = { lambda: lam, x: x.slice(), y: y.slice(), residual: res, converged: ok, newton_iterations: its, method, nashconv: nc };
    if (zeroSum) out.exploitability = nc / 2;
    return out;
  }

  function augmented(sys, x, y, lam, t) {
    const d = sys.d;
    const J = sys.Hw(x, y, lam);
    const hl = sys.Hlambda(x, y);
    const M = J.map((row, i) => [...row, hl[i]]);
    M.push(t.slice());
    void d;
    return M;
  }

  /** Principal-branch QRE path by pseudo-arclength predictor–corrector continuation (see the Python twin). */
  function tracePath(A, B, { lamMax = 100, maxPoints = 2000, tol = 1e-7, stopAt = null } = {}) {
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
  function pathEvent(sys, z0, z1, a0, a1, kind) {
    const frac = a0 !== a1 ? a0 / (a0 - a1) : 0.5;
    const zi = z0.map((v, i) => v + frac * (z1[i] - v));
    const [x, y] = sys.probs(zi.slice(0, -1));
    return { kind, lambda: zi[zi.length - 1], x, y };
  }
  function pathResult(sys, points, turning, bifurcations, status, correctorTotal) {
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

  // ---- Nash equilibria ----------------------------------------------------------------------------
  function positive(M) {
    let lo = Infinity;
    for (const r of M) for (const v of r) if (v < lo) lo = v;
    return M.map((r) => r.map((v) => v - lo + 1));
  }
  function scaleOf(A, B) {
    return Math.max(1, ...A.map(absMax), ...B.map(absMax));
  }
  function combinations(n, k) {
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
  const round9 = (v) => Math.round(v * 1e9) / 1e9;
  const keyOf = (vals) => vals.map((v) => round9(v) + 0).join(",");
  function compareKeys(a, b) {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
  }

  /** Vertices ≠ 0 of {z ≥ 0 : M z ≤ 1}; M is r×s. */
  function vertices(M, deadline) {
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
  function vertexEnumeration(A, B, timeLimit = 5) {
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

  function lemkeHowson(A, B, label = 0, maxPivots = 100000) {
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

  function solveSupport(A, B, rows, cols) {
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
  function polish(A, B, x, y, thresholds = [1e-6]) {
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
  function equilibriumJson(A, B, x, y) {
    const out = profile(A, B, x, y, false);
    out.x_frac = x.map((v) => fractionString(v));
    out.y_frac = y.map((v) => fractionString(v));
    return out;
  }
  function limitingEquilibrium(A, B, x, y) {
    const tol = 1e-9 * scaleOf(A, B);
    const [xs, ys, nc] = polish(A, B, x, y, [1e-2, 1e-3, 1e-4, 1e-6, 1e-8]);
    const out = equilibriumJson(A, B, xs, ys);
    out.exact = nc <= tol;
    return out;
  }

  // ---- the one entry point ------------------------------------------------------------------------
  const DEFAULT_LIMITS = { max_size: 12, max_steps: 100000, max_lambda: 1e6, max_path_points: 5000, max_enumeration_size: 8, time_limit: 5 };

  function num(params, key, dflt, lo, hi, loOpen = false) {
    const v = key in params ? params[key] : dflt;
    const field = "params." + key;
    if (typeof v !== "number" || !Number.isFinite(v)) throw new SolverInputError(field, "must be a finite number");
    if (v < lo || (loOpen && v === lo) || v > hi) throw new SolverInputError(field, `must be ${loOpen ? ">" : ">="} ${lo} and <= ${hi} (got ${v})`);
    return v;
  }
  function int(params, key, dflt, lo, hi) {
    const v = key in params ? params[key] : dflt;
    if (!Number.isInteger(v)) throw new SolverInputError("params." + key, "must be an integer");
    if (v < lo || v > hi) throw new SolverInputError("params." + key, `must be from ${lo} to ${hi} (got ${v})`);
    return v;
  }
  function flag(params, key, dflt = false) {
    const v = key in params ? params[key] : dflt;
    if (typeof v !== "boolean") throw new SolverInputError("params." + key, "must be true or false");
    return v;
  }
  function probabilityVector(spec, size, field, strictlyPositive = false) {
    if (!Array.isArray(spec) || spec.length !== size) throw new SolverInputError(field, `must be a list of ${size} probabilities`);
    if (spec.some((v) => typeof v !== "number")) throw new SolverInputError(field, "must contain numbers only");
    if (spec.some((v) => !Number.isFinite(v) || v < 0 || (strictlyPositive && v <= 0)))
      throw new SolverInputError(field, "entries must be finite and " + (strictlyPositive ? "positive" : "non-negative"));
    const total = sum(spec);
    if (!(Math.abs(total - 1) <= 1e-6)) throw new SolverInputError(field, `entries must sum to 1 (they sum to ${total})`);
    return spec.map((v) => v / total);
  }
  function startPoint(spec, size, field, kind) {
    if (spec == null) spec = kind;
    if (spec === "uniform") return zeros(size).map(() => 1 / size);
    if (spec === "skewed" || spec === "skewed_reverse") {
      let w = [...Array(size).keys()].map((i) => i + 1);
      if (spec === "skewed_reverse") w = w.reverse();
      const s = sum(w);
      return w.map((v) => v / s);
    }
    return probabilityVector(spec, size, field);
  }
  function starts(game, params, strictlyPositive) {
    const sx = "x0" in params ? params.x0 : "skewed";
    const sy = "y0" in params ? params.y0 : "skewed_reverse";
    const x0 = startPoint(sx, game.m, "params.x0", "uniform");
    const y0 = startPoint(sy, game.n, "params.y0", "uniform");
    if (strictlyPositive && (Math.min(...x0) <= 0 || Math.min(...y0) <= 0))
      throw new SolverInputError(Math.min(...x0) <= 0 ? "params.x0" : "params.y0", "must be strictly positive for MMD");
    return [x0, y0, { x0: sx, y0: sy }];
  }

  const RUNNERS = {
    mmd(game, p, lim) {
      const o = {
        eta: num(p, "eta", 0.1, 0, 1e3, true),
        tau: num(p, "tau", 0.1, 0, 1e3),
        steps: int(p, "steps", 1000, 1, lim.max_steps),
        record: int(p, "record", 200, 1, 2000),
        reset_every: int(p, "reset_every", 0, 0, lim.max_steps),
        tol: num(p, "tol", 0, 0, 1),
        alternating: flag(p, "alternating"),
      };
      const [x0, y0, st] = starts(game, p, true);
      o.magnet_x = p.magnet_x == null ? zeros(game.m).map(() => 1 / game.m) : probabilityVector(p.magnet_x, game.m, "params.magnet_x", true);
      o.magnet_y = p.magnet_y == null ? zeros(game.n).map(() => 1 / game.n) : probabilityVector(p.magnet_y, game.n, "params.magnet_y", true);
      o.zero_sum = game.zero_sum;
      let fixed = null;
      if (o.tau > 0 && !o.reset_every) {
        // MMD's fixed point: the logit QRE at λ = 1/τ of the game shifted by τ·log ρ.
        const lx = o.magnet_x.map(Math.log), ly = o.magnet_y.map(Math.log);
        const SA = game.A.map((row, i) => row.map((v) => v + o.tau * lx[i]));
        const SB = game.B.map((row) => row.map((v, j) => v + o.tau * ly[j]));
        fixed = qre(SA, SB, 1 / o.tau, 1e-12, game.zero_sum && p.magnet_x == null && p.magnet_y == null);
        o.target = [fixed.x, fixed.y];
      }
      const body = mmd(game.A, game.B, x0, y0, o);
      if (fixed) body.qre_target = { lambda: 1 / o.tau, x: fixed.x, y: fixed.y, residual: fixed.residual };
      const used = { eta: o.eta, tau: o.tau, steps: o.steps, alternating: o.alternating, reset_every: o.reset_every, tol: o.tol, record: o.record, magnet_x: o.magnet_x, magnet_y: o.magnet_y, ...st };
      return [body, used];
    },
    gda(game, p, lim) {
      const o = {
        eta: num(p, "eta", 0.05, 0, 1e3, true),
        steps: int(p, "steps", 1000, 1, lim.max_steps),
        record: int(p, "record", 200, 1, 2000),
        tol: num(p, "tol", 0, 0, 1),
        alternating: flag(p, "alternating"),
        zero_sum: game.zero_sum,
      };
      const [x0, y0, st] = starts(game, p, false);
      const body = gda(game.A, game.B, x0, y0, o);
      return [body, { eta: o.eta, steps: o.steps, alternating: o.alternating, tol: o.tol, record: o.record, ...st }];
    },
    qre(game, p, lim) {
      const lam = num(p, "lambda", 10, 0, lim.max_lambda);
      const tol = num(p, "tol", 1e-12, 1e-15, 1e-3);
      return [qre(game.A, game.B, lam, tol, game.zero_sum), { lambda: lam, tol }];
    },
    qre_path(game, p, lim) {
      const lamMax = num(p, "lambda_max", 100, 0, lim.max_lambda, true);
      const maxPoints = int(p, "max_points", 1000, 2, lim.max_path_points);
      return [tracePath(game.A, game.B, { lamMax, maxPoints }), { lambda_max: lamMax, max_points: maxPoints }];
    },
    nash(game, p, lim) {
      const { m, n } = game;
      let method = "method" in p ? p.method : "auto";
      if (!["auto", "enumerate", "lemke_howson"].includes(method)) throw new SolverInputError("params.method", "must be auto, enumerate or lemke_howson");
      const label = int(p, "label", 0, 0, m + n - 1);
      const timeLimit = num(p, "time_limit", lim.time_limit, 0, lim.time_limit, true);
      if (method === "auto") method = Math.max(m, n) <= lim.max_enumeration_size ? "enumerate" : "lemke_howson";
      if (method === "enumerate" && Math.max(m, n) > lim.max_enumeration_size)
        throw new SolverInputError("params.method", `vertex enumeration is limited to ${lim.max_enumeration_size} actions per player here`);
      let found, complete = null, pivots = null;
      if (method === "enumerate") {
        const r = vertexEnumeration(game.A, game.B, timeLimit);
        found = r.equilibria;
        complete = r.complete;
      } else {
        const r = lemkeHowson(game.A, game.B, label);
        const [x, y] = polish(game.A, game.B, r.x, r.y, [1e-9]);
        found = [[x, y]];
        pivots = r.pivots;
      }
      const body = { method, complete, pivots, equilibria: found.map(([x, y]) => equilibriumJson(game.A, game.B, x, y)) };
      if (game.zero_sum && found.length) {
        const [x, y] = found[0];
        const nc = nashConv(game.A, game.B, x, y);
        body.zero_sum = { method: "value of an equilibrium (in zero-sum games this is the LP value)", value: dot(x, matvec(game.A, y)), x: x.slice(), y: y.slice(), exploitability: nc / 2 };
        body.equilibria.forEach((eq) => (eq.exploitability = eq.nashconv / 2));
      }
      return [body, { method, label, time_limit: timeLimit }];
    },
  };

  function now() {
    return typeof performance !== "undefined" ? performance.now() : Date.now();
  }

  /** Validate a spec and run its solver; throws SolverInputError naming the field. */
  function solve(spec, limits) {
    const lim = Object.assign({}, DEFAULT_LIMITS, limits || {});
    if (!spec || typeof spec !== "object") throw new SolverInputError("spec", "must be a JSON object");
    const solver = spec.solver;
    if (!SOLVERS.includes(solver)) throw new SolverInputError("solver", `unknown solver '${solver}'; choose one of ${SOLVERS.join(", ")}`);
    const params = spec.params || {};
    if (typeof params !== "object" || Array.isArray(params)) throw new SolverInputError("params", "must be an object");
    const game = parseGame(spec.game, lim.max_size);
    const started = now();
    const [body, used] = RUNNERS[solver](game, params, lim);
    return Object.assign(
      { solver, game: gameJson(game), params: used, metric: "nashconv", metric_note: METRIC_NOTE },
      body,
      { elapsed_ms: now() - started },
    );
  }

  return {
    solve,
    SolverInputError,
    PRESETS,
    SOLVERS,
    DEFAULT_LIMITS,
    parseGame,
    randomGame,
    mulberry32,
    nashConv,
    fractionString,
    projectSimplex,
    mmd,
    gda,
    qre,
    tracePath,
    vertexEnumeration,
    lemkeHowson,
  };
});
