/* A plot's y-axis on the range that matters: the first iterations of a fixed-point solve (bits/byte at depth 1,
   the residual at iteration 1) are orders of magnitude off the rest and would squash it. `focus` gives the y range
   of the points from `from` on and lists the earlier points that fall outside it; `offScaleTrace` marks those at
   the axis's edge with their values, so nothing is hidden. An ES module. */
function finite(v) { return typeof v === "number" && isFinite(v); }

/* series: [{name, x: [...], y: [...]}]; options: {from: first x of the focus, log: log axis, pad: share of the
   span added each side}. Returns {range (axis units: log10 on a log axis), off: [{name, x, y, side}], clipped}. */
export function focus(series, options) {
  const opts = options || {};
  const from = opts.from === undefined ? 2 : opts.from;
  const log = !!opts.log;
  const pad = opts.pad === undefined ? 0.06 : opts.pad;
  const t = function (v) { return log ? Math.log10(v) : v; };
  const kept = [];
  series.forEach(function (s) {
    s.x.forEach(function (x, i) {
      const y = s.y[i];
      if (finite(y) && (!log || y > 0) && x >= from) kept.push(t(y));
    });
  });
  if (!kept.length) return { range: null, off: [], clipped: false };
  let lo = Math.min.apply(null, kept);
  let hi = Math.max.apply(null, kept);
  const span = hi - lo || Math.abs(hi) * 0.1 || 1;
  lo -= span * pad;
  hi += span * pad;
  const off = [];
  series.forEach(function (s) {
    s.x.forEach(function (x, i) {
      const y = s.y[i];
      if (!finite(y) || (log && y <= 0)) return;
      if (t(y) > hi) off.push({ name: s.name, x: x, y: y, side: "above" });
      else if (t(y) < lo) off.push({ name: s.name, x: x, y: y, side: "below" });
    });
  });
  return { range: [lo, hi], off: off, clipped: off.length > 0 };
}

function short(v) {
  return Math.abs(v) >= 1e4 || Math.abs(v) < 1e-3 ? v.toExponential(1) : String(Number(v.toPrecision(3)));
}

/* A marker trace: each off-scale point drawn at the edge it passed (▲ above, ▼ below), its value in the hover
   and, for the first of each x, as a label. */
export function offScaleTrace(result, options) {
  const opts = options || {};
  const xName = opts.xName || "depth";
  const log = !!opts.log;
  const edge = function (side) {
    const v = side === "above" ? result.range[1] : result.range[0];
    return log ? Math.pow(10, v) : v;
  };
  return {
    type: "scatter", mode: "markers", name: "off the scale (value in the label)", showlegend: false,
    x: result.off.map(function (p) { return p.x; }),
    y: result.off.map(function (p) { return edge(p.side); }),
    text: result.off.map(function (p) { return p.name + ", " + xName + " " + p.x + ": " + short(p.y); }),
    hovertemplate: "%{text} (off the scale)<extra></extra>", cliponaxis: false,
    marker: {
      symbol: result.off.map(function (p) { return p.side === "above" ? "triangle-up" : "triangle-down"; }),
      size: 9, color: opts.color || "#666",
    },
  };
}

/* One sentence for the caption: "Off the scale (marked ▲): depth 1 (16.5, 9.89), depth 2 (8.21)." */
export function note(result, xName) {
  if (!result.clipped) return "";
  const byX = {};
  result.off.forEach(function (p) { (byX[p.x] = byX[p.x] || []).push(short(p.y)); });
  const parts = Object.keys(byX).sort(function (a, b) { return a - b; }).map(function (x) {
    return (xName || "depth") + " " + x + " (" + byX[x].join(", ") + ")";
  });
  return "Off the scale, marked ▲ at the edge: " + parts.join(", ") + ".";
}
