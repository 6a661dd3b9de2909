/* The demo EqLM in the browser: onnxruntime-web (wasm) over the exported embed/step/head graphs.

   A line-by-line mirror of eqlm/runtime.py (process, DecodeCache, _tokens, choose_token), so greedy text
   at a given depth is the same here as from the server's /v1/ API:
   - per-iteration K/V cache: iteration slot i of a new position attends to the K/V that earlier positions
     produced at iteration i, so decoding one token costs `depth` step calls over one position;
   - adaptive halting: a position stops after the iteration whose residual < tol; its K/V for the remaining
     slots come from its frozen state (one step call with an empty past);
   - halting by KL (`halt: "kl"`, fixed_point.kl_below): a position stops after the iteration whose
     KL(p_i || p_(i-1)) of the head's next-byte distributions (float64 log-softmax) is below tol; p_0 is the start's;
   - starts (limits.STARTS): "zero"; "warm": a generated token starts from the previous position's final state
     instead of 0, and every position's K/V in every slot are then those of its final state (`settle`), so a new
     position iterates against its context's solved states from its first iteration on; "noise": every position,
     the prompt's included, starts at N(0, 1) from eqlm-noise.js (the manifest's `noise_rng`), seeded by `seed`;
   - Anderson acceleration per position (memory 5, float64 algebra, float32 results) as fixed_point.NumpyAnderson,
     after ANDERSON_PICARD_FIRST Picard iterations; an Anderson solve always settles (decoder.process): a secant
     method needs the map to stay put, and the per-iteration cache changes it at every iteration;
   - the depth range is the manifest's (`default_depth`, `max_depth`), as limits.model_depths reads it;
   - an explicit transformer (model_class "ExplicitLM", eqlm/export_explicit.py): slot i runs the graph of layer i
     (`manifest.layers`), the start is the embedding, its depth is its layer count, and it takes no tol, other
     solver, start or halting rule (refusedControls, eqlm/manifest.py's twin); each session is fed only the inputs
     it declares (a layer graph takes no `inj`), and no residual is reported (NaN).
   Text is encoded and decoded in the model's own tokens (tokenizer.js getTokenizer(tokenizerName(manifest)): UTF-8
   bytes, or GPT-2's BPE for an imported programme model), as generation.Generator does.
   Sampling (temperature > 0) uses its own seeded generator, so sampled text differs from the server's. */
import * as EqlmTokenizer from "./tokenizer.js";
import * as Files from "./eqlm-files.js";

const STARTS = ["zero", "warm", "noise"];
const HALTS = ["residual", "kl"];
const SOLVERS = ["picard", "anderson"];
const ANDERSON_PICARD_FIRST = 6; // limits.ANDERSON_PICARD_FIRST
const EXPLICIT_CLASS = "ExplicitLM";
const CONTROLS = ["depth", "tol", "solver", "start", "halt", "warm_start"];
const EXPLICIT_WHY = {
  tol: "an explicit transformer applies each of its layers once: nothing iterates to a fixed point, so no position halts and there is no tolerance",
  solver: "an explicit transformer applies each of its layers once, in order: there is no fixed point to solve (its one solver is 'picard', the plain pass)",
  start: "an explicit transformer starts from the embedding of its input: there is no start state to choose",
  warm_start: "an explicit transformer starts from the embedding of its input: there is no warm start",
  halt: "an explicit transformer does not iterate: there is no halting rule",
};

function mb(bytes) { return `${Math.round(bytes / 1e6).toLocaleString("en")} MB`; }

function isExplicit(manifest) { return manifest.model_class === EXPLICIT_CLASS; }

/* The graphs a runtime loads (eqlm/manifest.py graph_roles): embed, `step` or every layer in order, head. */
function graphRoles(manifest) {
  return ["embed", ...(isExplicit(manifest) ? manifest.layers : ["step"]), "head"];
}

/* [control, why] for each control in `given` (those a request set) the model does not take, in CONTROLS order:
   eqlm/manifest.py refused_controls, word for word for an explicit transformer. */
function refusedControls(manifest, given) {
  const low = Number(manifest.min_depth ?? 1);
  const high = Number(manifest.max_depth);
  const fixed = low === high ? low : null;
  const lists = { solver: manifest.solvers ?? SOLVERS, start: manifest.starts ?? STARTS, halt: manifest.halts ?? HALTS };
  const refused = [];
  for (const control of CONTROLS) {
    const value = given[control];
    if (value === undefined || value === null) continue;
    let bad;
    if (control === "depth") bad = Number(value) < low || (fixed !== null && Number(value) !== fixed);
    else if (control === "tol") bad = !lists.halt.length;
    else if (control === "warm_start") bad = !lists.start.length || (Boolean(value) && !lists.start.includes("warm"));
    else bad = !lists[control].includes(value);
    if (!bad) continue;
    let why;
    if (isExplicit(manifest)) {
      why = control === "depth"
        ? `an explicit transformer's depth is its layer count (${fixed}); depth ${value} does not exist for it`
        : EXPLICIT_WHY[control];
    } else {
      why = `this model does not take ${control} ${value}`;
    }
    refused.push([control, why]);
  }
  return refused;
}

/* numpy compares a float32 array with a Python float in float32 (NEP 50): do the same. */
const f32 = Math.fround;

class DecodeCache {
  constructor(model, slots) {
    this.model = model;
    this.slots = slots;
    this.length = 0;
    this.slotSize = model.nHeads * model.maxPositions * model.headDim;
    this.k = Array.from({ length: slots }, () => new Float32Array(this.slotSize));
    this.v = Array.from({ length: slots }, () => new Float32Array(this.slotSize));
  }

  /* [1, H, P, Dh] tensors of the first `length` positions of one slot. */
  past(slot) {
    const { nHeads, maxPositions, headDim } = this.model;
    const p = this.length;
    const k = new Float32Array(nHeads * p * headDim);
    const v = new Float32Array(nHeads * p * headDim);
    for (let h = 0; h < nHeads; h++) {
      const from = h * maxPositions * headDim;
      k.set(this.k[slot].subarray(from, from + p * headDim), h * p * headDim);
      v.set(this.v[slot].subarray(from, from + p * headDim), h * p * headDim);
    }
    const dims = [1, nHeads, p, headDim];
    return [new this.model.ort.Tensor("float32", k, dims), new this.model.ort.Tensor("float32", v, dims)];
  }

  /* k, v: [1, H, T, Dh] data written at positions length .. length + T - 1. */
  put(slot, k, v, t) {
    const { nHeads, maxPositions, headDim } = this.model;
    for (let h = 0; h < nHeads; h++) {
      const to = h * maxPositions * headDim + this.length * headDim;
      this.k[slot].set(k.subarray(h * t * headDim, (h + 1) * t * headDim), to);
      this.v[slot].set(v.subarray(h * t * headDim, (h + 1) * t * headDim), to);
    }
  }
}

/* Solve A w = b (n x n, float64) by Gaussian elimination with partial pivoting (LAPACK gesv's algorithm). */
function solve(a, b, n) {
  const m = a.map((row) => row.slice());
  const x = b.slice();
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r][c]) > Math.abs(m[pivot][c])) pivot = r;
    if (pivot !== c) {
      [m[c], m[pivot]] = [m[pivot], m[c]];
      [x[c], x[pivot]] = [x[pivot], x[c]];
    }
    for (let r = c + 1; r < n; r++) {
      const factor = m[r][c] / m[c][c];
      if (factor === 0) continue;
      for (let j = c; j < n; j++) m[r][j] -= factor * m[c][j];
      x[r] -= factor * x[c];
    }
  }
  for (let r = n - 1; r >= 0; r--) {
    let sum = x[r];
    for (let j = r + 1; j < n; j++) sum -= m[r][j] * x[j];
    x[r] = sum / m[r][r];
  }
  return x;
}

/* Per-position Anderson acceleration over [T, D] float32 states (fixed_point.NumpyAnderson). */
class Anderson {
  constructor(t, d, m = 5, reg = 1e-6, picardFirst = 0) {
    Object.assign(this, { t, d, m, reg, picardLeft: picardFirst, xs: [], gs: [] });
  }

  update(x, fx) {
    if (this.picardLeft > 0) {
      this.picardLeft -= 1;
      return fx;
    }
    const { t, d } = this;
    const g = new Float32Array(x.length);
    for (let i = 0; i < x.length; i++) g[i] = fx[i] - x[i];
    this.xs = [...this.xs, x].slice(-this.m);
    this.gs = [...this.gs, g].slice(-this.m);
    const n = this.gs.length;
    if (n === 1) return fx;
    const out = new Float32Array(x.length);
    for (let p = 0; p < t; p++) {
      const base = p * d;
      const gram = Array.from({ length: n }, () => new Array(n).fill(0));
      for (let a = 0; a < n; a++) {
        for (let b = a; b < n; b++) {
          let s = 0;
          const ga = this.gs[a], gb = this.gs[b];
          for (let j = 0; j < d; j++) s += ga[base + j] * gb[base + j];
          gram[a][b] = gram[b][a] = s;
        }
      }
      let diag = 0;
      for (let a = 0; a < n; a++) diag += gram[a][a];
      const scale = diag / n + 1e-12;
      for (let a = 0; a < n; a++) gram[a][a] += this.reg * scale;
      const w = solve(gram, new Array(n).fill(1), n);
      const total = w.reduce((s, value) => s + value, 0);
      const alpha = w.map((value) => value / total);
      for (let j = 0; j < d; j++) {
        let s = 0;
        for (let a = 0; a < n; a++) s += f32(this.xs[a][base + j] + this.gs[a][base + j]) * alpha[a];
        out[base + j] = s;
      }
    }
    return out;
  }
}

class Mulberry32 {
  constructor(seed) { this.state = (seed >>> 0) || 0x9e3779b9; }
  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

/* Row-wise log-softmax in float64 of [t, V] float32 logits (fixed_point.NumpyOps.log_probs). */
function logProbs(logits, t, vocab) {
  const out = new Float64Array(t * vocab);
  for (let i = 0; i < t; i++) {
    const base = i * vocab;
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) max = Math.max(max, logits[base + j]);
    let sum = 0;
    for (let j = 0; j < vocab; j++) sum += Math.exp(logits[base + j] - max);
    const log = Math.log(sum);
    for (let j = 0; j < vocab; j++) out[base + j] = logits[base + j] - max - log;
  }
  return out;
}

/* KL(p || q) of row i of two [t, V] log-probability arrays (fixed_point.NumpyOps.kl). */
function klRow(logP, logQ, i, vocab) {
  let sum = 0;
  for (let j = i * vocab; j < (i + 1) * vocab; j++) sum += Math.exp(logP[j]) * (logP[j] - logQ[j]);
  return sum;
}

/* Greedy argmax at temperature 0 (lowest id on ties), else temperature + nucleus sampling. */
function chooseToken(logits, temperature, topP, rng) {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  if (temperature <= 0) return best;
  const max = logits[best] / temperature;
  let probs = Array.from(logits, (value) => Math.exp(value / temperature - max));
  const sum = probs.reduce((s, value) => s + value, 0);
  probs = probs.map((value) => value / sum);
  if (topP < 1) {
    const order = probs.map((_, i) => i).sort((a, b) => probs[b] - probs[a] || a - b);
    const kept = new Array(probs.length).fill(0);
    let cumulative = 0;
    for (const i of order) {
      kept[i] = probs[i];
      cumulative += probs[i];
      if (cumulative >= topP) break;
    }
    const keptSum = kept.reduce((s, value) => s + value, 0);
    probs = kept.map((value) => value / keptSum);
  }
  let u = rng.next();
  for (let i = 0; i < probs.length; i++) {
    u -= probs[i];
    if (u < 0) return i;
  }
  return best;
}

class EqlmRuntime {
  /* Load a model: its manifest, then its graphs and external data (eqlm-files.js: int8 when the export has it, with
     download progress, from Cache Storage when they are there), one session per graph. Throws CannotHold when the
     device's limit is below the model's estimate, or when a session cannot be created (out of memory, most often).
     onProgress({loaded, total, cached, file}); memoryLimit: the page's device limit in bytes (0: the device's own);
     precision: "fp32" or "int8" to force one. The runtime's `loading` says what it took. */
  static async load(manifestUrl, { ortPaths, threads = 1, ortLib, noise = null, onProgress, memoryLimit = 0,
                                   precision: wanted = null } = {}) {
    const ort = ortLib || globalThis.ort;
    if (!ort) throw new Error("onnxruntime-web is not loaded");
    if (ortPaths) {
      const absolute = (url) => new URL(url, globalThis.location.href).href;
      ort.env.wasm.wasmPaths = { mjs: absolute(ortPaths.mjs), wasm: absolute(ortPaths.wasm) };
    }
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.proxy = false;
    ort.env.logLevel = "error"; // onnxruntime's start-up notices (e.g. an unknown CPU vendor) are not errors
    const started = globalThis.performance.now();
    const response = await fetch(manifestUrl, { credentials: "same-origin" });
    if (!response.ok) throw new Error(`manifest: HTTP ${response.status}`);
    const manifest = await response.json();
    const manifestHref = new URL(manifestUrl, globalThis.location ? globalThis.location.href : undefined).href;
    const roles = graphRoles(manifest);
    const precision = Files.choosePrecision(manifest, roles, wanted);
    const files = Files.filesOf(manifest, roles, precision);
    const size = Files.sizeOf(manifest, files);
    const limit = Files.deviceLimit(memoryLimit);
    if (size.memory !== null && size.memory > limit.bytes) {
      throw new Files.CannotHold(`it needs about ${mb(size.memory)} of memory, and this device allows ${mb(limit.bytes)} (${limit.from})`,
                                 { needed: size.memory, limit: limit.bytes });
    }
    /* The portal serves each file under a URL carrying its sha256 (manifest.graph_urls), so the files always belong
       to the manifest just read; a plain folder of files (tests, bench) is read beside the manifest. */
    const digests = manifest.graph_sha256 || {};
    for (const file of files) {
      file.url = new URL((manifest.graph_urls && manifest.graph_urls[file.key]) || file.name, manifestHref).href;
      file.sha256 = digests[file.key] || null;
    }
    const [tokenizer, fetched] = await Promise.all([
      EqlmTokenizer.getTokenizer(EqlmTokenizer.tokenizerName(manifest)),
      Files.fetchFiles(files, { total: size.download, onProgress }),
    ]);
    await Files.forgetReplaced(manifest.model_id, files.map((file) => file.sha256).filter(Boolean));
    const downloaded = globalThis.performance.now();
    const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
    const sessions = {};
    try {
      for (const role of roles) { // one at a time: each copy into WebAssembly memory is freed before the next
        const key = Files.graphKey(role, precision);
        /* A graph may read external data (a tied embedding and head stored once): fetched once, handed to each. */
        const extra = files.filter((file) => file.key !== key && file.roles.includes(key))
          .map((file) => ({ path: file.name, data: fetched.bytes[file.key] }));
        sessions[role] = await ort.InferenceSession.create(fetched.bytes[key], extra.length ? { ...options, externalData: extra } : options);
      }
    } catch (error) {
      await Promise.all(Object.values(sessions).map((session) => session.release()));
      throw new Files.CannotHold(`this browser could not create its sessions (${error.message || error})`, { cause: error });
    }
    const runtime = new EqlmRuntime(ort, manifest, sessions, threads, noise);
    runtime.tokenizer = tokenizer;
    runtime.precision = precision;
    runtime.loading = {
      precision, files: files.map((file) => file.key), fromCache: fetched.fromCache, notCached: fetched.notCached,
      downloadBytes: size.download,
      memoryBytes: size.memory, limitBytes: limit.bytes, fetchMs: downloaded - started,
      sessionsMs: globalThis.performance.now() - downloaded,
    };
    return runtime;
  }

  /* sessions: {role: InferenceSession} for every role of graphRoles(manifest).
     noise: the eqlm-noise.js module (NOISE_RNG, startStates), needed by the noise start only. */
  constructor(ort, manifest, sessions, threads, noise = null) {
    this.ort = ort;
    this.manifest = manifest;
    this.sessions = sessions;
    this.threads = threads;
    this.modelId = manifest.model_id || "eqlm-demo";
    this.dModel = Number(manifest.d_model);
    this.nHeads = Number(manifest.n_heads);
    this.headDim = Number(manifest.head_dim);
    this.maxPositions = Number(manifest.max_positions);
    this.vocabSize = Number(manifest.vocab_size);
    // The depth range is the export's (eqlm/export.py writes both, as limits.model_depths checks them): not repeated here.
    if (manifest.max_depth == null || manifest.default_depth == null) {
      throw new Error("the model's manifest declares no depth range (max_depth, default_depth): export it again");
    }
    this.maxDepth = Number(manifest.max_depth);
    this.defaultDepth = Number(manifest.default_depth);
    this.minDepth = Number(manifest.min_depth ?? 1);
    this.explicit = isExplicit(manifest);
    this.stepSessions = this.explicit ? manifest.layers.map((role) => sessions[role]) : null;
    this.noise = noise;
    this.emptyPrompt = manifest.empty_prompt ?? "\n";
    this.precision = "fp32"; // the graphs it runs (`load` sets it from the manifest)
    this.tokenizer = null; // the model's (tokenizer.js), loaded by `load` or on the first generation
  }

  /* The model's tokenizer (tokenizer.js getTokenizer of the manifest's name). */
  async modelTokenizer() {
    if (!this.tokenizer) this.tokenizer = await EqlmTokenizer.getTokenizer(EqlmTokenizer.tokenizerName(this.manifest));
    return this.tokenizer;
  }

  describe() {
    const params = this.manifest.num_params ? `${Number(this.manifest.num_params).toLocaleString("en")} parameters, ` : "";
    const precision = this.precision ? `${this.precision}, ` : "";
    return `${this.modelId}: ${params}d=${this.dModel}, ${precision}${this.threads} thread${this.threads === 1 ? "" : "s"}`;
  }

  emptyKv() {
    const dims = [1, this.nHeads, 0, this.headDim];
    return new this.ort.Tensor("float32", new Float32Array(0), dims);
  }

  async embed(ids, start) {
    const t = ids.length;
    const input = new this.ort.Tensor("int64", BigInt64Array.from(ids, (id) => BigInt(id)), [1, t]);
    const positions = new this.ort.Tensor("int64", BigInt64Array.from(ids, (_, i) => BigInt(start + i)), [1, t]);
    const out = await this.sessions.embed.run({ input_ids: input, positions });
    return out.inj.data;
  }

  /* One iteration (an EqLM's step) or, for an explicit transformer, layer `slot`. */
  async step(z, inj, t, pastK, pastV, slot = 0) {
    const dims = [1, t, this.dModel];
    const session = this.explicit ? this.stepSessions[slot] : this.sessions.step;
    const feed = {
      z: new this.ort.Tensor("float32", z, dims),
      inj: new this.ort.Tensor("float32", inj, dims),
      past_k: pastK,
      past_v: pastV,
    };
    const out = await session.run(Object.fromEntries(session.inputNames.map((name) => [name, feed[name]])));
    return [out.z_next.data, out.k.data, out.v.data, out.residual.data];
  }

  /* Logits [1, t, V] of t states (one by default). */
  async head(z, t = 1) {
    const out = await this.sessions.head.run({ z: new this.ort.Tensor("float32", z, [1, t, this.dModel]) });
    return out.logits.data;
  }

  /* Run T new positions after the cached ones and fill the cache (decoder.process); with tol, `halt` names the
     rule: "residual" (float32 compare, as numpy does) or "kl" (float64, one head call per iteration). */
  async process(cache, ids, depth, tol, solver, z0 = null, settle = false, halt = "residual") {
    settle = settle || solver === "anderson"; // Anderson iterates against the context's solved states
    const t = ids.length;
    const d = this.dModel;
    const p = cache.length;
    const inj = await this.embed(ids, p);
    // the start: given, or zero (an EqLM), or the embedding (an explicit transformer)
    let z = z0 ? Float32Array.from(z0) : this.explicit ? Float32Array.from(inj) : new Float32Array(t * d);
    const active = new Array(t).fill(true);
    const iterations = new Array(t).fill(0);
    const residual = new Array(t).fill(Infinity);
    const history = Array.from({ length: t }, () => []); // each position's residual at each of its iterations
    const anderson = solver === "anderson" ? new Anderson(t, d, 5, 1e-6, ANDERSON_PICARD_FIRST) : null;
    const adaptive = tol !== null && tol !== undefined;
    const tol32 = adaptive && halt !== "kl" ? f32(tol) : null;
    const byKl = adaptive && halt === "kl";
    let previous = byKl ? logProbs(await this.head(z, t), t, this.vocabSize) : null;
    let done = 0;
    for (let slot = 0; slot < depth; slot++) {
      const [pastK, pastV] = cache.past(slot);
      const [fz, k, v, r] = await this.step(z, inj, t, pastK, pastV, slot);
      if (!settle) cache.put(slot, k, v, t); // a settled solve writes its final K/V into every slot at the end
      const next = anderson ? anderson.update(z, fz) : fz;
      const merged = new Float32Array(t * d);
      for (let i = 0; i < t; i++) {
        const src = active[i] ? next : z;
        merged.set(src.subarray(i * d, (i + 1) * d), i * d);
        if (active[i]) {
          residual[i] = r[i];
          iterations[i] += 1;
          history[i].push(r[i]);
        }
      }
      const moved = active.slice(); // the positions this iteration updated
      z = merged;
      done = slot + 1;
      if (tol32 !== null) {
        for (let i = 0; i < t; i++) if (r[i] < tol32) active[i] = false;
      } else if (byKl) {
        const current = logProbs(await this.head(z, t), t, this.vocabSize);
        for (let i = 0; i < t; i++) if (moved[i] && klRow(current, previous, i, this.vocabSize) < tol) active[i] = false;
        previous = current;
      }
      if (adaptive && !active.some(Boolean)) break;
    }
    if (settle || done < cache.slots) {
      const [, k, v] = await this.step(z, inj, t, this.emptyKv(), this.emptyKv());
      for (let slot = settle ? 0 : done; slot < cache.slots; slot++) cache.put(slot, k, v, t);
    }
    cache.length += t;
    if (this.explicit) residual.fill(NaN); // a layer's relative update is no fixed-point residual
    return { z, iterations, residual, history };
  }

  /* The start of `positions` positions from position `first` ([positions × D]), or null for z = 0. */
  noiseStart(seed, first, positions) {
    const noise = this.noise;
    if (!noise) throw new Error("the noise start needs eqlm-noise.js");
    if (this.manifest.noise_rng && this.manifest.noise_rng !== noise.NOISE_RNG) {
      throw new Error(`this model's noise is ${this.manifest.noise_rng}, not ${noise.NOISE_RNG}`);
    }
    return noise.startStates(seed, first, positions, this.dModel);
  }

  /* Token events {tokenId, text, iterations, residual, residuals, z} (generation.Generator._tokens); `residuals`
     is the residual after each iteration of the position whose logits chose the token (length = iterations), `z`
     that position's final state. The first event also carries `promptStates`, every prompt position's [T × D].
     `start` is one of STARTS ("zero" by default; `warmStart: true` is "warm", its older spelling). */
  async *generate({ prompt, maxTokens = 64, depth = null, tol = null, warmStart = false, start = null,
                    halt = "residual", solver = "picard", temperature = 0, topP = 1, seed = 0, signal = null }) {
    const tokenizer = await this.modelTokenizer();
    // what the model does not take (eqlm/manifest.py requested_controls: defaults are the model's own)
    start = start || (warmStart ? "warm" : "zero");
    const given = { depth, tol, solver: solver !== "picard" ? solver : null, start: start !== "zero" ? start : null,
                    halt: halt !== "residual" ? halt : null, warm_start: warmStart ? true : null };
    const refused = refusedControls(this.manifest, given);
    if (refused.length) throw new Error(`${refused[0][0]}=${given[refused[0][0]]} is refused: ${refused[0][1]}`);
    const adaptive = tol !== null && tol !== undefined;
    const cap = adaptive ? Number(depth || this.maxDepth) : Number(depth || this.defaultDepth);
    if (!(cap >= 1 && cap <= this.maxDepth)) throw new Error(`depth must be between 1 and ${this.maxDepth}`);
    if (!STARTS.includes(start)) throw new Error(`start must be one of ${STARTS.join(", ")}`);
    if (warmStart && start !== "warm") throw new Error(`warmStart conflicts with start ${start}`);
    if (!HALTS.includes(halt)) throw new Error(`halt must be one of ${HALTS.join(", ")}`);
    const warm = start === "warm";
    const noiseSeed = Number(seed) || 0;
    const noiseAt = (first, positions) => (start === "noise" ? this.noiseStart(noiseSeed, first, positions) : null);
    let ids = tokenizer.encode(prompt);
    if (!ids.length) ids = tokenizer.encode(this.emptyPrompt);
    ids = maxTokens > 0 ? ids.slice(-(this.maxPositions - 1)) : ids.slice(-this.maxPositions);
    const rng = new Mulberry32(seed);
    const cache = new DecodeCache(this, cap);
    const d = this.dModel;
    let state = await this.process(cache, ids, cap, tol, solver, noiseAt(0, ids.length), warm, halt);
    let promptStates = state.z;
    let t = ids.length;
    let lastZ = state.z.slice((t - 1) * d, t * d);
    let lastIter = state.iterations[t - 1];
    let lastRes = state.residual[t - 1];
    let lastHistory = state.history[t - 1];
    const decoder = tokenizer.incrementalDecoder();
    for (let n = 0; n < maxTokens; n++) {
      if (signal && signal.aborted) return;
      const logits = await this.head(lastZ);
      const token = chooseToken(logits, temperature, topP, rng);
      yield { tokenId: token, text: decoder.push(token), iterations: lastIter, residual: lastRes, residuals: lastHistory,
              z: lastZ, ...(promptStates ? { promptStates } : {}) };
      promptStates = null;
      if (n === maxTokens - 1) break;
      if (cache.length >= this.maxPositions) return;
      const z0 = warm ? lastZ : noiseAt(cache.length, 1);
      state = await this.process(cache, [token], cap, tol, solver, z0, warm, halt);
      t = 1;
      lastZ = state.z;
      lastIter = state.iterations[0];
      lastRes = state.residual[0];
      lastHistory = state.history[0];
    }
  }
}

export { EqlmRuntime, DecodeCache, Files, chooseToken, graphRoles, refusedControls, STARTS, HALTS };
