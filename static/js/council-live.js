// Live council chat: streams the council's answer token by token (coloured by the leading member, weights on
// hover/focus and in a table), then answers the same prompt with each member alone and with beta = 0 averaging,
// one request after another. The game itself runs on the server (eqlm/council.py). An ES module.
function start() {
  var root = document.getElementById("live");
  var form = document.getElementById("live-form");
  if (!root || !form) { return; }
  var endpoint = root.dataset.endpoint;
  var councilId = root.dataset.council;
  var allMembers = JSON.parse(document.getElementById("live-members").textContent).map(function (m) { return m.id; });
  var chat = document.getElementById("live-chat");
  var status = document.getElementById("live-status");
  var table = document.getElementById("live-weights");
  var tip = document.getElementById("live-tip");
  var alone = document.getElementById("live-alone");
  var send = document.getElementById("live-send");
  var history = [];
  var busy = false;

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function colourIndex(id) { return Math.max(0, allMembers.indexOf(id)) % 6; }

  function controls() {
    var members = Array.prototype.map.call(form.querySelectorAll("input[name=member]:checked"), function (c) { return c.value; });
    return {
      members: members,
      tau: parseFloat(form.tau.value),
      beta: parseFloat(form.beta.value),
      eta: parseFloat(form.eta.value),
      maxTokens: Math.max(1, parseInt(form.max_tokens.value, 10) || 48),
    };
  }

  ["tau", "beta", "eta"].forEach(function (name) {
    var input = form[name];
    var out = document.getElementById("live-" + name + "-value");
    input.addEventListener("input", function () { out.textContent = input.value; });
  });

  function body(model, messages, maxTokens, kinetic, stream) {
    var payload = { model: model, messages: messages, max_tokens: maxTokens, temperature: 0, stream: stream };
    if (kinetic) { payload.kinetic = kinetic; }
    return JSON.stringify(payload);
  }

  function post(payload) {
    return fetch(endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
      body: payload,
    });
  }

  async function errorText(response) {
    try {
      var data = await response.json();
      var e = data.error || {};
      return (e.param ? e.param + ": " : "") + (e.message || response.statusText);
    } catch (err) {
      return response.status + " " + response.statusText;
    }
  }

  function weightsText(entry, members) {
    return members.map(function (m, i) { return m + " " + entry.weights[i].toFixed(3); }).join(" · ");
  }

  function tableHead(members) {
    var row = table.tHead.rows[0];
    while (row.cells.length > 3) { row.deleteCell(3); }
    members.forEach(function (m) {
      var th = document.createElement("th");
      th.scope = "col"; th.className = "num"; th.textContent = "w " + m;
      row.appendChild(th);
    });
    ["Iterations", "Converged"].forEach(function (label) {
      var th = document.createElement("th");
      th.scope = "col"; th.textContent = label;
      row.appendChild(th);
    });
    table.tBodies[0].textContent = "";
  }

  function visible(text) {
    return text.replace(/\n/g, "↵").replace(/ /g, "␣") || "(part of a character)";
  }

  function addToken(target, entry, members) {
    var n = table.tBodies[0].rows.length + 1;
    if (entry.text) {
      var span = document.createElement("span");
      span.className = "live-token lead-" + colourIndex(entry.leader);
      span.tabIndex = 0;
      span.textContent = entry.text;
      span.dataset.leader = entry.leader;
      span.dataset.weights = weightsText(entry, members);
      span.setAttribute("aria-describedby", "live-tip"); // the tip says the leader and weights on focus
      target.appendChild(span);
    }
    var tr = table.tBodies[0].insertRow();
    tr.className = "lead-row-" + colourIndex(entry.leader);
    var cells = [String(n), visible(entry.text), entry.leader];
    entry.weights.forEach(function (w) { cells.push(w.toFixed(3)); });
    cells.push(String(entry.iterations), entry.converged ? "yes" : "no");
    cells.forEach(function (text, i) {
      var td = tr.insertCell();
      td.textContent = text;
      if (i === 0 || (i >= 3 && i < 3 + entry.weights.length) || i === 3 + entry.weights.length) { td.className = "num"; }
    });
  }

  function showTip(span) {
    tip.textContent = "led by " + span.dataset.leader + ": " + span.dataset.weights;
    tip.hidden = false;
    var box = span.getBoundingClientRect();
    var host = root.getBoundingClientRect();
    tip.style.left = Math.max(0, Math.min(box.left - host.left, host.width - 260)) + "px";
    tip.style.top = (box.bottom - host.top + 4) + "px";
  }
  function hideTip() { tip.hidden = true; }
  chat.addEventListener("mouseover", function (e) { if (e.target.classList.contains("live-token")) { showTip(e.target); } });
  chat.addEventListener("focusin", function (e) { if (e.target.classList.contains("live-token")) { showTip(e.target); } });
  chat.addEventListener("mouseout", hideTip);
  chat.addEventListener("focusout", hideTip);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") { hideTip(); } });

  function bubble(who, cls) {
    var li = document.createElement("li");
    li.className = "chat-msg " + cls;
    var name = document.createElement("span");
    name.className = "chat-who";
    name.textContent = who;
    var p = document.createElement("p");
    li.appendChild(name);
    li.appendChild(p);
    chat.appendChild(li);
    return p;
  }

  // Reads server-sent events; calls onChunk for every JSON payload before [DONE].
  async function readEvents(response, onChunk) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    for (;;) {
      var part = await reader.read();
      if (part.done) { break; }
      buffer += decoder.decode(part.value, { stream: true });
      var cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        var event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        var data = event.replace(/^data: /, "");
        if (data === "[DONE]") { return; }
        onChunk(JSON.parse(data));
      }
    }
  }

  async function council(messages, c) {
    var kinetic = { members: c.members, tau: c.tau, beta: c.beta, eta: c.eta };
    var response = await post(body(councilId, messages, c.maxTokens, kinetic, true));
    if (!response.ok) { throw new Error(await errorText(response)); }
    var target = bubble("Council (" + c.members.join(" + ") + ")", "chat-council");
    tableHead(c.members);
    var text = "";
    await readEvents(response, function (chunk) {
      if (chunk.error) { throw new Error(chunk.error.message); }
      var entries = (chunk.eqlm && chunk.eqlm.council && chunk.eqlm.council.tokens) || [];
      entries.forEach(function (entry) { addToken(target, entry, c.members); text += entry.text; });
    });
    status.textContent = "The council answered with " + table.tBodies[0].rows.length + " tokens.";
    return text;
  }

  async function single(label, model, messages, c, kinetic) {
    var li = document.createElement("li");
    var h = document.createElement("h4");
    h.textContent = label;
    var p = document.createElement("p");
    p.className = "live-alone-text";
    p.textContent = "…";
    li.appendChild(h); li.appendChild(p);
    alone.appendChild(li);
    var response = await post(body(model, messages, c.maxTokens, kinetic, false));
    if (!response.ok) { p.textContent = await errorText(response); return; }
    var data = await response.json();
    p.textContent = data.choices[0].message.content;
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    if (busy) { return; }
    var c = controls();
    var message = form.message.value.trim();
    if (c.members.length < 2) { status.textContent = "Choose at least two members."; return; }
    if (!message) { status.textContent = "Type a message first."; return; }
    busy = true;
    send.disabled = true;
    status.textContent = "The council is answering…";
    bubble("You", "chat-user").textContent = message;
    history.push({ role: "user", content: message });
    var messages = history.slice();
    try {
      var answer = await council(messages, c);
      history.push({ role: "assistant", content: answer });
      alone.textContent = "";
      if (form.compare.checked) {
        for (var i = 0; i < c.members.length; i++) {
          if (c.members.indexOf(c.members[i]) !== i) { continue; }
          await single(c.members[i] + " alone", c.members[i], messages, c, null);
        }
        await single("Averaging (β = 0, τ = 0)", councilId, messages, c, { members: c.members, beta: 0, tau: 0 });
        status.textContent += " The members alone and averaging are beside it.";
      }
    } catch (err) {
      status.textContent = "Failed: " + err.message;
    } finally {
      busy = false;
      send.disabled = false;
    }
  });

  document.getElementById("live-reset").addEventListener("click", function () {
    history = [];
    chat.textContent = "";
    alone.textContent = "";
    table.tBodies[0].textContent = "";
    status.textContent = "New conversation.";
  });
}

start();
