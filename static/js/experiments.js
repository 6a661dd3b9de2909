// An experiment's plot (plotly, served by the portal): held-out bits/byte by depth per arm and start, each seed
// thin, the mean thick, and the mean's interval as a band when there are several seeds. The page's tables hold
// every plotted number.
import { DASHES, logAxis, seriesStyle } from "./plot-style.js";

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
const isNum = (v) => v !== null && v !== undefined;

function tracesOf(data) {
  const traces = [];
  let maxDepth = 1;
  let seriesIndex = 0;
  for (const arm of data.arms) {
    arm.series.forEach((s, k) => {
      const colour = seriesStyle(seriesIndex).color;
      const dash = DASHES[k % DASHES.length];
      const name = arm.label + (s.start ? ` (${s.start})` : "");
      const x = s.rows.map((r) => r.depth);
      maxDepth = Math.max(maxDepth, ...x);
      if (s.seeds.length > 1) {
        const band = s.rows.filter((r) => isNum(r.ci_low));
        const depths = band.map((r) => r.depth);
        traces.push({
          type: "scatter", mode: "lines", name: `${name} interval`, legendgroup: name, showlegend: false,
          x: depths.concat([...depths].reverse()),
          y: band.map((r) => r.ci_high).concat(band.map((r) => r.ci_low).reverse()),
          fill: "toself", fillcolor: `${colour}33`, line: { width: 0 }, hoverinfo: "skip",
        });
      }
      for (const seed of s.seeds) {
        traces.push({
          type: "scatter", mode: "lines", name: `${name} seed ${seed}`, legendgroup: name, showlegend: false,
          x, y: s.rows.map((r) => r.per_seed[String(seed)]),
          line: { color: colour, width: 1, dash }, opacity: 0.6,
        });
      }
      traces.push({
        type: "scatter", mode: "lines+markers", name: name + (s.seeds.length > 1 ? " mean" : ""), legendgroup: name,
        x, y: s.rows.map((r) => r.mean), line: { color: colour, width: 3, dash },
      });
      seriesIndex += 1;
    });
  }
  return { traces, maxDepth };
}

const el = document.getElementById("experiment-plot");
const node = document.getElementById("experiment-plot-data");
if (el && node && typeof Plotly !== "undefined") {
  const { traces, maxDepth } = tracesOf(JSON.parse(node.textContent));
  const layout = {
    paper_bgcolor: css("--bg") || "#fff", plot_bgcolor: css("--bg") || "#fff",
    font: { color: css("--fg") || "#1b1f24" }, margin: { t: 30, r: 20, b: 50, l: 60 },
    legend: { orientation: "h", y: -0.25 },
    xaxis: {
      title: { text: maxDepth > 32 ? "depth (iterations, log scale)" : "depth (iterations)" },
      ...(maxDepth > 32 ? logAxis(traces.flatMap((t) => t.x), { powersOfTwo: true }) : { type: "linear" }),
    },
    yaxis: { title: { text: "held-out bits/byte" } },
  };
  Plotly.newPlot(el, traces, layout, { displaylogo: false, responsive: true });
  new MutationObserver(() => {
    Plotly.relayout(el, { paper_bgcolor: css("--bg"), plot_bgcolor: css("--bg"), "font.color": css("--fg") });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
}
