// An experiment's runs while they go: poll the runs API every 5 s and rewrite the table's cells (text only) until
// no run is queued or running. The page's first render already holds every figure; this only keeps it current.
(function () {
  "use strict";
  var table = document.getElementById("experiment-runs");
  if (!table) { return; }
  var url = table.getAttribute("data-url");

  function fixed(v, digits) { return v === null || v === undefined ? "–" : Number(v).toFixed(digits); }
  function cells(run) {
    return {
      status: run.status + (run.status === "running" ? " (" + run.phase + ")" : ""),
      step: run.step + (run.planned_steps ? "/" + run.planned_steps : ""),
      loss: fixed(run.loss, 4),
      eta: run.eta_seconds ? Math.round(run.eta_seconds) + " s" : "–",
      message: (run.message || "–") + (run.error ? " " + run.error : "")
    };
  }
  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        if (!body) { return; }
        var going = false;
        body.runs.forEach(function (run) {
          var row = table.querySelector('tr[data-run="' + run.arm + ":" + run.seed + '"]');
          if (!row) { return; }
          var values = cells(run);
          Object.keys(values).forEach(function (field) {
            var cell = row.querySelector('[data-field="' + field + '"]');
            if (cell && cell.textContent !== values[field]) { cell.textContent = values[field]; }
          });
          going = going || run.status === "queued" || run.status === "running";
        });
        if (going) { window.setTimeout(poll, 5000); }
      })
      .catch(function () { window.setTimeout(poll, 15000); });
  }
  window.setTimeout(poll, 5000);
})();
