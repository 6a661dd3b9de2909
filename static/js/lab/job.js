/* A lab job's page: poll GET /api/lab/jobs/<id>/ until it is done or failed, then draw the results. */
import { render, renderSweep } from "./render.js";

const initial = JSON.parse(document.getElementById("job-data").textContent);
const bar = document.getElementById("job-progress");
const text = document.getElementById("job-progress-text");
const badge = document.getElementById("job-status");
const errorBox = document.getElementById("job-error");
const body = document.getElementById("results-body");
const LABELS = { queued: "Queued", running: "Running", done: "Done", failed: "Failed" };
const CLASSES = { queued: "badge-info", running: "badge-info", done: "badge-ok", failed: "badge-bad" };

let latest = initial;
function show(job) {
  latest = job;
  bar.value = job.progress;
  bar.textContent = `${Math.round(job.progress * 100)}%`;
  text.textContent = `${Math.round(job.progress * 100)}%${job.progress_message ? " — " + job.progress_message : ""}`;
  badge.textContent = LABELS[job.status] || job.status;
  badge.className = `badge ${CLASSES[job.status] || "badge-neutral"}`;
  if (job.status === "failed") {
    errorBox.hidden = false;
    errorBox.textContent = job.error || "The job failed.";
    body.replaceChildren();
  }
  if (job.status === "done" && job.result) {
    if (job.result.runs) renderSweep(body, job.result);
    else render(body, job.result, null);
    body.dataset.ready = "1";
  }
}
async function poll(delay) {
  try {
    const response = await fetch(initial.api_url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (response.ok) {
      const job = await response.json();
      show(job);
      if (job.status === "done" || job.status === "failed") return;
    }
  } catch (err) {
    text.textContent = "Lost contact with the server; retrying…";
  }
  setTimeout(() => poll(Math.min(delay * 1.5, 5000)), delay);
}
document.addEventListener("eqlm:themechange", () => show(latest)); // plot colours follow the theme
show(initial);
if (initial.status !== "done" && initial.status !== "failed") setTimeout(() => poll(500), 300);
