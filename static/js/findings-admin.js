// Admin: a live preview under each Markdown body field, rendered and sanitised by the server.
const match = window.location.pathname.match(/^(.*\/findings_app\/(?:finding|recordnote)\/)/);

function csrfToken() {
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

function attach(textarea, previewUrl) {
  const panel = document.createElement("div");
  panel.className = "markdown-preview";
  panel.setAttribute("aria-live", "polite");
  const label = document.createElement("p");
  label.className = "markdown-preview-label";
  label.textContent = "Preview";
  const body = document.createElement("div");
  body.className = "markdown-preview-body";
  panel.append(label, body);
  textarea.insertAdjacentElement("afterend", panel);
  let timer = null;

  async function refresh() {
    const data = new URLSearchParams({ text: textarea.value });
    try {
      const response = await fetch(previewUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(), "Content-Type": "application/x-www-form-urlencoded" },
        body: data.toString(),
      });
      if (!response.ok) { throw new Error(String(response.status)); }
      body.innerHTML = (await response.json()).html; // sanitised with nh3 on the server
    } catch {
      body.textContent = "Preview unavailable.";
    }
  }

  textarea.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(refresh, 300);
  });
  refresh();
}

// A module runs once the document is parsed: the fields are there.
if (match) {
  for (const textarea of document.querySelectorAll("textarea[name=body]")) { attach(textarea, `${match[1]}preview/`); }
}
