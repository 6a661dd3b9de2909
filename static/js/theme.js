// Dark mode: follows prefers-color-scheme until the reader chooses, then remembers the choice.
(function () {
  "use strict";
  var KEY = "eqlm-theme";
  var root = document.documentElement;
  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }
  function systemDark() {
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }
  function current() {
    return stored() || (systemDark() ? "dark" : "light");
  }
  function apply(theme) {
    root.setAttribute("data-theme", theme);
    var button = document.getElementById("theme-toggle");
    if (button) {
      button.setAttribute("aria-pressed", theme === "dark" ? "true" : "false");
      button.querySelector(".theme-toggle-label").textContent = theme === "dark" ? "Light mode" : "Dark mode";
    }
    document.dispatchEvent(new CustomEvent("eqlm:themechange", { detail: { theme: theme } }));
  }
  root.setAttribute("data-theme", current());
  document.addEventListener("DOMContentLoaded", function () {
    apply(current());
    document.getElementById("theme-toggle").addEventListener("click", function () {
      var next = current() === "dark" ? "light" : "dark";
      try { localStorage.setItem(KEY, next); } catch (e) { /* private mode: still switch */ }
      apply(next);
    });
    if (window.matchMedia) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () {
        if (!stored()) { apply(current()); }
      });
    }
  });
})();
