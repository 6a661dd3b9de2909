// Council page (an ES module): the cost–accuracy scatter plot of the fair baselines (its numbers are in the table beneath).
// Okabe–Ito: the council in vermillion, every other arm in blue.
const COUNCIL = "#D55E00";
const OTHER = "#0072B2";

function cssVar(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name);
  return value ? value.trim() : fallback;
}

function draw() {
  const target = document.getElementById("council-cost-plot");
  const source = document.getElementById("council-cost-data");
  if (!target || !source || !window.Plotly) { return; }
  const arms = JSON.parse(source.textContent);
  const maxX = Math.max.apply(null, arms.map(function (a) { return a.generations; }));
  const fg = cssVar("--fg", "#1b1f24");
  const grid = cssVar("--border", "#d0d7de");
  const trace = {
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
  const layout = {
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
