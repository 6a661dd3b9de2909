// Admin: a live preview under each Markdown body field, rendered and sanitised by the server.
(function () {
  "use strict";
  var match = window.location.pathname.match(/^(.*\/findings_app\/(?:finding|recordnote)\/)/);
  if (!match) { return; }
  var previewUrl = match[1] + "preview/";

  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function attach(textarea) {
    var panel = document.createElement("div");
    panel.className = "markdown-preview";
    panel.setAttribute("aria-live", "polite");
    var label = document.createElement("p");
    label.className = "markdown-preview-label";
    label.textContent = "Preview";
    var body = document.createElement("div");
    body.className = "markdown-preview-body";
    panel.appendChild(label);
    panel.appendChild(body);
    textarea.insertAdjacentElement("afterend", panel);
    var timer = null;

    function refresh() {
      var data = new URLSearchParams();
      data.set("text", textarea.value);
      fetch(previewUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(), "Content-Type": "application/x-www-form-urlencoded" },
        body: data.toString()
      })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (payload) { body.innerHTML = payload.html; })  // sanitised with nh3 on the server
        .catch(function () { body.textContent = "Preview unavailable."; });
    }

    textarea.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, 300);
    });
    refresh();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[name=body]").forEach(attach);
  });
})();
