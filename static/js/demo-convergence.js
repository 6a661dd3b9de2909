/* The dial's convergence panel: the selected model's stored figures by depth (bits/byte, residual median and p95,
   share converged at the current tolerance), the residual-by-iteration curve of the token under focus, from
   the run just made (each token span carries its event's `residuals`, see eqlm-runtime.js), and that run made
   again greedily from zero, from noise and warm, side by side (greedy agreement and state cosine with the zero
   start, iterations per token: computed here from the three runs). Plotly draws; the tables under the charts hold
   the same numbers. */
import * as EqlmPlotFocus from "./plot-focus.js";

// A log axis labelled at powers of ten only (never "8 9 1 2 3 ... 10 2 3"); under a decade, plotly's own ticks.
const LOG = { type: "log", dtick: 1, exponentformat: "power" };
const logAxis = (range) => (range && range[1] - range[0] < 1 ? { type: "log" } : LOG);

const $ = (id) => document.getElementById(id);
const panel = $("convergence");

/* Everything below needs the panel; a page without it loads nothing else. */
function start() {
  const dataNode = $("convergence-data");
  const figures = dataNode ? JSON.parse(dataNode.textContent) || {} : {};
  const solvers = Object.keys(figures.solvers || {});
  const COLORS = { picard: "#0072B2", anderson: "#D55E00" }; // Okabe-Ito: colour-blind safe
  const DASH = { picard: "solid", anderson: "dash" };
  const SYMBOL = { picard: "circle", anderson: "square" };
  const output = $("output");

  function dial() {
    const depth = Number(($("depth") || {}).value || 8);
    const tolInput = $("tol");
    const tol = tolInput ? Math.pow(10, Number(tolInput.value)) : 0.01;
    return { depth, tol };
  }

  /* The stored tolerance nearest (on a log scale) to the slider's. */
  function nearestTolerance(tol) {
    const keys = Object.keys(((figures.solvers || {})[solvers[0]] || {}).converged || {});
    let best = null;
    for (const key of keys) {
      if (best === null || Math.abs(Math.log10(Number(key)) - Math.log10(tol)) <
          Math.abs(Math.log10(Number(best)) - Math.log10(tol))) best = key;
    }
    return best;
  }

  function theme() {
    const styles = getComputedStyle(document.documentElement);
    return { fg: styles.getPropertyValue("--fg").trim(), grid: styles.getPropertyValue("--border").trim() };
  }

  function layout(yTitle, extra = {}) {
    const { fg, grid } = theme();
    const depth = dial().depth;
    return {
      margin: { l: 60, r: 12, t: 12, b: 45 }, height: 250,
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: fg },
      xaxis: { title: { text: "depth (iterations)" }, gridcolor: grid, automargin: true, range: figures.solvers ? [0.5, maxDepth() + 0.5] : undefined },
      yaxis: { title: { text: yTitle }, gridcolor: grid, automargin: true, ...(extra.yaxis || {}) },
      legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" }, showlegend: true,
      shapes: [{ type: "line", xref: "x", yref: "paper", x0: depth, x1: depth, y0: 0, y1: 1,
                 line: { color: fg, width: 1, dash: "dot" } }, ...(extra.shapes || [])],
    };
  }

  function maxDepth() {
    return Math.max(...solvers.map((s) => Math.max(...figures.solvers[s].depth)));
  }

  function plot(id, traces, lay) {
    const target = $(id);
    if (!target || !window.Plotly) return;
    window.Plotly.react(target, traces, lay, { displayModeBar: false, responsive: true });
  }

  function line(solver, y, name, hover, extra = {}) {
    const series = figures.solvers[solver];
    return {
      x: series.depth, y, name, mode: "lines+markers", hovertemplate: hover,
      line: { color: COLORS[solver] || "#009E73", dash: DASH[solver] || "dot", width: 2 },
      marker: { symbol: SYMBOL[solver] || "diamond", size: 4 }, ...extra,
    };
  }

  /* Traces plus the off-scale markers, the y range and a caption note: the first depths (16.5 bits/byte, residual
     1e7 at depth 1) sit orders of magnitude off the rest, so the axis covers `from` on and marks the others. */
  function focused(traces, from, log, noteId) {
    const Focus = EqlmPlotFocus;
    const note = $(noteId);
    if (!Focus) return { traces, yaxis: log ? LOG : {} };
    const result = Focus.focus(traces.map((t) => ({ name: t.name, x: t.x, y: t.y })), { from, log });
    if (note) note.textContent = Focus.note(result, "depth");
    const yaxis = { ...(log ? logAxis(result.range) : {}), ...(result.range ? { range: result.range } : {}) };
    return { traces: result.clipped ? [...traces, Focus.offScaleTrace(result, { log, color: theme().fg })] : traces, yaxis };
  }

  function drawStored() {
    if (!solvers.length) return;
    const { tol } = dial();
    const key = nearestTolerance(tol);
    const bpb = focused(solvers.map((s) => line(s, figures.solvers[s].heldout_bits_per_byte, s,
      "depth %{x}: %{y:.3f} bits/byte<extra>" + s + "</extra>")), 4, false, "cv-bpb-note");
    plot("cv-bpb-plot", bpb.traces, layout("bits/byte", { yaxis: bpb.yaxis }));
    const residual = [];
    for (const s of solvers) {
      residual.push(line(s, figures.solvers[s].residual_median, `${s} median`, "depth %{x}: median %{y:.3g}<extra></extra>"));
      residual.push(line(s, figures.solvers[s].residual_p95, `${s} p95`, "depth %{x}: p95 %{y:.3g}<extra></extra>",
        { line: { color: COLORS[s], dash: "dot", width: 1 }, marker: { symbol: "triangle-up", size: 4 } }));
    }
    const { fg } = theme();
    const res = focused(residual, 2, true, "cv-residual-note");
    plot("cv-residual-plot", res.traces, layout("relative residual (log)", {
      yaxis: res.yaxis,
      shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: tol, y1: tol, line: { color: fg, width: 1, dash: "dash" } }],
    }));
    if (key) {
      plot("cv-converged-plot", solvers.map((s) => line(s, figures.solvers[s].converged[key], s,
        "depth %{x}: %{y:.1%}<extra>" + s + "</extra>")), layout("share of positions", { yaxis: { range: [0, 1.02], tickformat: ".0%" } }));
    }
  }

  function percent(value) {
    return value === null || value === undefined ? "—" : `${(100 * value).toFixed(1)}%`;
  }

  function updateReadout() {
    const { depth, tol } = dial();
    const key = nearestTolerance(tol);
    const set = (id, text) => { const node = $(id); if (node) node.textContent = text; };
    set("cv-depth", String(depth));
    set("cv-tol", key || tol.toPrecision(2));
    set("cv-tol-caption", key || tol.toPrecision(2));
    for (const node of panel.querySelectorAll(".cv-tol-text")) node.textContent = key || tol.toPrecision(2);
    if (!key) return;
    const at = (s) => {
      const series = figures.solvers[s];
      const i = series.depth.indexOf(depth);
      return i < 0 ? null : series.converged[key][i];
    };
    set("cv-share", percent(at("picard") ?? at(solvers[0])));
    if (solvers.includes("anderson")) set("cv-share-anderson", percent(at("anderson")));
    const table = $("cv-converged-table");
    if (table) {
      const rows = table.tBodies[0].rows;
      const depths = figures.solvers[solvers[0]].depth;
      for (let r = 0; r < rows.length; r++) {
        solvers.forEach((s, c) => {
          const series = figures.solvers[s];
          const i = series.depth.indexOf(depths[r]);
          rows[r].cells[c + 1].textContent = percent(i < 0 ? null : series.converged[key][i]);
        });
      }
    }
  }

  // --- the token under focus ---------------------------------------------------------------------------------
  function tokens() { return output ? Array.from(output.querySelectorAll(".tok")) : []; }

  function showToken(span) {
    const residuals = span && span.eqlmResiduals;
    if (!residuals || !residuals.length) return;
    for (const other of tokens()) other.classList.toggle("tok-focus", other === span);
    const run = (window.eqlmDemo || {}).lastRun || {};
    const tol = run.request && run.request.tol;
    const iterations = residuals.map((_, i) => i + 1);
    const { fg, grid } = theme();
    const shapes = tol ? [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: tol, y1: tol, line: { color: fg, width: 1, dash: "dash" } }] : [];
    const target = $("cv-focus-plot");
    target.hidden = false;
    if (window.Plotly) {
      const Focus = EqlmPlotFocus;
      const trace = {
        x: iterations, y: residuals, mode: "lines+markers", name: "residual",
        line: { color: COLORS.picard, width: 2 }, marker: { size: 5 },
        hovertemplate: "iteration %{x}: %{y:.3g}<extra></extra>",
      };
      // Iteration 1's residual (about 1e7) would dominate the log axis: cover iteration 2 on and mark it.
      const result = Focus && residuals.length > 2 ? Focus.focus([trace], { from: 2, log: true }) : { range: null, clipped: false };
      const traces = result.clipped ? [trace, Focus.offScaleTrace(result, { log: true, xName: "iteration", color: fg })] : [trace];
      window.Plotly.react(target, traces, {
        margin: { l: 60, r: 12, t: 12, b: 45 }, height: 230, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
        font: { color: fg }, showlegend: false, shapes,
        xaxis: { title: { text: "iteration" }, gridcolor: grid, rangemode: "tozero" },
        yaxis: { title: { text: "relative residual (log)" }, ...logAxis(result.range), gridcolor: grid, ...(result.range ? { range: result.range } : {}) },
      }, { displayModeBar: false, responsive: true });
    }
    const table = $("cv-focus-table");
    $("cv-focus-table-wrap").hidden = false; // the table and its focusable region appear once a run fills them
    const label = JSON.stringify(span.textContent);
    $("cv-focus-caption").textContent = `Residual by iteration of token ${label} (${residuals.length} iteration${residuals.length === 1 ? "" : "s"}${tol ? `, tolerance ${tol.toPrecision(2)}` : ""})`;
    table.tBodies[0].replaceChildren(...residuals.map((value, i) => {
      const row = document.createElement("tr");
      const a = document.createElement("td");
      const b = document.createElement("td");
      a.textContent = String(i + 1);
      b.className = "num";
      b.textContent = Number(value).toExponential(3);
      row.append(a, b);
      return row;
    }));
    panel.dataset.focusIterations = String(residuals.length);
  }

  function focusToken(span) {
    for (const other of tokens()) other.tabIndex = other === span ? 0 : -1;
    span.focus();
    showToken(span);
  }

  if (output) {
    output.addEventListener("eqlm:token", (event) => {
      const span = event.detail && event.detail.span;
      if (!span) return;
      span.tabIndex = tokens().length === 1 ? 0 : -1; // one tab stop: the arrow keys move between tokens
      span.setAttribute("aria-label", `${span.textContent}: ${span.title}`);
    });
    output.addEventListener("eqlm:done", () => {
      const last = tokens().filter((t) => t.eqlmResiduals).pop();
      if (last) showToken(last);
      compareStarts();
    });
    output.addEventListener("mouseover", (event) => {
      const span = event.target.closest && event.target.closest(".tok");
      if (span) showToken(span);
    });
    output.addEventListener("focusin", (event) => {
      if (event.target.classList && event.target.classList.contains("tok")) showToken(event.target);
    });
    output.addEventListener("keydown", (event) => {
      const list = tokens();
      const at = list.indexOf(document.activeElement);
      if (at < 0) return;
      const moves = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: list.length - 1 };
      if (!(event.key in moves)) return;
      event.preventDefault();
      focusToken(list[Math.max(0, Math.min(list.length - 1, moves[event.key]))]);
    });
  }

  // --- the run just made, from three starts ---------------------------------------------------------------------
  const STARTS = ["zero", "noise", "warm"]; // the table's column order
  const startsFigure = $("cv-starts");

  /* The share of positions whose greedy bytes agree, over the longer run (bench/decode.py's agreement). */
  function agreement(a, b) {
    const total = Math.max(a.length, b.length);
    let same = 0;
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] === b[i]) same += 1;
    return total ? same / total : null;
  }

  function cosine(u, v) {
    let uv = 0, uu = 0, vv = 0;
    for (let i = 0; i < u.length; i++) {
      uv += u[i] * v[i];
      uu += u[i] * u[i];
      vv += v[i] * v[i];
    }
    return uu > 0 && vv > 0 ? uv / Math.sqrt(uu * vv) : 0;
  }

  /* Mean cosine between the final states of the positions two runs share: every prompt position (the first event's
     promptStates), then each generated position while the tokens before it agree (event k's z is the state that
     chose token k, its context the tokens before k). */
  function stateCosine(a, b, d) {
    const pa = a[0].promptStates, pb = b[0].promptStates;
    const values = [];
    for (let p = 0; p < pa.length / d; p++) values.push(cosine(pa.subarray(p * d, (p + 1) * d), pb.subarray(p * d, (p + 1) * d)));
    for (let k = 1; k < Math.min(a.length, b.length) && a[k - 1].tokenId === b[k - 1].tokenId; k++) values.push(cosine(a[k].z, b[k].z));
    return values.reduce((s, v) => s + v, 0) / values.length;
  }

  function setStartsStatus(text) {
    const node = $("cv-starts-status");
    if (node) node.textContent = text;
  }

  function showStarts(runs, run, d) {
    const zero = runs.zero.map((e) => e.tokenId);
    const table = $("cv-starts-table");
    const cells = {};
    for (const row of table.tBodies[0].rows) cells[row.dataset.row] = row.cells;
    const figures = {};
    STARTS.forEach((start, c) => {
      const events = runs[start];
      const tokens = events.map((e) => e.tokenId);
      figures[start] = {
        tokens, text: events.map((e) => e.text).join(""), agreement: agreement(tokens, zero),
        cosine: stateCosine(runs.zero, events, d), meanIterations: events.reduce((s, e) => s + e.iterations, 0) / events.length,
      };
      cells.agreement[c + 1].textContent = percent(figures[start].agreement);
      cells.cosine[c + 1].textContent = figures[start].cosine.toFixed(4);
      cells.iterations[c + 1].textContent = figures[start].meanIterations.toFixed(2);
      cells.text[c + 1].textContent = JSON.stringify(figures[start].text);
    });
    for (const th of table.tHead.rows[0].cells) th.classList.toggle("cv-run-start", th.dataset.start === run.request.start);
    const { depth, tol, halt, solver, seed } = run.request;
    const halting = tol ? `halting by ${halt === "kl" ? "KL" : "residual"} below ${tol.toPrecision(2)}, cap ${depth}` : `depth ${depth}`;
    $("cv-starts-caption").textContent = `The run just made (start ${run.request.start}) from three starts: ${zero.length} greedy tokens each, ` +
      `${halting}, ${solver || "picard"}, noise seed ${Number(seed) || 0}`;
    $("cv-starts-table-wrap").hidden = false; // the table and its focusable region appear once a run fills them
    startsFigure.dataset.compared = String(zero.length);
    if (window.eqlmDemo) window.eqlmDemo.starts = figures;
    setStartsStatus("");
  }

  /* Remake the run just made greedily from each start, one after the other on the page's runtime; a new run stops
     this first (demo.js awaits window.eqlmDemo.comparison). */
  function compareStarts() {
    const demo = window.eqlmDemo;
    const run = demo && demo.lastRun;
    if (!startsFigure || !demo.runtime || !run || !run.request || !run.tokens) return;
    const limit = Number(startsFigure.dataset.maxTokens) || 48;
    const abort = new AbortController();
    const request = { ...run.request, temperature: 0, maxTokens: Math.min(run.tokens, limit), signal: abort.signal };
    delete startsFigure.dataset.compared;
    setStartsStatus("Making the run again from zero, from noise and warm…");
    const done = (async () => {
      const runs = {};
      for (const start of STARTS) {
        runs[start] = [];
        for await (const event of demo.runtime.generate({ ...request, start, warmStart: false })) runs[start].push(event);
        if (abort.signal.aborted) return setStartsStatus("The comparison stopped for a new run.");
      }
      showStarts(runs, run, demo.runtime.dModel);
    })().catch((error) => setStartsStatus(`The comparison failed: ${error.message || error}`)).finally(() => {
      if (demo.comparison && demo.comparison.abort === abort) demo.comparison = null;
    });
    demo.comparison = { abort, done };
  }

  function refresh() { drawStored(); updateReadout(); }
  const form = $("dial-form");
  if (form) {
    form.addEventListener("input", refresh);
    form.addEventListener("change", refresh);
  }
  document.addEventListener("eqlm:themechange", () => {
    drawStored();
    const focused = tokens().find((t) => t.classList.contains("tok-focus"));
    if (focused) showToken(focused);
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", refresh);
  else refresh();
}

if (panel) start();
