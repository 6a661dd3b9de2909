/* The game library, the seeded random-game generator shared with Python, and game validation
 * (the twin of lab_app/solvers/games.py).
 */
import { absMax } from "./core.js";

export const MAX_ABS_PAYOFF = 1e6;

export class SolverInputError extends Error {
  constructor(field, message) {
    super(field + ": " + message);
    this.field = field;
    this.detail = message;
  }
}

export const zs = (A) => [A, A.map((r) => r.map((v) => (v === 0 ? 0 : -v)))];
export const PRESETS = {
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

export function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export function randomGame(m, n, seed, zeroSum = false) {
  const draw = mulberry32(seed);
  const A = [...Array(m)].map(() => [...Array(n)].map(() => 2 * draw() - 1));
  const B = zeroSum ? A.map((r) => r.map((v) => -v)) : [...Array(m)].map(() => [...Array(n)].map(() => 2 * draw() - 1));
  return makeGame(`random ${m}×${n} seed ${seed}` + (zeroSum ? " zero-sum" : ""), A, B);
}
export function makeGame(name, A, B) {
  const scale = Math.max(1, ...A.map(absMax), ...B.map(absMax));
  let dev = 0;
  for (let i = 0; i < A.length; i++) for (let j = 0; j < A[0].length; j++) dev = Math.max(dev, Math.abs(A[i][j] + B[i][j]));
  return { name, A, B, m: A.length, n: A[0].length, zero_sum: dev <= 1e-12 * scale };
}
export function gameJson(g) {
  return { name: g.name, A: g.A.map((r) => r.slice()), B: g.B.map((r) => r.slice()), m: g.m, n: g.n, zero_sum: g.zero_sum };
}
export function checkMatrix(value, field, maxSize) {
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
export function checkInt(value, field, lo, hi) {
  if (!Number.isInteger(value) || value < lo || value > hi) throw new SolverInputError(field, `must be an integer from ${lo} to ${hi}`);
  return value;
}
// the fields each kind of game object takes (anything else is refused rather than ignored), as in games.py
const GAME_FIELDS = {
  random: ["preset", "m", "n", "seed", "zero_sum"],
  preset: ["preset"],
  matrix: ["A", "B", "name"],
};

/** A key outside `allowed` is refused naming it (`<prefix>.<key>`), never ignored, as refuse_unknown in games.py. */
export function refuseUnknown(keys, allowed, prefix, what) {
  for (const key of keys)
    if (!allowed.includes(key)) throw new SolverInputError(`${prefix}.${key}`, `is not ${what} (it takes: ${allowed.join(", ")})`);
}

export function parseGame(value, maxSize = 50) {
  if (typeof value === "string") value = { preset: value };
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw new SolverInputError("game", "must be a preset name or an object with A (and B)");
  if ("preset" in value) {
    const name = value.preset;
    if (!Object.prototype.hasOwnProperty.call(PRESETS, name))
      throw new SolverInputError("game.preset", `unknown preset '${name}'; choose one of ${Object.keys(PRESETS).join(", ")}`);
    if (name === "random") {
      refuseUnknown(Object.keys(value), GAME_FIELDS.random, "game", "a field of the random game");
      const m = checkInt(value.m ?? 3, "game.m", 1, maxSize);
      const n = checkInt(value.n ?? 3, "game.n", 1, maxSize);
      const seed = checkInt(value.seed ?? 1, "game.seed", 0, 2 ** 32 - 1);
      const zeroSum = value.zero_sum ?? false;
      if (typeof zeroSum !== "boolean") throw new SolverInputError("game.zero_sum", "must be true or false");
      return randomGame(m, n, seed, zeroSum);
    }
    refuseUnknown(Object.keys(value), GAME_FIELDS.preset, "game", `a field of the preset ${name}`);
    const [A, B] = PRESETS[name].payoffs;
    return makeGame(name, A.map((r) => r.slice()), B.map((r) => r.slice()));
  }
  if (!("A" in value)) throw new SolverInputError("game.A", "is required (or give a preset)");
  refuseUnknown(Object.keys(value), GAME_FIELDS.matrix, "game", "a field of a game given by its matrices");
  const A = checkMatrix(value.A, "game.A", maxSize);
  const B = value.B == null ? A.map((r) => r.map((v) => -v)) : checkMatrix(value.B, "game.B", maxSize);
  if (B.length !== A.length || B[0].length !== A[0].length)
    throw new SolverInputError("game.B", `must have the same shape as A (${A.length}×${A[0].length})`);
  const name = value.name ?? "custom";
  if (typeof name !== "string") throw new SolverInputError("game.name", "must be a string");
  return makeGame(name.slice(0, 80), A, B);
}
