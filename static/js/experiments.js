// An experiment's plot (plotly, served by the portal): held-out bits/byte by depth per arm and start, each seed
// thin, the mean thick, and the mean's interval as a band when there are several seeds. The page's tables hold
// every plotted number.
(function () {
  "use strict";
  var PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];
  var DASHES = ["solid", "dash", "dot", "dashdot"];
  var el = document.getElementById("experiment-plot");
  var node = document.getElementById("experiment-plot-data");
  if (!el || !node || typeof Plotly === "undefined") { return; }
  var data = JSON.parse(node.textContent);

  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }
  function isNum(v) { return v !== null && v !== undefined; }

  var traces = [];
  var maxDepth = 1;
  var seriesIndex = 0;
  data.arms.forEach(function (arm, a) {
    arm.series.forEach(function (s, k) {
      var colour = PALETTE[seriesIndex % PALETTE.length];
      var dash = DASHES[k % DASHES.length];
      var name = arm.label + (s.start ? " (" + s.start + ")" : "");
      var x = s.rows.map(function (r) { return r.depth; });
      maxDepth = Math.max.apply(null, [maxDepth].concat(x));
      if (s.seeds.length > 1) {
        var band = s.rows.filter(function (r) { return isNum(r.ci_low); });
        traces.push({
          type: "scatter", mode: "lines", name: name + " interval", legendgroup: name, showlegend: false,
          x: band.map(function (r) { return r.depth; }).concat(band.map(function (r) { return r.depth; }).reverse()),
          y: band.map(function (r) { return r.ci_high; }).concat(band.map(function (r) { return r.ci_low; }).reverse()),
          fill: "toself", fillcolor: colour + "33", line: { width: 0 }, hoverinfo: "skip"
        });
      }
      s.seeds.forEach(function (seed) {
        traces.push({
          type: "scatter", mode: "lines", name: name + " seed " + seed, legendgroup: name, showlegend: false,
          x: x, y: s.rows.map(function (r) { return r.per_seed[String(seed)]; }),
          line: { color: colour, width: 1, dash: dash }, opacity: 0.6
        });
      });
      traces.push({
        type: "scatter", mode: "lines+markers", name: name + (s.seeds.length > 1 ? " mean" : ""), legendgroup: name,
        x: x, y: s.rows.map(function (r) { return r.mean; }), line: { color: colour, width: 3, dash: dash }
      });
      seriesIndex += 1;
    });
  });
  var layout = {
    paper_bgcolor: css("--bg") || "#fff", plot_bgcolor: css("--bg") || "#fff",
    font: { color: css("--fg") || "#1b1f24" }, margin: { t: 30, r: 20, b: 50, l: 60 },
    legend: { orientation: "h", y: -0.25 },
    xaxis: { title: { text: "depth (iterations)" }, type: maxDepth > 32 ? "log" : "linear" },
    yaxis: { title: { text: "held-out bits/byte" } }
  };
  Plotly.newPlot(el, traces, layout, { displaylogo: false, responsive: true });

  new MutationObserver(function () {
    Plotly.relayout(el, { paper_bgcolor: css("--bg"), plot_bgcolor: css("--bg"), "font.color": css("--fg") });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
})();
