// Live council chat: streams the council's answer token by token (coloured by the leading member, weights and
// reputations on hover/focus and in a table), then answers the same prompt with each member alone and with
// beta = 0 averaging, one request after another. The game and its memory run on the server (eqlm/council.py).
const root = document.getElementById("live");
const form = document.getElementById("live-form");

const csrfToken = () => form.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";
const visible = (text) => text.replace(/\n/g, "↵").replace(/ /g, "␣") || "(part of a character)";
const listed = (members, values) => members.map((m, i) => `${m} ${values[i].toFixed(3)}`).join(" · ");

function start() {
  const endpoint = root.dataset.endpoint;
  const councilId = root.dataset.council;
  const allMembers = JSON.parse(document.getElementById("live-members").textContent).map((m) => m.id);
  const chat = document.getElementById("live-chat");
  const status = document.getElementById("live-status");
  const table = document.getElementById("live-weights");
  const tip = document.getElementById("live-tip");
  const alone = document.getElementById("live-alone");
  const send = document.getElementById("live-send");
  let history = [];
  let busy = false;

  const colourIndex = (id) => Math.max(0, allMembers.indexOf(id)) % 6;

  function controls() {
    const number = (name) => parseFloat(form[name].value);
    return {
      members: Array.from(form.querySelectorAll("input[name=member]:checked"), (c) => c.value),
      kinetic: {
        tau: number("tau"), beta: number("beta"), eta: number("eta"), pool: form.pool.value,
        memory: form.memory.value, share: number("share"), learning_rate: number("learning_rate"),
      },
      sampling: { temperature: number("temperature"), top_p: number("top_p"), seed: parseInt(form.seed.value, 10) || 0 },
      maxTokens: Math.max(1, parseInt(form.max_tokens.value, 10) || 48),
    };
  }

  for (const name of ["tau", "beta", "eta", "temperature", "top_p"]) {
    const input = form[name];
    const out = document.getElementById(`live-${name}-value`);
    input.addEventListener("input", () => { out.textContent = input.value; });
  }
  const memoryFields = ["live-share-field", "live-learning_rate-field"].map((id) => document.getElementById(id));
  const showMemory = () => {
    for (const field of memoryFields) { field.hidden = form.memory.value !== "fixed_share"; }
  };
  form.memory.addEventListener("change", showMemory);
  showMemory();

  function body(model, messages, c, kinetic, stream) {
    const payload = { model, messages, max_tokens: c.maxTokens, stream, ...c.sampling };
    if (kinetic) { payload.kinetic = kinetic; }
    return JSON.stringify(payload);
  }

  const post = (payload) => fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: payload,
  });

  async function errorText(response) {
    try {
      const e = (await response.json()).error || {};
      return (e.param ? `${e.param}: ` : "") + (e.message || response.statusText);
    } catch {
      return `${response.status} ${response.statusText}`;
    }
  }

  function headCell(row, text, numeric) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    if (numeric) { th.className = "num"; }
    row.appendChild(th);
  }

  function tableHead(members, memory) {
    const row = table.tHead.rows[0];
    while (row.cells.length > 3) { row.deleteCell(3); }
    for (const m of members) { headCell(row, `w ${m}`, true); }
    if (memory) { for (const m of members) { headCell(row, `π ${m}`, true); } }
    headCell(row, "Game updates", true);
    headCell(row, "Converged", false);
    table.tBodies[0].textContent = "";
  }

  function addToken(target, entry, members) {
    const n = table.tBodies[0].rows.length + 1;
    const reputations = entry.reputations || [];
    if (entry.text) {
      const span = document.createElement("span");
      span.className = `live-token lead-${colourIndex(entry.leader)}`;
      span.tabIndex = 0;
      span.textContent = entry.text;
      span.dataset.leader = entry.leader;
      span.dataset.weights = listed(members, entry.weights);
      if (reputations.length) { span.dataset.reputations = listed(members, reputations); }
      span.setAttribute("aria-describedby", "live-tip"); // the tip says the leader and weights on focus
      target.appendChild(span);
    }
    const tr = table.tBodies[0].insertRow();
    tr.className = `lead-row-${colourIndex(entry.leader)}`;
    const numbers = [...entry.weights, ...reputations].map((w) => w.toFixed(3));
    const cells = [[String(n), true], [visible(entry.text), false], [entry.leader, false]]
      .concat(numbers.map((text) => [text, true]))
      .concat([[String(entry.iterations), true], [entry.converged ? "yes" : "no", false]]);
    for (const [text, numeric] of cells) {
      const td = tr.insertCell();
      td.textContent = text;
      if (numeric) { td.className = "num"; }
    }
  }

  function showTip(span) {
    const memory = span.dataset.reputations ? `; reputations ${span.dataset.reputations}` : "";
    tip.textContent = `led by ${span.dataset.leader}: ${span.dataset.weights}${memory}`;
    tip.hidden = false;
    const box = span.getBoundingClientRect();
    const host = root.getBoundingClientRect();
    tip.style.left = `${Math.max(0, Math.min(box.left - host.left, host.width - 260))}px`;
    tip.style.top = `${box.bottom - host.top + 4}px`;
  }
  const hideTip = () => { tip.hidden = true; };
  const onToken = (e) => { if (e.target.classList.contains("live-token")) { showTip(e.target); } };
  chat.addEventListener("mouseover", onToken);
  chat.addEventListener("focusin", onToken);
  chat.addEventListener("mouseout", hideTip);
  chat.addEventListener("focusout", hideTip);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") { hideTip(); } });

  function bubble(who, cls) {
    const li = document.createElement("li");
    li.className = `chat-msg ${cls}`;
    const name = document.createElement("span");
    name.className = "chat-who";
    name.textContent = who;
    const p = document.createElement("p");
    li.append(name, p);
    chat.appendChild(li);
    return p;
  }

  // Reads server-sent events; calls onChunk for every JSON payload before [DONE].
  async function readEvents(response, onChunk) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const part = await reader.read();
      if (part.done) { break; }
      buffer += decoder.decode(part.value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const data = buffer.slice(0, cut).replace(/^data: /, "");
        buffer = buffer.slice(cut + 2);
        if (data === "[DONE]") { return; }
        onChunk(JSON.parse(data));
      }
    }
  }

  async function council(messages, c) {
    const kinetic = { members: c.members, ...c.kinetic };
    if (kinetic.memory !== "fixed_share") { delete kinetic.share; delete kinetic.learning_rate; }
    const response = await post(body(councilId, messages, c, kinetic, true));
    if (!response.ok) { throw new Error(await errorText(response)); }
    const target = bubble(`Council (${c.members.join(" + ")})`, "chat-council");
    tableHead(c.members, kinetic.memory === "fixed_share");
    let text = "";
    await readEvents(response, (chunk) => {
      if (chunk.error) { throw new Error(chunk.error.message); }
      for (const entry of chunk.eqlm?.council?.tokens || []) {
        addToken(target, entry, c.members);
        text += entry.text;
      }
    });
    status.textContent = `The council answered with ${table.tBodies[0].rows.length} tokens.`;
    return text;
  }

  async function single(label, model, messages, c, kinetic) {
    const li = document.createElement("li");
    const h = document.createElement("h4");
    h.textContent = label;
    const p = document.createElement("p");
    p.className = "live-alone-text";
    p.textContent = "…";
    li.append(h, p);
    alone.appendChild(li);
    const response = await post(body(model, messages, c, kinetic, false));
    if (!response.ok) {
      p.textContent = await errorText(response);
      return;
    }
    p.textContent = (await response.json()).choices[0].message.content;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) { return; }
    const c = controls();
    const message = form.message.value.trim();
    if (c.members.length < 2) { status.textContent = "Choose at least two members."; return; }
    if (!message) { status.textContent = "Type a message first."; return; }
    busy = true;
    send.disabled = true;
    status.textContent = "The council is answering…";
    bubble("You", "chat-user").textContent = message;
    history.push({ role: "user", content: message });
    const messages = history.slice();
    try {
      const answer = await council(messages, c);
      history.push({ role: "assistant", content: answer });
      alone.textContent = "";
      if (form.compare.checked) {
        for (const member of new Set(c.members)) {
          await single(`${member} alone`, member, messages, c, null);
        }
        const averaging = { members: c.members, beta: 0, tau: 0, memory: "none", pool: "geometric" };
        await single("Averaging (β = 0, τ = 0, no memory)", councilId, messages, c, averaging);
        status.textContent += " The members alone and averaging are beside it.";
      }
    } catch (err) {
      status.textContent = `Failed: ${err.message}`;
    } finally {
      busy = false;
      send.disabled = false;
    }
  });

  document.getElementById("live-reset").addEventListener("click", () => {
    history = [];
    chat.textContent = "";
    alone.textContent = "";
    table.tBodies[0].textContent = "";
    status.textContent = "New conversation.";
  });
}

if (root && form) { start(); }
