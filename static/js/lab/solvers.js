/* Matrix-game solvers, dependency-free: the JS twin of lab_app/solvers (same algorithms, same JSON).
 * Native ES modules named like the Python files: solvers/core.js, games.js, dynamics.js, nash.js, qre.js;
 * this one is the package's __init__: `solve(spec)` validates a spec and runs its solver.
 * Conventions: payoffs A (row) and B (column), m×n; x, y on simplices; both players ascend their own payoff.
 */
import { METRIC_NOTE, zeros, matvec, dot, sum, nashConv, fractionString, projectSimplex } from "./solvers/core.js";
import { SolverInputError, gameJson, parseGame, PRESETS, randomGame, mulberry32, refuseUnknown } from "./solvers/games.js";
import { mmd, gda } from "./solvers/dynamics.js";
import { vertexEnumeration, lemkeHowson, polish, equilibriumJson } from "./solvers/nash.js";
import { qre, tracePath } from "./solvers/qre.js";

const SOLVERS = ["mmd", "gda", "qre", "qre_path", "nash"];

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

// the parameters each solver takes: a key outside its list is refused rather than silently ignored (as in Python)
const PARAMETERS = {
  mmd: ["eta", "tau", "steps", "record", "reset_every", "tol", "alternating", "x0", "y0", "magnet_x", "magnet_y"],
  gda: ["eta", "steps", "record", "tol", "alternating", "x0", "y0"],
  qre: ["lambda", "tol"],
  qre_path: ["lambda_max", "max_points"],
  nash: ["method", "label", "time_limit"],
};

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
  refuseUnknown(Object.keys(params), PARAMETERS[solver], "params", `a parameter of ${solver}`);
  const game = parseGame(spec.game, lim.max_size);
  const started = now();
  const [body, used] = RUNNERS[solver](game, params, lim);
  return Object.assign(
    { solver, game: gameJson(game), params: used, metric: "nashconv", metric_note: METRIC_NOTE },
    body,
    { elapsed_ms: now() - started },
  );
}

export { solve, SOLVERS, DEFAULT_LIMITS, SolverInputError, PRESETS, parseGame, randomGame, mulberry32, nashConv, fractionString, projectSimplex, mmd, gda, qre, tracePath, vertexEnumeration, lemkeHowson };
