/* The depth-dial page: controls, streaming output shaded by iterations, live figures and the quality chart.
   Generation runs in this tab (static/js/eqlm-runtime.js on onnxruntime-web, the noise start's normals from
   static/js/eqlm-noise.js), in the model's own tokens (its manifest's tokenizer: bytes, or GPT-2 BPE, which the runtime
   loads with the model); nothing is sent to the server. The model's files download once, with progress, and are then
   read from the browser's Cache Storage; a model this device cannot hold is generated on the server instead (/v1,
   streamed: demo-server.js), and the page says so. The depth range and the controls a model takes are its
   manifest's: an explicit transformer's depth is fixed at its layer count, with no tol, halting rule or start. */
import { EqlmRuntime } from "./eqlm-runtime.js";
import { serverTokens } from "./demo-server.js";
import * as noise from "./eqlm-noise.js";
import * as EqlmPlotFocus from "./plot-focus.js";

const config = JSON.parse(document.getElementById("demo-config").textContent);
const $ = (id) => document.getElementById(id);
const form = $("dial-form");
const els = {
  depth: $("depth"), depthValue: $("depth-value"), tol: $("tol"), tolValue: $("tol-value"),
  temperature: $("temperature"), temperatureValue: $("temperature-value"), topP: $("top-p"),
  samplingMode: $("sampling-mode"), greedy: $("greedy"), sampled: $("sampled"),
  seed: $("seed"), maxTokens: $("max-tokens"), prompt: $("prompt"), generate: $("generate"), stop: $("stop"),
  status: $("runtime-status"), output: $("output"), tps: $("fig-tps"), iters: $("fig-iters"),
  residual: $("fig-residual"), threads: $("fig-threads"), swatches: $("legend-swatches"),
  controlsNote: $("controls-note"), download: $("download"), downloadBar: $("download-progress"),
  downloadText: $("download-text"), fallback: $("server-fallback"), fallbackWhy: $("server-fallback-why"),
  serverKey: $("server-key"),
};
const model = config.model || {};
// The server renders the card's range on the slider; once loaded, the runtime's manifest is the word on it.
let maxDepth = Number(model.maxDepth) || Number(els.depth.max);
let defaultDepth = Number(model.defaultDepth) || Number(els.depth.value);
// comparison: the convergence view's runs of the same request from the other starts ({abort, done}), which share
// the runtime: a new run stops them first (static/js/demo-convergence.js)
// server: true when this device cannot hold the model and Generate streams from /v1 instead; loading: what the
// start-up took ({precision, fromCache, fetchMs, sessionsMs, readyMs, ...}), download: the progress last shown
const state = { runtime: null, running: false, abort: null, lastRun: null, modelId: model.id || null, comparison: null,
                server: false, loading: null, download: null };
window.eqlmDemo = state; // read by the browser tests and the browser benchmark

function tolerance() { return Math.pow(10, Number(els.tol.value)); }
function mode() { return form.querySelector('input[name="mode"]:checked').value; }
function start() { return form.querySelector('input[name="start"]:checked').value; }
function halt() { return form.querySelector('input[name="halt"]:checked').value; }
function setStatus(text) { els.status.textContent = text; }
/* The dial's final start-up state, for anything that waits on it (the browser tests): "true" once the model is loaded
   and warmed up, "false" when it cannot be (no WebAssembly, not installed, a failed load). */
function markReady(ready) { document.body.dataset.dialReady = String(ready); }
/* A residual as the figures print it: an explicit transformer reports none (NaN). */
function residualText(value) { return Number.isFinite(value) ? value.toExponential(2) : "n/a"; }

// The accent mixed in from 8% (one iteration) to 45% (the cap): at 60% the dark theme's text fell to a contrast of
// 4.15 on the page and 3.87 on a surface, under WCAG AA's 4.5; at 45% it is 5.9 and 5.3 (light theme: 7.7 and 7.4).
function shade(iterations, cap) {
  const share = cap > 1 ? (iterations - 1) / (cap - 1) : 1;
  const percent = Math.round(8 + 37 * Math.min(1, Math.max(0, share)));
  return `color-mix(in srgb, var(--accent) ${percent}%, transparent)`;
}

function drawLegend() {
  const cap = Number(els.depth.value);
  const values = [...new Set([1, Math.ceil(cap / 3), Math.ceil((2 * cap) / 3), cap])].filter((v) => v >= 1);
  els.swatches.replaceChildren(...values.map((v) => {
    const span = document.createElement("span");
    span.className = "swatch";
    span.style.background = shade(v, cap);
    span.textContent = String(v);
    span.title = `${v} iteration${v === 1 ? "" : "s"}`;
    return span;
  }));
}

// The default decoding is sampling (it reads better than greedy's loops); greedy is one click away.
const SAMPLED = { temperature: els.temperature.value, topP: els.topP.value };
function topP() { return Math.max(0.05, Math.min(1, Number(els.topP.value) || 1)); }
/* What the model's tokens are called (its manifest's tokenizer, as the runtime reads it): bytes, or BPE tokens. */
function tokenWord() {
  const manifest = (state.runtime && state.runtime.manifest) || {};
  return manifest.tokenizer === "gpt2" ? "token" : "byte";
}
function describeSampling() {
  const t = Number(els.temperature.value);
  const greedy = t <= 0;
  const word = tokenWord();
  els.samplingMode.textContent = greedy
    ? `Greedy: the most likely ${word} every time (temperature 0; top_p does not apply).`
    : `Sampling at temperature ${t.toFixed(2)} with top_p ${topP().toFixed(2)} (each ${word} drawn from the smallest set holding ${Math.round(100 * topP())}% of the probability).`;
  els.topP.disabled = greedy;
  els.greedy.hidden = greedy;
  els.sampled.hidden = !greedy;
}
function setTemperature(value, p) {
  els.temperature.value = value;
  if (p !== undefined) els.topP.value = p;
  els.temperature.dispatchEvent(new Event("input", { bubbles: true }));
}
els.greedy.addEventListener("click", () => setTemperature(0));
els.sampled.addEventListener("click", () => setTemperature(SAMPLED.temperature, SAMPLED.topP));

// --- the logarithmic depth slider ---------------------------------------------------------------------------
// #depth holds the depth the page sends; the slider is a view of it on a log scale from its min to its max, so
// each doubling takes the same width. Its marks are the powers of two in range and the max, none crowding another.
const slider = $("depth-slider");
const marks = document.querySelector(".dial-marks");
const STEPS = 1000;
function depthRange() {
  const low = Math.max(1, Number(els.depth.min) || 1);
  return { low, high: Math.max(low, Number(els.depth.max) || low) };
}
function depthToPosition(depth) {
  const { low, high } = depthRange();
  return high > low ? Math.round((STEPS * Math.log(Math.max(low, depth) / low)) / Math.log(high / low)) : 0;
}
function positionToDepth(position) {
  const { low, high } = depthRange();
  return Math.min(high, Math.max(low, Math.round(low * Math.pow(high / low, Number(position) / STEPS))));
}
function drawMarks() {
  if (!marks) return;
  const { low, high } = depthRange();
  const values = [];
  for (let v = 1; v < high; v *= 2) if (v >= low) values.push(v);
  values.push(high);
  let last = -Infinity;
  const spans = [];
  for (const value of values) {
    const left = (100 * depthToPosition(value)) / STEPS;
    // A label closer than 6% to the one before it would collide with it: the max keeps its place, the other goes.
    if (left - last < 6) {
      if (value !== high) continue;
      spans.pop();
    }
    const span = document.createElement("span");
    span.dataset.depth = String(value);
    span.textContent = String(value);
    span.style.left = `${left}%`;
    spans.push(span);
    last = left;
  }
  // The end labels sit inside the track (left-aligned at its start, right-aligned at its end): never clipped.
  if (spans.length) spans[0].classList.add("mark-start");
  if (spans.length > 1) spans[spans.length - 1].classList.add("mark-end");
  marks.replaceChildren(...(high > low ? spans : []));
}
function clampDepth() {
  // The number field stops at the model's range, as the slider does (a range input clamps itself; this one not).
  if (els.depth.value === "") return;
  const { low, high } = depthRange();
  const depth = Math.round(Number(els.depth.value));
  const clamped = Number.isFinite(depth) ? Math.min(high, Math.max(low, depth)) : low;
  if (String(clamped) !== els.depth.value) els.depth.value = String(clamped);
}
function syncSlider() {
  clampDepth();
  if (!slider) return;
  slider.value = String(depthToPosition(Number(els.depth.value)));
  slider.disabled = els.depth.disabled;
  slider.setAttribute("aria-valuetext", `depth ${els.depth.value}`);
}
if (slider) {
  slider.addEventListener("input", (event) => {
    event.stopPropagation();
    els.depth.value = String(positionToDepth(slider.value));
    els.depth.dispatchEvent(new Event("input", { bubbles: true }));
  });
  slider.addEventListener("change", (event) => event.stopPropagation());
  // From the keyboard an arrow moves the depth by one and Page Up/Down doubles or halves it (a step of the log
  // scale's 1000 would often not move the depth at all).
  slider.addEventListener("keydown", (event) => {
    const depth = Number(els.depth.value);
    const next = { ArrowLeft: depth - 1, ArrowDown: depth - 1, ArrowRight: depth + 1, ArrowUp: depth + 1,
                   PageDown: Math.floor(depth / 2), PageUp: depth * 2, Home: -Infinity, End: Infinity }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    const { low, high } = depthRange();
    els.depth.value = String(Math.min(high, Math.max(low, next)));
    els.depth.dispatchEvent(new Event("input", { bubbles: true }));
  });
}

function syncControls() {
  els.depthValue.textContent = els.depth.value;
  syncSlider();
  els.tol.disabled = mode() !== "adaptive";
  for (const radio of form.querySelectorAll('input[name="halt"]')) radio.disabled = mode() !== "adaptive";
  els.tolValue.textContent = tolerance().toPrecision(2);
  els.temperatureValue.textContent = Number(els.temperature.value).toFixed(2);
  describeSampling();
  drawLegend();
  drawQuality();
}

// --- the quality-by-depth chart ---------------------------------------------------------------------------
function drawQuality() {
  const target = $("quality-plot");
  if (!target || !window.Plotly || !config.quality || !config.quality.length) return;
  const styles = getComputedStyle(document.documentElement);
  const fg = styles.getPropertyValue("--fg").trim();
  const grid = styles.getPropertyValue("--border").trim();
  const rows = config.quality;
  const traces = [];
  const bpb = rows.filter((r) => r.held_out_bits_per_byte !== null);
  if (bpb.length) {
    traces.push({
      x: bpb.map((r) => r.depth), y: bpb.map((r) => r.held_out_bits_per_byte), name: "held-out bits/byte",
      mode: "lines+markers", line: { color: "#0072B2" }, marker: { symbol: "circle", size: 7 },
      hovertemplate: "depth %{x}: %{y:.3f} bits/byte<extra></extra>",
    });
  }
  const blimp = rows.filter((r) => r.blimp_accuracy !== null);
  if (blimp.length) {
    traces.push({
      x: blimp.map((r) => r.depth), y: blimp.map((r) => r.blimp_accuracy), name: "BLiMP accuracy", yaxis: "y2",
      mode: "lines+markers", line: { color: "#E69F00", dash: "dash" }, marker: { symbol: "square", size: 7 },
      hovertemplate: "depth %{x}: BLiMP %{y:.3f}<extra></extra>",
    });
  }
  const depth = Number(els.depth.value);
  // Depth 1 (about 10 bits/byte) would squash the curve (about 2.3): the axis covers depth 4 on, the rest is marked.
  const Focus = EqlmPlotFocus;
  const focused = Focus && bpb.length
    ? Focus.focus([{ name: "held-out bits/byte", x: bpb.map((r) => r.depth), y: bpb.map((r) => r.held_out_bits_per_byte) }], { from: 4 })
    : { range: null, clipped: false };
  if (focused.clipped) traces.push(Focus.offScaleTrace(focused, { color: fg }));
  const note = $("quality-note");
  if (note) note.textContent = focused.clipped ? Focus.note(focused, "depth") : "";
  const layout = {
    margin: { l: 55, r: blimp.length ? 55 : 15, t: 22, b: 45 }, height: 260,
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: fg },
    // one tick per depth up to 16; past that (the dial reaches the model's max_depth) let Plotly space them
    xaxis: { title: { text: "depth (iterations)" }, dtick: Math.max(depth, ...rows.map((r) => r.depth)) > 16 ? undefined : 1,
             gridcolor: grid },
    yaxis: { title: { text: "held-out bits/byte" }, gridcolor: grid, automargin: true, ...(focused.range ? { range: focused.range } : {}) },
    yaxis2: { title: { text: "BLiMP" }, overlaying: "y", side: "right", showgrid: false },
    legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" }, showlegend: traces.filter((t) => t.showlegend !== false).length > 1,
    shapes: [{ type: "line", xref: "x", yref: "paper", x0: depth, x1: depth, y0: 0, y1: 1,
               line: { color: fg, width: 1, dash: "dot" } }],
    annotations: [{ x: depth, yref: "paper", y: 1, text: "dial", showarrow: false, yanchor: "bottom", font: { size: 11 } }],
  };
  window.Plotly.react(target, traces, layout, { displayModeBar: false, responsive: true });
}

// --- output -----------------------------------------------------------------------------------------------
function resetOutput(prompt) {
  const lead = document.createElement("span");
  lead.className = "prompt-text";
  lead.textContent = prompt;
  els.output.replaceChildren(lead);
  els.output.dataset.state = "running";
  els.tps.textContent = els.iters.textContent = els.residual.textContent = "—";
}

function appendToken(event, cap) {
  if (!event.text) return; // inside a UTF-8 sequence: its bytes show up with the token that completes it
  const span = document.createElement("span");
  span.className = "tok";
  span.textContent = event.text;
  span.style.background = shade(event.iterations, cap);
  span.title = `${event.iterations} iteration${event.iterations === 1 ? "" : "s"}, residual ${residualText(event.residual)}`;
  els.output.append(span);
  span.eqlmResiduals = event.residuals || null; // its residual after each iteration (the convergence panel)
  els.output.dispatchEvent(new CustomEvent("eqlm:token", { detail: { span, event } }));
}

/* The server's tokens as the runtime's events: each shaded at the requested depth (the stream reports no iterations). */
async function* serverEvents(request, signal) {
  const key = els.serverKey ? els.serverKey.value.trim() : "";
  for await (const event of serverTokens(config.completionsUrl, { model: state.modelId, ...request }, { key, signal })) {
    yield { ...event, iterations: request.depth, residual: NaN, residuals: null };
  }
}

async function stopComparison() {
  const running = state.comparison;
  if (!running) return;
  running.abort.abort();
  await running.done;
}

async function generate(evt) {
  evt.preventDefault();
  if ((!state.runtime && !state.server) || state.running) return;
  state.running = true;
  els.generate.disabled = true;
  await stopComparison();
  const minDepth = state.runtime ? state.runtime.minDepth : Math.max(1, Number(els.depth.min) || 1);
  const depth = Math.max(minDepth, Math.min(maxDepth, Math.round(Number(els.depth.value)) || defaultDepth));
  const adaptive = mode() === "adaptive" && takes().tol;
  const request = {
    prompt: els.prompt.value,
    maxTokens: Math.max(1, Math.min(512, Number(els.maxTokens.value) || 64)),
    depth,
    tol: adaptive ? tolerance() : null,
    halt: adaptive ? halt() : "residual",
    start: takes().starts.length ? start() : null, // a model without starts (explicit) starts where it must
    temperature: Number(els.temperature.value),
    topP: topP(),
    seed: Number(els.seed.value) || 0,
  };
  state.abort = new AbortController();
  els.stop.disabled = false;
  resetOutput(request.prompt);
  setStatus(state.server ? "Generating on the server…" : "Generating in this tab…");
  const started = performance.now();
  let count = 0, iterSum = 0, residual = null, text = "", firstTokenMs = null, lastPaint = performance.now();
  try {
    const events = state.server ? serverEvents(request, state.abort.signal)
      : state.runtime.generate({ ...request, signal: state.abort.signal });
    for await (const event of events) {
      if (firstTokenMs === null) firstTokenMs = performance.now() - started;
      count += event.tokens || 1;
      iterSum += event.iterations * (event.tokens || 1);
      residual = event.residual;
      text += event.text;
      appendToken(event, depth);
      const seconds = (performance.now() - started) / 1000;
      els.tps.textContent = (count / seconds).toFixed(1);
      els.iters.textContent = (iterSum / count).toFixed(2);
      els.residual.textContent = residualText(residual);
      // onnxruntime resolves in microtasks: give the browser a chance to paint the stream every few frames.
      if (performance.now() - lastPaint > 50) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        lastPaint = performance.now();
      }
    }
    const seconds = (performance.now() - started) / 1000;
    state.lastRun = { request, text, tokens: count, seconds, tokensPerSecond: count / seconds,
                      meanIterations: count ? iterSum / count : 0, finalResidual: residual, firstTokenMs,
                      where: state.server ? "server" : "browser" };
    els.output.dataset.state = "done";
    els.output.dispatchEvent(new CustomEvent("eqlm:done"));
    setStatus(`Done: ${count} tokens in ${seconds.toFixed(2)} s.`);
  } catch (error) {
    els.output.dataset.state = "error";
    setStatus(`Generation failed: ${error.message || error}`);
    state.lastRun = { request, error: String(error) };
  } finally {
    state.running = false;
    els.generate.disabled = false;
    els.stop.disabled = true;
  }
}

// --- start-up ---------------------------------------------------------------------------------------------
/* What the loaded model takes, from its manifest (eqlm/manifest.py controls_of): starts, halting rules, a tol. */
function takes() {
  const manifest = (state.runtime && state.runtime.manifest) || {};
  const halts = manifest.halts ?? ["residual", "kl"];
  return { starts: manifest.starts ?? ["zero", "warm", "noise"], halts, tol: halts.length > 0, note: manifest.controls_note || "" };
}

/* The slider's range and default from the loaded model's manifest (runtime.minDepth, maxDepth, defaultDepth), and the
   controls it does not take disabled, with the manifest's note: an explicit transformer's depth is its layer count. */
function applyControls(runtime) {
  const rendered = Number(els.depth.value) === defaultDepth;
  maxDepth = runtime.maxDepth;
  defaultDepth = runtime.defaultDepth;
  els.depth.min = String(runtime.minDepth);
  els.depth.max = String(maxDepth);
  if (rendered || Number(els.depth.value) > maxDepth || Number(els.depth.value) < runtime.minDepth) {
    els.depth.value = String(Math.min(defaultDepth, maxDepth));
  }
  els.depth.disabled = runtime.minDepth === maxDepth;
  drawMarks();
  const taken = takes();
  for (const radio of form.querySelectorAll('input[name="start"]')) radio.disabled = !taken.starts.includes(radio.value);
  const adaptiveRadio = form.querySelector('input[name="mode"][value="adaptive"]');
  adaptiveRadio.disabled = !taken.tol;
  if (!taken.tol) form.querySelector('input[name="mode"][value="fixed"]').checked = true;
  els.controlsNote.textContent = taken.note;
  els.controlsNote.hidden = !taken.note;
  syncControls();
}

async function startUp() {
  const picker = $("model");
  if (picker) picker.addEventListener("change", () => picker.form.submit()); // each model has its own page state
  drawMarks();
  syncSlider();
  form.addEventListener("input", syncControls);
  form.addEventListener("change", syncControls);
  form.addEventListener("submit", generate);
  els.stop.addEventListener("click", () => state.abort && state.abort.abort());
  for (const button of form.querySelectorAll("button.example")) {
    button.addEventListener("click", () => { els.prompt.value = button.dataset.prompt; els.prompt.focus(); });
  }
  document.addEventListener("eqlm:themechange", drawQuality);
  syncControls();

  if (typeof WebAssembly !== "object" || typeof WebAssembly.instantiate !== "function" || !window.ort) {
    $("wasm-missing").hidden = false;
    setStatus("WebAssembly is unavailable in this browser.");
    markReady(false);
    return;
  }
  if (!config.manifestUrl) {
    setStatus(`The model ${model.id || ""} is not installed on this server.`);
    markReady(false);
    return;
  }
  // Two wasm threads need cross-origin isolation; ?threads=1 forces one (to compare, or on a busy machine).
  const asked = Number(new URLSearchParams(window.location.search).get("threads"));
  const threads = window.crossOriginIsolated ? (asked === 1 ? 1 : 2) : 1;
  els.threads.textContent = `${threads} (${window.crossOriginIsolated ? "isolated" : "not isolated"})`;
  const started = performance.now();
  try {
    state.runtime = await EqlmRuntime.load(config.manifestUrl, {
      ortPaths: { mjs: config.ortMjs, wasm: config.ortWasm }, threads, noise, onProgress: showDownload,
      memoryLimit: Number(config.memoryLimit) || 0,
    });
    els.download.hidden = true;
    applyControls(state.runtime);
    // One tiny silent run so that the reader's first generation does not pay for compiling the kernels.
    for await (const _ of state.runtime.generate({ prompt: "a", maxTokens: 2, depth: state.runtime.minDepth })) { /* warm-up */ }
    state.loading = { ...state.runtime.loading, readyMs: performance.now() - started };
    els.generate.disabled = false;
    const cached = state.loading.fromCache.length === state.loading.files.length ? ", from this browser's cache" : "";
    const refused = state.loading.notCached.length ? " This browser's storage could not keep all of it: the next visit downloads it again." : "";
    setStatus(`Model loaded (${state.runtime.describe()}${cached}). Ready.${refused}`);
    markReady(true);
  } catch (error) {
    els.download.hidden = true;
    if (error.name === "CannotHold") offerServer(error);
    else setStatus(`The model could not be loaded: ${error.message || error}`);
    markReady(false);
  }
}

function megabytes(bytes) { return `${(bytes / 1e6).toFixed(1)} MB`; }

/* The download's progress: bytes so far of the total (the manifest's sizes), and how much came from the cache. */
function showDownload(progress) {
  state.download = { ...progress, steps: ((state.download && state.download.steps) || 0) + 1 };
  els.download.hidden = false;
  if (progress.total) {
    els.downloadBar.max = progress.total;
    els.downloadBar.value = Math.min(progress.loaded, progress.total);
  } else {
    els.downloadBar.removeAttribute("value"); // size unknown: an indeterminate bar
  }
  const of = progress.total ? ` of ${megabytes(progress.total)}` : "";
  const cached = progress.cached ? ` (${megabytes(progress.cached)} from this browser's cache)` : "";
  els.downloadText.textContent = `${megabytes(progress.loaded)}${of}${cached}`;
}

/* This device cannot hold the model: say so, and let Generate stream from the server's API instead. */
function offerServer(error) {
  state.server = true;
  state.loading = { cannotHold: error.message, neededBytes: error.needed, limitBytes: error.limit };
  els.fallbackWhy.textContent = error.message;
  els.fallback.hidden = false;
  els.generate.disabled = false;
  els.generate.textContent = "Generate on the server";
  setStatus("This device cannot hold the model: Generate runs on the server.");
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", startUp);
else startUp();
