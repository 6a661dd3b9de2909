/* The lab page: form → spec → solve (in the browser, or on the server) → LabRender; the state lives in the URL. */
import * as S from "./solvers.js";
import * as R from "./render.js";

window.LabSolvers = S; // for the console, and the browser test's timing of the module
const form = document.getElementById("lab-form");
const statusLine = document.getElementById("lab-status");
const errorBox = document.getElementById("lab-error");
const resultsBody = document.getElementById("results-body");
const limits = JSON.parse(document.getElementById("lab-limits").textContent);
const BROWSER_MAX = limits.browser_max_size;
let compare = null; // {spec, result}
let lastRun = null; // {spec, result}
let timer = null;
let generation = 0;
let urlNote = ""; // what the link asked for that this page has no option for, said once beside the first result

const $ = (id) => document.getElementById(id);
const csrf = () => (form.querySelector("input[name=csrfmiddlewaretoken]") || {}).value || "";

// ---- form <-> URL ------------------------------------------------------------------------------
const controls = () => [...form.elements].filter((c) => c.name && c.name !== "csrfmiddlewaretoken" && c.tagName !== "BUTTON");
function writeUrl() {
  const q = new URLSearchParams();
  controls().forEach((c) => {
    if (c.closest("[hidden]")) return;
    if (c.type === "checkbox") {
      if (c.checked) q.set(c.name, "1");
    } else if (c.value !== "") q.set(c.name, c.tagName === "TEXTAREA" ? c.value.trim().split(/\n+/).join(";") : c.value);
  });
  if (compare) q.set("compare", JSON.stringify(compare.spec));
  history.replaceState(null, "", `${location.pathname}?${q}`);
}
function readUrl() {
  const q = new URLSearchParams(location.search);
  const unknown = [];
  controls().forEach((c) => {
    if (!q.has(c.name)) {
      if (c.type === "checkbox" && [...q.keys()].length) c.checked = false;
      return;
    }
    const v = q.get(c.name);
    if (c.tagName === "SELECT" && ![...c.options].some((o) => o.value === v)) {
      // An unknown choice keeps the default instead of blanking the select.
      const label = form.querySelector(`label[for="${c.id}"]`);
      const chosen = c.options[c.selectedIndex];
      unknown.push(`no ${(label ? label.textContent : c.name).toLowerCase()} "${v}" (showing ${chosen ? chosen.textContent : "the default"})`);
      return;
    }
    if (c.type === "checkbox") c.checked = v === "1";
    else if (c.tagName === "TEXTAREA") c.value = v.split(";").join("\n");
    else c.value = v;
  });
  if (q.has("compare")) {
    try {
      const spec = JSON.parse(q.get("compare"));
      compare = { spec, result: S.solve(spec, { max_size: BROWSER_MAX }) };
    } catch (err) {
      compare = null;
    }
  }
  urlNote = unknown.length ? `The link asked for an unknown choice: ${unknown.join("; ")}. ` : "";
}

// ---- form -> spec --------------------------------------------------------------------------------
class FieldError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}
function parseMatrix(text, field) {
  const rows = text.trim().split(/\n+/).map((line) => line.trim()).filter(Boolean);
  return rows.map((line, i) =>
    line.split(/[\s,;\t]+/).filter(Boolean).map((tok, j) => {
      const v = Number(tok);
      if (tok === "" || Number.isNaN(v)) throw new FieldError(field, `${field}: entry (${i + 1}, ${j + 1}) "${tok}" is not a number`);
      return v;
    }),
  );
}
function parseVector(text, field) {
  if (!text.trim()) return null;
  return text.split(/[\s,;]+/).filter(Boolean).map((tok) => {
    const v = Number(tok);
    if (Number.isNaN(v)) throw new FieldError(field, `${field}: "${tok}" is not a number`);
    return v;
  });
}
const num = (id) => (form.elements[id].value === "" ? NaN : Number(form.elements[id].value));
function readSpec() {
  const preset = $("game-preset").value;
  let game;
  if (preset === "custom") {
    game = { A: parseMatrix($("game-A").value, "game.A") };
    if ($("game-B").value.trim()) game.B = parseMatrix($("game-B").value, "game.B");
  } else if (preset === "random") {
    game = { preset, m: num("m"), n: num("n"), seed: num("seed") };
    if ($("game-zero-sum").checked) game.zero_sum = true;
  } else game = preset;
  const solver = $("solver").value;
  const params = {};
  if (solver === "mmd" || solver === "gda") {
    params.eta = num("eta");
    params.steps = num("steps");
    params.alternating = $("p-alternating").checked;
    const start = $("p-start").value;
    params.x0 = start === "uniform" ? "uniform" : "skewed";
    params.y0 = start === "uniform" ? "uniform" : "skewed_reverse";
  }
  if (solver === "mmd") {
    params.tau = num("tau");
    params.reset_every = num("reset_every");
    const mx = parseVector($("p-magnet-x").value, "params.magnet_x");
    const my = parseVector($("p-magnet-y").value, "params.magnet_y");
    if (mx) params.magnet_x = mx;
    if (my) params.magnet_y = my;
  }
  if (solver === "qre") params.lambda = num("lambda");
  if (solver === "qre_path") params.lambda_max = num("lambda_max");
  if (solver === "nash") params.method = $("p-method").value;
  return { game, solver, params };
}

// ---- visibility of conditional fields ------------------------------------------------------------
function syncVisibility() {
  const preset = $("game-preset").value;
  const solver = $("solver").value;
  document.querySelectorAll("[data-when-game]").forEach((n) => (n.hidden = n.dataset.whenGame !== preset));
  document.querySelectorAll("[data-when-solver]").forEach((n) => (n.hidden = !n.dataset.whenSolver.split(" ").includes(solver)));
}

// ---- running -------------------------------------------------------------------------------------
function showError(message, field) {
  errorBox.hidden = false;
  errorBox.textContent = message;
  statusLine.textContent = "";
  form.querySelectorAll("[aria-invalid]").forEach((n) => n.removeAttribute("aria-invalid"));
  const map = { "game.A": "game-A", "game.B": "game-B", "game.m": "game-m", "game.n": "game-n", "game.seed": "game-seed" };
  const id = map[field] || (field && field.startsWith("params.") ? field.slice(7) : null);
  const control = id && (document.getElementById(id) || form.elements[id]);
  if (control && control.setAttribute) control.setAttribute("aria-invalid", "true");
}
function clearError() {
  errorBox.hidden = true;
  errorBox.textContent = "";
  form.querySelectorAll("[aria-invalid]").forEach((n) => n.removeAttribute("aria-invalid"));
}
function gameSize(spec) {
  if (typeof spec.game === "string") return 3;
  if (spec.game.A) return Math.max(spec.game.A.length, ...spec.game.A.map((r) => r.length));
  return Math.max(spec.game.m || 0, spec.game.n || 0);
}
async function solveOnServer(spec) {
  const response = await fetch(form.dataset.solveEndpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
    body: JSON.stringify(spec),
    credentials: "same-origin",
  });
  const body = await response.json();
  if (!response.ok) throw new FieldError(body.error && body.error.param, (body.error && body.error.message) || `HTTP ${response.status}`);
  return body;
}
async function run() {
  const mine = ++generation;
  writeUrl();
  let spec;
  try {
    spec = readSpec();
  } catch (err) {
    showError(err.message, err.field);
    return;
  }
  const size = gameSize(spec);
  const onServer = $("where").value === "server" || size > BROWSER_MAX;
  statusLine.textContent = onServer ? "Solving on the server…" : "Solving in the browser…";
  let result;
  const t0 = performance.now();
  try {
    result = onServer ? await solveOnServer(spec) : S.solve(spec, { max_size: BROWSER_MAX });
  } catch (err) {
    if (mine === generation) showError(err.field ? err.message : `Error: ${err.message}`, err.field);
    return;
  }
  if (mine !== generation) return;
  clearError();
  lastRun = { spec, result };
  const wall = performance.now() - t0;
  const where = onServer ? (size > BROWSER_MAX && $("where").value !== "server" ? `on the server (larger than ${BROWSER_MAX}×${BROWSER_MAX})` : "on the server") : "in this browser";
  statusLine.textContent = `${urlNote}Computed ${where}: solver time ${R.fmt(result.elapsed_ms)} ms (${R.fmt(wall)} ms including drawing data).`;
  urlNote = "";
  R.render(resultsBody, result, compare ? compare.result : null);
  $("matrix-view").replaceChildren(...R.matrixTables(result.game));
  resultsBody.dataset.ready = "1";
}
function scheduleRun() {
  syncVisibility();
  clearTimeout(timer);
  timer = setTimeout(run, 250);
}

async function submitJob() {
  let spec;
  try {
    spec = readSpec();
  } catch (err) {
    showError(err.message, err.field);
    return;
  }
  statusLine.textContent = "Queueing a server job…";
  const response = await fetch(form.dataset.jobsEndpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
    body: JSON.stringify(spec),
    credentials: "same-origin",
  });
  const body = await response.json();
  if (!response.ok) {
    showError(body.error.message, body.error.param);
    return;
  }
  location.assign(body.url);
}

function updatePinned() {
  $("unpin-button").hidden = !compare;
  $("pinned-label").textContent = compare ? `Pinned: ${compare.result.solver} on ${compare.result.game.name}` : "";
}

form.addEventListener("input", scheduleRun);
form.addEventListener("change", scheduleRun);
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  syncVisibility();
  run();
});
$("job-button").addEventListener("click", submitJob);
$("pin-button").addEventListener("click", () => {
  if (!lastRun) return;
  compare = lastRun;
  updatePinned();
  run();
});
$("unpin-button").addEventListener("click", () => {
  compare = null;
  updatePinned();
  run();
});
$("copy-link").addEventListener("click", async () => {
  writeUrl();
  try {
    await navigator.clipboard.writeText(location.href);
    statusLine.textContent = "Link copied to the clipboard.";
  } catch (err) {
    statusLine.textContent = `Link to this view: ${location.href}`;
  }
});

// Plot colours come from the theme's CSS variables: redraw when the reader switches theme.
document.addEventListener("eqlm:themechange", () => {
  if (lastRun) R.render(resultsBody, lastRun.result, compare ? compare.result : null);
});

readUrl();
syncVisibility();
updatePinned();
run();
