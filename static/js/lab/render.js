/* Draws a solver result (from the browser or the server, same JSON) as tables and plotly charts.
 * Shared by the lab page and the job page: render(container, result, compare).
 */
import { fractionString } from "./solvers/core.js";

const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999"];
const SOLVER_NAMES = {
  mmd: "Magnetic mirror descent",
  gda: "Gradient descent–ascent",
  qre: "Logit QRE",
  qre_path: "QRE path",
  nash: "Nash equilibria",
};

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  Object.entries(attrs || {}).forEach(([k, v]) => {
    if (v === null || v === undefined || v === false) return;
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v === true ? "" : v);
  });
  (children || []).forEach((c) => node.append(c));
  return node;
}
function fmt(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v !== "number") return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a < 1e-4 || a >= 1e6 ? v.toExponential(3) : String(Number(v.toPrecision(6)));
}
function frac(v) {
  const f = fractionString(v);
  return f === null ? fmt(v) : f;
}
const vec = (xs) => "(" + xs.map(frac).join(", ") + ")";

function theme() {
  const css = getComputedStyle(document.documentElement);
  return { fg: css.getPropertyValue("--fg").trim() || "#1b1f24", grid: css.getPropertyValue("--border").trim() || "#d0d7de" };
}
function baseLayout(title, extra) {
  const t = theme();
  // automargin: the margins grow so an axis title never sits on its tick labels or on the legend below.
  const axis = (more) => Object.assign({ gridcolor: t.grid, zerolinecolor: t.grid, linecolor: t.grid, automargin: true }, more || {});
  const e = extra || {};
  return Object.assign(
    {
      title: { text: title, font: { size: 15 } },
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: t.fg },
      margin: { l: 60, r: 20, t: 40, b: 50 },
      legend: { orientation: "h", yref: "container", y: 0, yanchor: "bottom" },
    },
    e,
    { xaxis: axis(e.xaxis), yaxis: axis(e.yaxis) },
  );
}
function plot(container, id, label, traces, layout) {
  const div = el("div", { class: "plot", id });
  container.append(el("figure", { class: "lab-figure" }, [div, el("figcaption", { class: "visually-hidden", text: label })]));
  window.Plotly.newPlot(div, traces, layout, { responsive: true, displaylogo: false });
  return div;
}

function csvEscape(v) {
  const s = v === null || v === undefined ? "" : String(v);
  return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}
function downloadLinks(name, headers, rows) {
  const csv = [headers, ...rows].map((r) => r.map(csvEscape).join(",")).join("\n") + "\n";
  const json = JSON.stringify(rows.map((r) => Object.fromEntries(headers.map((h, i) => [h, r[i]]))), null, 1);
  const link = (text, data, type, ext) =>
    el("a", { class: "button secondary lab-download", href: URL.createObjectURL(new Blob([data], { type })), download: `${name}.${ext}`, text });
  return el("p", { class: "lab-downloads" }, [link("Download CSV", csv, "text/csv", "csv"), " ", link("Download JSON", json, "application/json", "json")]);
}
function table(caption, headers, rows, opts) {
  const o = opts || {};
  const t = el("table", {}, [
    el("caption", { text: caption }),
    el("thead", {}, [el("tr", {}, headers.map((h) => el("th", { scope: "col", text: h })))]),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) => el(i === 0 ? "th" : "td", i === 0 ? { scope: "row", text: c } : { class: typeof c === "number" ? "num" : null, text: typeof c === "number" ? fmt(c) : c }))))),
  ]);
  const wrap = el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${caption} (scrolls sideways)` }, [t]);
  const raw = o.raw || rows;
  const block = el("div", {}, [wrap, downloadLinks(o.name || "table", headers, raw)]);
  if (o.collapsed) return el("details", {}, [el("summary", { text: o.summary || "Data table" }), block]);
  return block;
}

function metricHeaders(result) {
  return result.game.zero_sum ? ["NashConv", "exploitability"] : ["NashConv"];
}
function profileRow(label, p, zeroSum) {
  const row = [label, vec(p.x), vec(p.y), p.payoff_row, p.payoff_col, p.nashconv];
  if (zeroSum) row.push(p.exploitability);
  return row;
}
function describe(result) {
  const p = result.params || {};
  const g = result.game.name + ` (${result.game.m}×${result.game.n})`;
  if (result.solver === "mmd") return `MMD η=${p.eta}, τ=${p.tau}, ${result.iterations} steps on ${g}`;
  if (result.solver === "gda") return `GDA η=${p.eta}, ${result.iterations} steps on ${g}`;
  if (result.solver === "qre") return `QRE at λ=${p.lambda} on ${g}`;
  if (result.solver === "qre_path") return `QRE path to λ=${p.lambda_max} on ${g}`;
  return `Nash (${result.method}) on ${g}`;
}

function renderDynamics(box, r, cmp) {
  const zs = r.game.zero_sum;
  box.append(
    table(
      `${SOLVER_NAMES[r.solver]}: final strategies (metric: NashConv${zs ? "; exploitability = NashConv/2" : ""})`,
      ["iterate", "x (row)", "y (column)", "row payoff", "column payoff", ...metricHeaders(r)],
      [profileRow("last iterate", r.last, zs), profileRow("running average", r.average, zs)],
      { name: `${r.solver}-final` },
    ),
  );
  if (r.qre_target) {
    const q = r.qre_target;
    const d = r.trace.distance_to_qre[r.trace.distance_to_qre.length - 1];
    box.append(el("p", {}, [`MMD's fixed point is the logit QRE at λ = 1/τ = ${fmt(q.lambda)} of the game shifted by τ·log ρ: x = ${vec(q.x)}, y = ${vec(q.y)} (residual ${fmt(q.residual)}). The last iterate is ${fmt(d)} away from it (max norm).`]));
  }
  const tr = r.trace;
  const floor = (v) => Math.max(v, 1e-17); // log axis: exact zeros are drawn at 1e-17
  const traces = [
    { x: tr.iteration, y: tr.nashconv_last.map(floor), name: "last iterate", mode: "lines", line: { color: COLOURS[0], width: 2 } },
    { x: tr.iteration, y: tr.nashconv_average.map(floor), name: "average", mode: "lines", line: { color: COLOURS[1], width: 2, dash: "dot" } },
  ];
  if (tr.distance_to_qre) {
    traces.push({ x: tr.iteration, y: tr.distance_to_qre.map(floor), name: `distance to the QRE at λ = 1/τ = ${fmt(r.qre_target.lambda)}`, mode: "lines", line: { color: COLOURS[4], width: 2, dash: "longdash" } });
  }
  if (cmp && cmp.trace) {
    traces.push(
      { x: cmp.trace.iteration, y: cmp.trace.nashconv_last.map(floor), name: "pinned: last", mode: "lines", line: { color: COLOURS[2], width: 2, dash: "dash" } },
      { x: cmp.trace.iteration, y: cmp.trace.nashconv_average.map(floor), name: "pinned: average", mode: "lines", line: { color: COLOURS[3], width: 2, dash: "dashdot" } },
    );
  }
  plot(
    box,
    "plot-nashconv",
    "NashConv against iteration on a log axis, for the last iterate and the running average",
    traces,
    baseLayout(tr.distance_to_qre ? "NashConv, and the distance to MMD's fixed point (log axis)" : "NashConv against iteration (log axis)", {
      xaxis: { title: { text: "iteration" } },
      yaxis: { title: { text: tr.distance_to_qre ? "NashConv / max-norm distance" : "NashConv" }, type: "log", exponentformat: "power" },
    }),
  );
  box.append(
    table(
      "NashConv trace",
      ["iteration", "NashConv (last)", "NashConv (average)", ...(tr.distance_to_qre ? ["distance to the QRE"] : [])],
      tr.iteration.map((t, i) => [String(t), tr.nashconv_last[i], tr.nashconv_average[i], ...(tr.distance_to_qre ? [tr.distance_to_qre[i]] : [])]),
      { collapsed: true, summary: "Data table: NashConv against iteration", name: `${r.solver}-nashconv`, raw: tr.iteration.map((t, i) => [t, tr.nashconv_last[i], tr.nashconv_average[i], ...(tr.distance_to_qre ? [tr.distance_to_qre[i]] : [])]) },
    ),
  );
  renderTrajectory(box, r, cmp);
}

function renderTrajectory(box, r, cmp) {
  const players = [
    ["x", "Row player", r.game.m],
    ["y", "Column player", r.game.n],
  ];
  const iters = r.trace.iteration;
  players.forEach(([key, label, k], pi) => {
    const pts = r.trajectory[key];
    const cmpPts = cmp && cmp.trajectory && cmp.trajectory[key] && cmp.trajectory[key][0].length === k ? cmp.trajectory[key] : null;
    const id = `plot-trajectory-${key}`;
    if (k === 3) {
      const traces = [
        { type: "scatterternary", mode: "lines+markers", a: pts.map((p) => p[0]), b: pts.map((p) => p[1]), c: pts.map((p) => p[2]), name: "this run", marker: { size: 3, color: COLOURS[pi === 0 ? 0 : 1] }, line: { width: 1.5 } },
        { type: "scatterternary", mode: "markers", a: [pts[pts.length - 1][0]], b: [pts[pts.length - 1][1]], c: [pts[pts.length - 1][2]], name: "last iterate", marker: { size: 10, symbol: "x", color: COLOURS[3] } },
      ];
      if (cmpPts)
        traces.push({ type: "scatterternary", mode: "lines", a: cmpPts.map((p) => p[0]), b: cmpPts.map((p) => p[1]), c: cmpPts.map((p) => p[2]), name: "pinned run", line: { width: 1.5, dash: "dash", color: COLOURS[2] } });
      const t = theme();
      plot(box, id, `${label}'s strategy trajectory on the simplex (ternary plot)`, traces,
        baseLayout(`${label}: trajectory on the simplex`, {
          margin: { l: 60, r: 60, t: 80, b: 40 },
          ternary: { bgcolor: "rgba(0,0,0,0)", aaxis: { title: { text: "action 1" }, gridcolor: t.grid }, baxis: { title: { text: "action 2" }, gridcolor: t.grid }, caxis: { title: { text: "action 3" }, gridcolor: t.grid } },
        }));
    } else {
      const traces = [];
      const shown = k === 2 ? 1 : k;
      for (let a = 0; a < shown; a++)
        traces.push({ x: iters, y: pts.map((p) => p[a]), name: `P(action ${a + 1})`, mode: "lines", line: { color: COLOURS[a % COLOURS.length] } });
      if (cmpPts) for (let a = 0; a < shown; a++) traces.push({ x: cmp.trace.iteration, y: cmpPts.map((p) => p[a]), name: `pinned: P(action ${a + 1})`, mode: "lines", line: { color: COLOURS[a % COLOURS.length], dash: "dash" } });
      plot(box, id, `${label}'s probability of each action against iteration`, traces,
        baseLayout(`${label}: strategy against iteration`, { xaxis: { title: { text: "iteration" } }, yaxis: { title: { text: "probability" }, range: [0, 1] } }));
    }
    const headers = ["iteration", ...[...Array(k).keys()].map((a) => `P(action ${a + 1})`)];
    box.append(table(`${label}'s trajectory`, headers, pts.map((p, i) => [String(iters[i]), ...p]), { collapsed: true, summary: `Data table: ${label.toLowerCase()}'s trajectory`, name: `${r.solver}-trajectory-${key}`, raw: pts.map((p, i) => [iters[i], ...p]) }));
  });
}

function renderQre(box, r, cmp) {
  const rows = [[`λ = ${fmt(r.lambda)}`, vec(r.x), vec(r.y), r.residual, r.converged ? "yes" : "no", r.method, r.nashconv]];
  if (cmp && cmp.solver === "qre") rows.push([`pinned: λ = ${fmt(cmp.lambda)}`, vec(cmp.x), vec(cmp.y), cmp.residual, cmp.converged ? "yes" : "no", cmp.method, cmp.nashconv]);
  box.append(table("Logit QRE (metric: NashConv of the QRE profile; residual = max |x − softmax(λAy)|, |y − softmax(λBᵀx)|)", ["point", "x (row)", "y (column)", "residual", "converged", "method", "NashConv"], rows, { name: "qre" }));
}

// Where the path stopped, against the λ the reader asked for (the last continuation step may pass it).
function pathEnd(r) {
  const asked = (r.params || {}).lambda_max;
  if (r.status === "reached lambda_max" && asked > 0)
    return r.lambda_end > asked
      ? `Path traced to λ = ${fmt(asked)} as asked (its last step landed at λ = ${fmt(r.lambda_end)})`
      : `Path traced to λ = ${fmt(r.lambda_end)} as asked`;
  return `Path ends at λ = ${fmt(r.lambda_end)}${asked > 0 ? ` of the ${fmt(asked)} asked` : ""} (${r.status})`;
}

function renderPath(box, r, cmp) {
  const pts = r.points.filter((p) => p.lambda > 0);
  const traces = [];
  const addPlayer = (res, key, label, dash, prefix) => {
    const P = res.points.filter((p) => p.lambda > 0);
    const k = P.length ? P[0][key].length : 0;
    for (let a = 0; a < k; a++)
      traces.push({ x: P.map((p) => p.lambda), y: P.map((p) => p[key][a]), name: `${prefix}${label} action ${a + 1}`, mode: "lines", line: { color: COLOURS[a % COLOURS.length], dash } });
  };
  addPlayer(r, "x", "row", "solid", "");
  addPlayer(r, "y", "column", "dot", "");
  if (cmp && cmp.solver === "qre_path") {
    addPlayer(cmp, "x", "row", "dash", "pinned: ");
    addPlayer(cmp, "y", "column", "dashdot", "pinned: ");
  }
  const events = [...r.turning_points, ...r.bifurcations].filter((e) => e.lambda > 0);
  if (events.length) {
    traces.push({
      x: events.map((e) => e.lambda),
      y: events.map((e) => e.x[0]),
      text: events.map((e) => e.kind),
      name: "turning points / bifurcations",
      mode: "markers",
      marker: { size: 12, symbol: "diamond-open", color: COLOURS[3], line: { width: 2 } },
    });
  }
  const shapes = events.map((e) => ({ type: "line", x0: e.lambda, x1: e.lambda, yref: "paper", y0: 0, y1: 1, line: { dash: "dot", width: 1, color: COLOURS[3] } }));
  // The view stops at the λ asked for: the continuation's last step may land past it.
  const asked = (r.params || {}).lambda_max;
  const lows = [...r.points, ...((cmp && cmp.solver === "qre_path" && cmp.points) || [])].map((p) => p.lambda).filter((l) => l > 0);
  const xaxis = { type: "log", title: { text: "λ" }, exponentformat: "power" };
  if (asked > 0 && lows.length) xaxis.range = [Math.log10(Math.min(...lows)), Math.log10(asked)];
  plot(box, "plot-path", "Each action's probability along the QRE path against log lambda, with turning points and bifurcations marked", traces,
    baseLayout("QRE path: probabilities against λ (log axis)", { shapes, xaxis, yaxis: { title: { text: "probability" }, range: [0, 1] } }));
  const lim = r.limit;
  const limRows = [["limiting equilibrium", vec(lim.x), vec(lim.y), lim.nashconv, lim.exact ? "yes (NashConv ≤ 1e-9)" : "approximate"]];
  box.append(table(`${pathEnd(r)}; ${r.turning_points.length} turning point(s), ${r.bifurcations.length} bifurcation(s)`, ["point", "x (row)", "y (column)", "NashConv", "exact"], limRows, { name: "qre-path-limit" }));
  if (events.length)
    box.append(table("Turning points and bifurcations", ["kind", "λ", "x (row)", "y (column)"], events.map((e) => [e.kind, e.lambda, vec(e.x), vec(e.y)]), { name: "qre-path-events" }));
  box.append(table("QRE path points", ["λ", "x (row)", "y (column)", "NashConv"], pts.map((p) => [fmt(p.lambda), vec(p.x), vec(p.y), p.nashconv]), { collapsed: true, summary: "Data table: the path's points", name: "qre-path", raw: r.points.map((p) => [p.lambda, p.x.join(" "), p.y.join(" "), p.nashconv]) }));
}

function renderNash(box, r, cmp) {
  const zs = r.game.zero_sum;
  const head = ["#", "x (row)", "y (column)", "row payoff", "column payoff", ...metricHeaders(r)];
  const rows = r.equilibria.map((e, i) => profileRow(String(i + 1), e, zs));
  const what = r.method === "enumerate" ? `all extreme equilibria by vertex enumeration${r.complete === false ? " (stopped at the time limit: the list may be incomplete)" : ""}` : `one equilibrium by Lemke–Howson (${r.pivots} pivots)`;
  box.append(table(`${r.equilibria.length} equilibri${r.equilibria.length === 1 ? "um" : "a"}: ${what} (metric: NashConv)`, head, rows, { name: "nash-equilibria" }));
  if (r.zero_sum) box.append(el("p", {}, [`Zero-sum value: ${frac(r.zero_sum.value)} (${r.zero_sum.method}); maximin strategies x = ${vec(r.zero_sum.x)}, y = ${vec(r.zero_sum.y)}.`]));
  if (cmp && cmp.solver === "nash")
    box.append(table("Pinned run: equilibria", head, cmp.equilibria.map((e, i) => profileRow(String(i + 1), e, cmp.game.zero_sum)), { name: "nash-pinned" }));
}

function render(container, result, compare) {
  container.replaceChildren();
  const box = el("div", { class: "lab-result", "data-solver": result.solver });
  container.append(box); // attached first, so plotly sizes each plot to the page's width
  box.append(el("p", { class: "muted lab-describe" }, [describe(result) + (compare ? ` — compared with the pinned run: ${describe(compare)}` : "")]));
  const cmp = compare && compare.solver === result.solver ? compare : null;
  if (result.solver === "mmd" || result.solver === "gda") renderDynamics(box, result, compare && compare.trace ? compare : null);
  else if (result.solver === "qre") renderQre(box, result, cmp);
  else if (result.solver === "qre_path") renderPath(box, result, cmp);
  else renderNash(box, result, cmp);
  box.append(el("p", { class: "muted" }, [result.metric_note]));
}

function renderSweep(container, result) {
  container.replaceChildren();
  const runs = result.runs;
  const keys = Object.keys(result.sweep);
  const metric = (run) => (run.last ? run.last.nashconv : run.nashconv !== undefined ? run.nashconv : run.limit ? run.limit.nashconv : run.equilibria ? Math.max(...run.equilibria.map((e) => e.nashconv)) : null);
  const avg = (run) => (run.average ? run.average.nashconv : null);
  const labels = runs.map((run) => keys.map((k) => `${k}=${run.point[k]}`).join(", "));
  const traces = [{ x: labels, y: runs.map((run) => Math.max(metric(run), 1e-17)), name: "final NashConv (last iterate)", mode: "lines+markers", line: { color: COLOURS[0] } }];
  if (runs.some((run) => run.average)) traces.push({ x: labels, y: runs.map((run) => Math.max(avg(run), 1e-17)), name: "final NashConv (average)", mode: "lines+markers", line: { color: COLOURS[1], dash: "dot" } });
  plot(container, "plot-sweep", "Final NashConv of each run of the sweep, log axis", traces,
    baseLayout(`Sweep over ${keys.join(", ")}: final NashConv (log axis)`, { xaxis: { type: "category", title: { text: "run" } }, yaxis: { type: "log", title: { text: "NashConv" }, exponentformat: "power" } }));
  const headers = [...keys, "NashConv (last / value)", "NashConv (average)", "iterations", "ms"];
  const rows = runs.map((run) => [...keys.map((k) => String(run.point[k])), metric(run), avg(run), run.iterations === undefined ? "—" : String(run.iterations), run.elapsed_ms]);
  container.append(table(`${runs.length} runs of ${SOLVER_NAMES[result.solver]} (metric: NashConv)`, headers, rows, { name: "sweep" }));
  if (runs.some((run) => run.trace)) {
    const tr = runs.filter((run) => run.trace).map((run, i) => ({ x: run.trace.iteration, y: run.trace.nashconv_last.map((v) => Math.max(v, 1e-17)), name: labels[i], mode: "lines", line: { color: COLOURS[i % COLOURS.length] } }));
    plot(container, "plot-sweep-traces", "NashConv of the last iterate against iteration for every run, log axis", tr,
      baseLayout("Every run: NashConv of the last iterate (log axis)", { xaxis: { title: { text: "iteration" } }, yaxis: { type: "log", title: { text: "NashConv" }, exponentformat: "power" } }));
    const traced = runs.filter((run) => run.trace);
    const iters = traced[0].trace.iteration;
    if (traced.every((run) => run.trace.iteration.length === iters.length)) {
      const raw = iters.map((t, i) => [t, ...traced.map((run) => run.trace.nashconv_last[i])]);
      container.append(table("NashConv of the last iterate, every run", ["iteration", ...labels.filter((_, i) => runs[i].trace)], raw.map((r) => [String(r[0]), ...r.slice(1)]), { collapsed: true, summary: "Data table: every run's NashConv against iteration", name: "sweep-traces", raw }));
    }
  }
}

function matrixTables(game) {
  const make = (M, who) => table(`${who} payoffs (${game.m}×${game.n})`, ["", ...[...Array(game.n).keys()].map((j) => `col ${j + 1}`)], M.map((row, i) => [`row ${i + 1}`, ...row]), { name: who.startsWith("Row") ? "payoffs-A" : "payoffs-B" });
  return [make(game.A, "Row player's"), make(game.B, "Column player's")];
}

export { render, renderSweep, matrixTables, fmt, frac, pathEnd };
