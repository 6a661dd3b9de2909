// Findings timeline (an ES module): filter chips and the filter form swap the server-rendered results in place.
// Without JavaScript the same links and form load the full page, so this only saves the round trip.
function init() {
  const results = document.querySelector("[data-timeline-results]");
  const form = document.querySelector("[data-timeline-form]");
  const chips = document.querySelector("[data-timeline-filters]");
  if (!results || !window.fetch || !window.history) { return; }
  let pending = null;

  function fragmentUrl(url) {
    const target = new URL(url, window.location.href);
    target.searchParams.set("fragment", "1");
    return target;
  }

  function markChips(url) {
    if (!chips) { return; }
    const theme = new URL(url, window.location.href).searchParams.get("theme") || "";
    chips.querySelectorAll("a.chip").forEach(function (chip) {
      const chipTheme = new URL(chip.href).searchParams.get("theme") || "";
      if (chipTheme === theme) { chip.setAttribute("aria-current", "true"); } else { chip.removeAttribute("aria-current"); }
    });
    if (form && form.elements.theme) { form.elements.theme.value = theme; }
  }

  function load(url, push) {
    if (pending) { pending.abort(); }
    pending = new AbortController();
    results.setAttribute("aria-busy", "true");
    return fetch(fragmentUrl(url), { headers: { Accept: "text/html" }, signal: pending.signal })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        results.innerHTML = html;  // server-rendered, escaped by Django templates
        results.removeAttribute("aria-busy");
        markChips(url);
        if (push) { window.history.pushState({ timeline: true }, "", url); }
      })
      .catch(function (error) {
        if (error.name === "AbortError") { return; }
        window.location.assign(url);  // fall back to a full page load
      });
  }

  if (chips) {
    chips.addEventListener("click", function (event) {
      const chip = event.target.closest("a.chip");
      if (!chip || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) { return; }
      event.preventDefault();
      load(chip.href, true);
    });
  }
  results.addEventListener("click", function (event) {
    const badge = event.target.closest("a.theme-badge");
    if (!badge || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) { return; }
    event.preventDefault();
    load(badge.href, true);
  });
  if (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const params = new URLSearchParams();
      new FormData(form).forEach(function (value, key) { if (value) { params.set(key, value); } });
      const query = params.toString();
      load(form.action + (query ? "?" + query : ""), true);
    });
    form.querySelectorAll("select").forEach(function (select) {
      select.addEventListener("change", function () { form.requestSubmit(); });
    });
  }
  window.addEventListener("popstate", function () { load(window.location.href, false); });
}

init();
