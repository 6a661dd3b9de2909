// An experiment's runs while they go: poll the runs API every 5 s and rewrite the table's cells (text only) until
// no run is queued or running. The page's first render already holds every figure; this only keeps it current.
const table = document.getElementById("experiment-runs");

const fixed = (v, digits) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));

function cells(run) {
  return {
    status: run.status + (run.status === "running" ? ` (${run.phase})` : ""),
    step: run.step + (run.planned_steps ? `/${run.planned_steps}` : ""),
    loss: fixed(run.loss, 4),
    eta: run.eta_seconds ? `${Math.round(run.eta_seconds)} s` : "–",
    message: (run.message || "–") + (run.error ? ` ${run.error}` : ""),
  };
}

async function poll(url) {
  let body;
  try {
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    body = response.ok ? await response.json() : null;
  } catch {
    window.setTimeout(() => poll(url), 15000);
    return;
  }
  if (!body) { return; }
  let going = false;
  for (const run of body.runs) {
    const row = table.querySelector(`tr[data-run="${run.arm}:${run.seed}"]`);
    if (!row) { continue; }
    for (const [field, value] of Object.entries(cells(run))) {
      const cell = row.querySelector(`[data-field="${field}"]`);
      if (cell && cell.textContent !== value) { cell.textContent = value; }
    }
    going = going || run.status === "queued" || run.status === "running";
  }
  if (going) { window.setTimeout(() => poll(url), 5000); }
}

if (table) {
  const url = table.dataset.url;
  window.setTimeout(() => poll(url), 5000);
}
