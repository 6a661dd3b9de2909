/* The portal's plot style, one place for every page (an ES module): eleven colours no reader confuses (no two blues,
   no two oranges), then dash patterns once a plot has more series than colours; a series of one point drawn as a
   marker on top of the lines; log axes labelled at major ticks only. */

// Tableau 10 (distinct in hue and lightness, made to be told apart) and black.
export const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
  "#000000",
];
export const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
export const PATTERNS = ["", "/", "x", ".", "-", "|"];

/* The colour and dash of the i-th series: colours first, then the same colours dashed, and so on. */
export function seriesStyle(i) {
  const round = Math.floor(i / PALETTE.length);
  return {
    color: PALETTE[i % PALETTE.length],
    dash: DASHES[round % DASHES.length],
    pattern: PATTERNS[round % PATTERNS.length],
  };
}

function pointCount(trace) {
  const values = trace.x || trace.y || [];
  return values.filter((v) => v !== null && v !== undefined).length;
}

/* Give each series (traces sharing a legendgroup, else a name) its own colour and dash, in order of appearance.
   Traces marked `meta: "keep-style"` (a band, an off-scale marker) keep theirs. A scatter series of one point
   becomes a marker large enough to see, drawn after the lines so that no line hides it. */
export function styleTraces(traces) {
  const groups = [];
  const styled = traces.map((trace) => {
    if (trace.meta === "keep-style") return trace;
    const key = trace.legendgroup || trace.name;
    if (!groups.includes(key)) groups.push(key);
    const style = seriesStyle(groups.indexOf(key));
    const out = { ...trace, legendgroup: key };
    if (trace.type === "bar") {
      out.marker = { ...(trace.marker || {}), color: style.color, pattern: { shape: style.pattern } };
      return out;
    }
    out.line = { ...(trace.line || {}), color: style.color, dash: (trace.line && trace.line.dash) || style.dash };
    out.marker = { ...(trace.marker || {}), color: style.color };
    if (trace.error_y) out.error_y = { ...trace.error_y, color: style.color };
    if (trace.error_x) out.error_x = { ...trace.error_x, color: style.color };
    if (trace.type !== "bar" && pointCount(trace) === 1) {
      out.mode = "markers";
      const open = String(out.marker.symbol || "").includes("open");
      // A white rim lifts a filled marker off the lines under it; an open marker is all rim, so it keeps its colour.
      const rim = open ? { width: 2, color: style.color } : { width: 1.5, color: "#ffffff" };
      out.marker = { ...out.marker, size: Math.max(12, (trace.marker && trace.marker.size) || 0), line: rim };
      out.single = true;
    }
    return out;
  });
  // Single points last: drawn on top of every line.
  return [...styled.filter((t) => !t.single), ...styled.filter((t) => t.single)].map(({ single, ...t }) => t);
}

/* A log axis that labels major ticks only: powers of two for depths (1, 2, 4, ... max), else powers of ten. */
export function logAxis(values, { powersOfTwo = false } = {}) {
  const finite = values.filter((v) => typeof v === "number" && v > 0 && isFinite(v));
  if (!finite.length) return { type: "log" };
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  if (powersOfTwo) {
    const tickvals = [];
    for (let v = Math.pow(2, Math.floor(Math.log2(lo))); v <= hi * 1.0001; v *= 2) tickvals.push(v);
    return { type: "log", tickmode: "array", tickvals, ticktext: tickvals.map(String), minor: { showgrid: false } };
  }
  return { type: "log", dtick: 1, exponentformat: "power", minor: { showgrid: false } };
}
