// Poll the status of unfinished uploads on the staff upload page.
(function () {
  "use strict";
  var node = document.getElementById("pending-uploads");
  if (!node) { return; }
  var pending = JSON.parse(node.textContent);
  function poll() {
    if (!pending.length) { return; }
    pending.forEach(function (id) {
      fetch("/api/benchmarks/uploads/" + id + "/", { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (u) {
          if (!u) { return; }
          var row = document.querySelector('tr[data-upload="' + id + '"]');
          if (!row) { return; }
          row.querySelector(".upload-status").textContent = u.status;
          row.querySelector(".upload-rows").textContent = u.rows_created;
          row.querySelector(".upload-summary").textContent = u.error || u.summary;
          if (u.status === "done" || u.status === "failed") {
            pending = pending.filter(function (p) { return p !== id; });
          }
        })
        .catch(function () { /* try again on the next tick */ });
    });
    window.setTimeout(poll, 1500);
  }
  window.setTimeout(poll, 1000);
})();
