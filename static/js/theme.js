// Dark mode: follows prefers-color-scheme until the reader chooses, then remembers the choice.
//
// The one classic script: it runs in <head>, before the first paint, so a stored choice never flashes the other
// theme. A module is deferred until the document is parsed, which is too late for that. Same dialect otherwise.
{
  const KEY = "eqlm-theme";
  const root = document.documentElement;
  const stored = () => {
    try { return localStorage.getItem(KEY); } catch { return null; }
  };
  const systemDark = () => window.matchMedia?.("(prefers-color-scheme: dark)").matches;
  const current = () => stored() || (systemDark() ? "dark" : "light");

  function apply(theme) {
    root.setAttribute("data-theme", theme);
    const button = document.getElementById("theme-toggle");
    if (button) {
      button.setAttribute("aria-pressed", theme === "dark" ? "true" : "false");
      button.querySelector(".theme-toggle-label").textContent = theme === "dark" ? "Light mode" : "Dark mode";
    }
    document.dispatchEvent(new CustomEvent("eqlm:themechange", { detail: { theme } }));
  }

  root.setAttribute("data-theme", current());
  document.addEventListener("DOMContentLoaded", () => {
    apply(current());
    document.getElementById("theme-toggle").addEventListener("click", () => {
      const next = current() === "dark" ? "light" : "dark";
      try { localStorage.setItem(KEY, next); } catch { /* private mode: still switch */ }
      apply(next);
    });
    window.matchMedia?.("(prefers-color-scheme: dark)")?.addEventListener("change", () => {
      if (!stored()) { apply(current()); }
    });
  });
}
