/* The depth dial's generation on the server, for a model this device cannot hold in the browser: the completions
   endpoint the page names (`url`, /v1's), streamed as server-sent events, one event per token (logprobs 0), with the
   dial's depth, halting, start and sampling. Yields {text, tokens} (tokens: how many tokens the event carries). */

function requestBody({ model, prompt, maxTokens, depth, tol, halt, start, temperature, topP, seed }) {
  const body = { model, prompt, max_tokens: maxTokens, depth, temperature, top_p: topP, seed, stream: true, logprobs: 0 };
  if (tol !== null && tol !== undefined) Object.assign(body, { tol, halt });
  if (start && start !== "zero") body.start = start;
  return body;
}

async function refusal(response) {
  try {
    return (await response.json()).error.message;
  } catch {
    return `HTTP ${response.status}`;
  }
}

/* One server-sent event's data: the chunk, "[DONE]", or null (a comment or keep-alive). */
function eventData(event) {
  const lines = event.split("\n").filter((line) => line.startsWith("data:"));
  return lines.length ? lines.map((line) => line.slice(5).trimStart()).join("\n") : null;
}

async function* serverTokens(url, request, { key = "", signal = null } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  const response = await fetch(url, {
    method: "POST", headers, body: JSON.stringify(requestBody(request)), signal, credentials: "omit",
  });
  if (!response.ok) throw new Error(await refusal(response));
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
      const data = eventData(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (data === null) continue;
      if (data === "[DONE]") return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      const choice = chunk.choices && chunk.choices[0];
      if (!choice || choice.finish_reason) continue;
      const tokens = choice.logprobs && choice.logprobs.tokens ? choice.logprobs.tokens.length : 1;
      if (tokens) yield { text: choice.text || "", tokens };
    }
  }
}

export { serverTokens, requestBody };
