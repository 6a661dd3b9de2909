/* Poll the status of unfinished uploads on the staff upload page; each row names its API URL in data-endpoint. */
const node = document.getElementById("pending-uploads");
let pending = node ? JSON.parse(node.textContent) : [];

async function refresh(id) {
  const row = document.querySelector(`tr[data-upload="${id}"]`);
  if (!row) return;
  try {
    const response = await fetch(row.dataset.endpoint, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const upload = await response.json();
    row.querySelector(".upload-status").textContent = upload.status;
    row.querySelector(".upload-rows").textContent = upload.rows_created;
    row.querySelector(".upload-summary").textContent = upload.error || upload.summary;
    if (upload.status === "done" || upload.status === "failed") pending = pending.filter((p) => p !== id);
  } catch (err) {
    /* try again on the next tick */
  }
}

function poll() {
  if (!pending.length) return;
  pending.forEach(refresh);
  window.setTimeout(poll, 1500);
}
if (pending.length) window.setTimeout(poll, 1000);
