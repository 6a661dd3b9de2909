// Council page: the cost–accuracy scatter plot of the fair baselines (its numbers are in the table beneath).
(function () {
  "use strict";
  // Okabe–Ito: the council in vermillion, every other arm in blue.
  var COUNCIL = "#D55E00";
  var OTHER = "#0072B2";

  function cssVar(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name);
    return value ? value.trim() : fallback;
  }

  function draw() {
    var target = document.getElementById("council-cost-plot");
    var source = document.getElementById("council-cost-data");
    if (!target || !source || !window.Plotly) { return; }
    var arms = JSON.parse(source.textContent);
    var maxX = Math.max.apply(null, arms.map(function (a) { return a.generations; }));
    var fg = cssVar("--fg", "#1b1f24");
    var grid = cssVar("--border", "#d0d7de");
    var trace = {
      type: "scatter",
      mode: "markers+text",
      x: arms.map(function (a) { return a.generations; }),
      y: arms.map(function (a) { return a.accuracy; }),
      text: arms.map(function (a) { return a.label; }),
      textposition: arms.map(function (a) { return a.council ? "top right" : "bottom right"; }),
      hovertemplate: "%{text}<br>accuracy %{y:.4f}<br>%{x} generations per request<extra></extra>",
      marker: {
        size: arms.map(function (a) { return a.council ? 16 : 11; }),
        color: arms.map(function (a) { return a.council ? COUNCIL : OTHER; }),
        symbol: arms.map(function (a) { return a.council ? "diamond" : "circle"; }),
        line: { width: 1, color: fg }
      },
      textfont: { color: fg, size: 12 },
      cliponaxis: false
    };
    var layout = {
      margin: { l: 60, r: 40, t: 20, b: 50 },
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: fg },
      xaxis: { title: { text: "generations per request" }, gridcolor: grid, zerolinecolor: grid, range: [0, maxX * 1.35 + 0.2] },
      yaxis: { title: { text: "accuracy" }, gridcolor: grid, zerolinecolor: grid, tickformat: ".2f" },
      showlegend: false
    };
    window.Plotly.react(target, [trace], layout, { displaylogo: false, responsive: true });
  }

  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("eqlm:themechange", draw);
})();
