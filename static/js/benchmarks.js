// Benchmark plots (plotly, served by the portal). Data comes from json_script blocks; every plotted
// number is also in the page's tables.
(function () {
  "use strict";
  var PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];
  var el = document.getElementById("bench-plot");
  if (!el || typeof Plotly === "undefined") { return; }

  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }
  function layout(extra) {
    var base = {
      paper_bgcolor: css("--bg") || "#fff", plot_bgcolor: css("--bg") || "#fff",
      font: { color: css("--fg") || "#1b1f24" }, margin: { t: 30, r: 20, b: 50, l: 60 },
      legend: { orientation: "h", y: -0.2 }
    };
    Object.keys(extra).forEach(function (k) { base[k] = extra[k]; });
    return base;
  }
  function read(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  var config = { displaylogo: false, responsive: true };

  function ratioPlot(d) {
    var seeds = Object.keys(d.per_seed || {});
    var traces = [{
      type: "scatter", mode: "markers", name: "per-seed ratio", x: seeds.map(function (s) { return "seed " + s; }),
      y: seeds.map(function (s) { return d.per_seed[s]; }), marker: { size: 11, color: PALETTE[0], symbol: "circle" }
    }];
    if (d.mean !== null && d.mean !== undefined) {
      traces.push({
        type: "scatter", mode: "markers", name: "mean with interval", x: ["mean"], y: [d.mean],
        marker: { size: 13, color: PALETTE[1], symbol: "diamond" },
        error_y: { type: "data", symmetric: false, array: [d.ci[1] - d.mean], arrayminus: [d.mean - d.ci[0]], color: PALETTE[1] }
      });
    }
    Plotly.newPlot(el, traces, layout({ yaxis: { title: { text: "treatment / baseline" } }, shapes: [
      { type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { dash: "dot", color: css("--muted") || "#888" } }
    ] }), config);
  }

  function curvePlot(d) {
    var traces = [];
    Object.keys(d.series).forEach(function (arm, i) {
      var s = d.series[arm];
      traces.push({
        type: "scatter", mode: "lines+markers", name: arm + " mean ± SD", x: s.x, y: s.mean,
        line: { color: PALETTE[i % PALETTE.length] },
        error_y: { type: "data", array: s.sd.map(function (v) { return v || 0; }), visible: true }
      });
      traces.push({
        type: "scatter", mode: "markers", name: arm + " per seed", x: s.points.map(function (p) { return p.x; }),
        y: s.points.map(function (p) { return p.value; }), text: s.points.map(function (p) { return "seed " + p.seed; }),
        marker: { color: PALETTE[i % PALETTE.length], symbol: "circle-open", size: 9 }
      });
    });
    Plotly.newPlot(el, traces, layout({ xaxis: { title: { text: d.x_key } }, yaxis: { title: { text: d.metric } } }), config);
  }

  function depthPlot(d) {
    var arms = {};
    d.points.forEach(function (p) { (arms[p.arm] = arms[p.arm] || []).push(p); });
    var symbols = ["square", "circle", "diamond", "triangle-up", "cross", "x"];
    var traces = Object.keys(arms).map(function (arm, i) {
      return {
        type: "scatter", mode: "markers", name: arm, x: arms[arm].map(function (p) { return p.depth; }),
        y: arms[arm].map(function (p) { return p.blimp; }), text: arms[arm].map(function (p) { return "seed " + p.seed; }),
        marker: { size: 10, color: PALETTE[i % PALETTE.length], symbol: symbols[i % symbols.length] }
      };
    });
    Plotly.newPlot(el, traces, layout({ xaxis: { title: { text: "mean depth (iterations)" } }, yaxis: { title: { text: "BLiMP accuracy" } } }), config);
  }

  function ladderPlot(d) {
    var tasks = ["arc_easy", "arc_challenge", "hellaswag", "piqa", "winogrande", "sciq"];
    var traces = d.rows.map(function (r, i) {
      return {
        type: "bar", name: r.model + " @ " + r.tokens, x: tasks, y: tasks.map(function (t) { return r[t]; }),
        marker: { color: PALETTE[i % PALETTE.length] }
      };
    });
    Plotly.newPlot(el, traces, layout({ barmode: "group", yaxis: { title: { text: "accuracy" } } }), config);
  }

  function lossPlot(curves) {
    var traces = Object.keys(curves).map(function (arm, i) {
      return { type: "scatter", mode: "lines", name: arm, x: curves[arm].step, y: curves[arm].loss, line: { color: PALETTE[i % PALETTE.length] } };
    });
    Plotly.newPlot(el, traces, layout({ xaxis: { title: { text: "step" } }, yaxis: { title: { text: "training loss (nats)" } } }), config);
  }

  // Follow the theme toggle: recolour the plot's background and text when data-theme changes.
  new MutationObserver(function () {
    if (!el.data) { return; }
    Plotly.relayout(el, { paper_bgcolor: css("--bg"), plot_bgcolor: css("--bg"), "font.color": css("--fg") });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });

  var curves = read("bench-curves-data");
  if (curves) { lossPlot(curves); return; }
  var data = read("bench-plot-data");
  if (!data) { return; }
  if (data.type === "ratio") { ratioPlot(data); }
  else if (data.type === "curve") { curvePlot(data); }
  else if (data.type === "depth") { depthPlot(data); }
  else if (data.type === "ladder") { ladderPlot(data); }
})();
