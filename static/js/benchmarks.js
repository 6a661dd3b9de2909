/* Benchmark plots (plotly, served by the portal). Every `.bench-plot` element names the json_script block holding
   its data in data-plot; every plotted number is also in the page's tables. Legends claim an interval only where
   the data has one, and the first depths of a fixed-point curve are kept off the axis's range and marked. */
import * as Focus from "./plot-focus.js";
import { PALETTE, logAxis, styleTraces } from "./plot-style.js";

const config = { displaylogo: false, responsive: true };

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
function layout(extra) {
  const out = {
    paper_bgcolor: css("--bg") || "#fff",
    plot_bgcolor: css("--bg") || "#fff",
    font: { color: css("--fg") || "#1b1f24" },
    margin: { t: 30, r: 20, b: 50, l: 60 },
    // In the container's coordinates the legend sits under the axis title and pushes the margin, never over it.
    legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" },
    ...extra,
  };
  // Axis titles keep clear of their tick labels: the margins grow to fit both.
  for (const name of ["xaxis", "yaxis"]) {
    const axis = (out[name] = { automargin: true, ...(out[name] || {}) });
    if (axis.title) axis.title = { standoff: 12, ...axis.title };
  }
  return out;
}
function read(id) {
  const node = id && document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
}
function setNote(el, text) {
  const note = el.parentElement && el.parentElement.querySelector(".bench-plot-note");
  if (note) note.textContent = text;
}

function ratioPlot(el, d) {
  const seeds = Object.keys(d.per_seed || {});
  const traces = [{
    type: "scatter", mode: "markers", name: "per-seed ratio", x: seeds.map((s) => `seed ${s}`),
    y: seeds.map((s) => d.per_seed[s]), marker: { size: 11, color: PALETTE[0], symbol: "circle" },
  }];
  if (d.mean !== null && d.mean !== undefined) {
    const interval = seeds.length >= 2 && d.ci && d.ci[0] !== null;
    traces.push({
      type: "scatter", mode: "markers", name: interval ? `mean, ${d.interval_label || "interval"}` : "mean (one seed: no interval)",
      x: ["mean"], y: [d.mean], marker: { size: 13, color: PALETTE[1], symbol: "diamond" },
      error_y: interval
        ? { type: "data", symmetric: false, array: [d.ci[1] - d.mean], arrayminus: [d.mean - d.ci[0]], color: PALETTE[1] }
        : { visible: false },
    });
  }
  window.Plotly.newPlot(el, styleTraces(traces), layout({
    yaxis: { title: { text: "treatment / baseline" } },
    shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { dash: "dot", color: css("--muted") || "#888" } }],
  }), config);
}

function forestPlot(el, d) {
  const muted = css("--muted") || "#888";
  const traces = ["recomputed", "published"].map((kind, i) => {
    const rows = d.rows.filter((r) => r.kind === kind && r.value !== null);
    const hasBars = rows.some((r) => r.low !== null && r.low !== undefined);
    return {
      type: "scatter", mode: "markers", name: kind === "recomputed" ? (hasBars ? `recomputed, ${d.interval_label || "interval"}` : "recomputed") : "published",
      y: rows.map((r) => r.label), x: rows.map((r) => r.value),
      text: rows.map((r) => (r.status ? `published: ${r.status}` : "recomputed from the stored rows")),
      hovertemplate: "%{y}: %{x:.4f} (%{text})<extra></extra>",
      marker: { size: 12, color: PALETTE[i === 0 ? 0 : 5], symbol: i === 0 ? "diamond" : "square-open", line: { width: 2 } },
      error_x: hasBars || kind === "published" ? {
        type: "data", symmetric: false,
        array: rows.map((r) => (r.high !== null && r.high !== undefined ? r.high - r.value : 0)),
        arrayminus: rows.map((r) => (r.low !== null && r.low !== undefined ? r.value - r.low : 0)),
        color: PALETTE[i === 0 ? 0 : 5], thickness: 2, width: 6,
      } : { visible: false },
    };
  }).filter((t) => t.x.length);
  const labels = d.rows.map((r) => r.label);
  const height = Math.max(220, 110 + 38 * labels.length);
  el.style.height = `${height}px`;
  el.style.minHeight = "0";
  window.Plotly.newPlot(el, styleTraces(traces), layout({
    height,
    margin: { t: 20, r: 20, b: 50, l: 20 },
    xaxis: { title: { text: d.x_title } },
    yaxis: { automargin: true, autorange: "reversed", categoryorder: "array", categoryarray: labels },
    shapes: [{ type: "line", yref: "paper", y0: 0, y1: 1, x0: d.reference, x1: d.reference, line: { dash: "dot", color: muted } }],
  }), config);
}

function dotsPlot(el, d) {
  const height = Math.max(220, 90 + 30 * d.labels.length);
  el.style.height = `${height}px`;
  el.style.minHeight = "0";
  window.Plotly.newPlot(el, styleTraces([{
    // Dots, not bars: the axis starts near the smallest value, where a bar's length would mislead.
    type: "scatter", mode: "markers", y: d.labels, x: d.values, marker: { color: PALETTE[0], size: 11 }, name: d.y_title,
    hovertemplate: "%{y}: %{x:.4f}<extra></extra>",
  }]), layout({
    height, showlegend: false, margin: { t: 20, r: 20, b: 50, l: 20 },
    yaxis: { autorange: "reversed" },
    xaxis: { title: { text: d.y_title }, range: focusRange(d.values) },
  }), config);
}
function focusRange(values) {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const pad = (hi - lo) * 0.15 || 0.05;
  return [lo - pad, hi + pad];
}

function curvePlot(el, d) {
  const traces = [];
  const names = Object.keys(d.series);
  names.forEach((arm, i) => {
    const s = d.series[arm];
    const withSd = s.sd.some((v) => v);
    traces.push({
      type: "scatter", mode: "lines+markers", name: withSd ? `${arm} mean ± SD` : arm, legendgroup: arm, x: s.x, y: s.mean,
      line: { color: PALETTE[i % PALETTE.length] },
      error_y: withSd ? { type: "data", array: s.sd.map((v) => v || 0), visible: true } : { visible: false },
    });
    if (s.points.length) {
      traces.push({
        type: "scatter", mode: "markers", name: `${arm} per seed`, legendgroup: arm, x: s.points.map((p) => p.x),
        y: s.points.map((p) => p.value), text: s.points.map((p) => `seed ${p.seed}`),
        marker: { color: PALETTE[i % PALETTE.length], symbol: "circle-open", size: 9 },
      });
    }
  });
  const yaxis = { title: { text: d.metric } };
  if (d.focus_from) {
    const result = Focus.focus(names.map((n) => ({ name: n, x: d.series[n].x, y: d.series[n].mean })), { from: d.focus_from });
    if (result.range) {
      yaxis.range = result.range;
      if (result.clipped) traces.push({ ...Focus.offScaleTrace(result, { xName: d.x_key, color: css("--fg") || "#444" }), meta: "keep-style" });
      setNote(el, Focus.note(result, d.x_key));
    }
  }
  const xs = names.flatMap((n) => d.series[n].x);
  const wide = d.x_key === "depth" && Math.max(...xs) / Math.max(Math.min(...xs), 1) >= 32;
  const xaxis = { title: { text: wide ? `${d.x_key} (log scale)` : d.x_key }, ...(wide ? logAxis(xs, { powersOfTwo: true }) : {}) };
  window.Plotly.newPlot(el, styleTraces(traces), layout({ xaxis, yaxis }), config);
}

function depthPlot(el, d) {
  const arms = {};
  d.points.forEach((p) => (arms[p.arm] = arms[p.arm] || []).push(p));
  const symbols = ["square", "circle", "diamond", "triangle-up", "cross", "x"];
  const traces = Object.keys(arms).map((arm, i) => ({
    type: "scatter", mode: "markers", name: arm, x: arms[arm].map((p) => p.depth),
    y: arms[arm].map((p) => p.blimp), text: arms[arm].map((p) => `seed ${p.seed}`),
    marker: { size: 10, color: PALETTE[i % PALETTE.length], symbol: symbols[i % symbols.length] },
  }));
  window.Plotly.newPlot(el, styleTraces(traces), layout({ xaxis: { title: { text: "mean depth (iterations)" } }, yaxis: { title: { text: "BLiMP accuracy" } } }), config);
}

function ladderPlot(el, d) {
  const tasks = ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq"];
  const traces = d.rows.map((r, i) => ({
    type: "bar", name: `${r.model} @ ${r.tokens}`, x: tasks, y: tasks.map((t) => r[t]),
    marker: { color: PALETTE[i % PALETTE.length] },
  }));
  window.Plotly.newPlot(el, styleTraces(traces), layout({ barmode: "group", yaxis: { title: { text: "accuracy" } } }), config);
}

function lossPlot(el, curves) {
  const traces = Object.keys(curves).map((arm, i) => ({
    type: "scatter", mode: "lines", name: arm, x: curves[arm].step, y: curves[arm].loss, line: { color: PALETTE[i % PALETTE.length] },
  }));
  window.Plotly.newPlot(el, styleTraces(traces), layout({ xaxis: { title: { text: "step" } }, yaxis: { title: { text: "training loss (nats)" } } }), config);
}

const DRAW = { ratio: ratioPlot, forest: forestPlot, dots: dotsPlot, curve: curvePlot, depth: depthPlot, ladder: ladderPlot };

function draw(el) {
  const data = read(el.dataset.plot);
  if (!data) return;
  if (el.dataset.plot === "bench-curves-data") lossPlot(el, data);
  else if (DRAW[data.type]) DRAW[data.type](el, data);
}

if (window.Plotly) {
  const plots = [...document.querySelectorAll(".bench-plot[data-plot]")];
  plots.forEach(draw);
  // Follow the theme toggle: recolour the plots' background and text when data-theme changes.
  new MutationObserver(() => {
    plots.filter((el) => el.data).forEach((el) => {
      window.Plotly.relayout(el, { paper_bgcolor: css("--bg"), plot_bgcolor: css("--bg"), "font.color": css("--fg") });
    });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
}
