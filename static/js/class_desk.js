// The class's "send a request" form on a served session's page (app/openai/class_requests.py):
// the prompt goes to the served engine, its answer streams back here with its TTFT and ITL as
// this browser measures them, and its request is marked "yours" in the lanes and the batch, on
// this browser only (the server tells no one else who sent what).

// This browser's sender key: how the server tells the students behind one address apart.
function senderKey() {
  let key = localStorage.getItem("servescope-sender");
  if (!/^[0-9a-f]{32}$/.test(key || "")) {
    key = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
    localStorage.setItem("servescope-sender", key);
  }
  return key;
}

// The requests this browser sent to this session, newest last: every tab of it marks them.
const MAX_REMEMBERED = 200;
const mineKey = (sessionId) => `servescope-mine-${sessionId}`;
function remembered(sessionId) {
  try {
    const ids = JSON.parse(localStorage.getItem(mineKey(sessionId)) || "[]");
    return Array.isArray(ids) ? ids.filter((id) => typeof id === "string" && /^req-\d+$/.test(id)) : [];
  } catch { return []; }
}

const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`);

export function mount(section, store, { sessionId }) {
  store.mine = new Set(remembered(sessionId));
  store.mineVersion = 0;
  const changed = () => { store.mineVersion += 1; store.dirty.add("state"); };
  const adopt = (id) => {
    const ids = [...remembered(sessionId).filter((other) => other !== id), id].slice(-MAX_REMEMBERED);
    localStorage.setItem(mineKey(sessionId), JSON.stringify(ids));
    store.mine.add(id);
    changed();
  };
  // Another tab of this browser sent one: marked here too.
  window.addEventListener("storage", (event) => {
    if (event.key !== mineKey(sessionId)) return;
    store.mine = new Set(remembered(sessionId));
    changed();
  });
  if (!section) return;
  const form = section.querySelector("form");
  const prompt = section.querySelector("#class-prompt"), maxTokens = section.querySelector("#class-max-tokens");
  const sendButton = section.querySelector("#class-send");
  const output = section.querySelector("#class-output"), timing = section.querySelector("#class-timing");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!form.reportValidity()) return;
    sendButton.disabled = true;
    output.textContent = "";
    timing.textContent = "sending…";
    try {
      await send({ sessionId, prompt: prompt.value, maxTokens: Number(maxTokens.value), adopt, output, timing });
    } catch (error) {
      timing.textContent = `not sent: ${error.message}`;
    } finally {
      sendButton.disabled = false;
    }
  });
}

// The answer's events as they come (vLLM's server-sent events, the usage after each step's
// tokens): the text written as text, never as markup, and the times between them.
async function send({ sessionId, prompt, maxTokens, adopt, output, timing }) {
  const sentAt = performance.now();
  const response = await fetch(`/s/${encodeURIComponent(sessionId)}/requests`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, sender: senderKey() }),
  });
  if (!response.ok) throw new Error(await reason(response));
  const id = response.headers.get("x-request-id") || "";
  if (/^req-\d+$/.test(id)) adopt(id);
  const label = id.replace(/^req-0*(?=\d)/, "#");
  timing.textContent = `${label} (yours) waiting…`;
  let firstAt = null, firstTokens = 0, lastAt = null, tokens = 0, buffer = "", finish = "";
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    const events = buffer.split("\n\n");
    buffer = events.pop();
    for (const event of events) {
      const data = event.replace(/^data: /, "");
      if (data === "[DONE]") continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      if (!chunk.choices.length || !chunk.usage) continue;
      const now = performance.now();
      if (chunk.usage.completion_tokens > tokens) {
        if (firstAt === null) { firstAt = now; firstTokens = chunk.usage.completion_tokens; }
        lastAt = now;
        tokens = chunk.usage.completion_tokens;
      }
      output.append(chunk.choices[0].text);
      finish = chunk.choices[0].finish_reason || finish;
      const itl = tokens > firstTokens ? `, ITL ${fmtMs((lastAt - firstAt) / (tokens - firstTokens))}` : "";
      timing.textContent = `${label} (yours): ${tokens} tokens, TTFT ${fmtMs(firstAt - sentAt)}${itl}${finish ? `, ${finish}` : ""}`;
    }
  }
}

async function reason(response) {
  try {
    const body = await response.json();
    const detail = body.detail;
    if (Array.isArray(detail)) return detail.map((e) => `${(e.loc || []).slice(1).join(".")}: ${e.msg}`).join("; ");
    return String(detail);
  } catch { return `HTTP ${response.status}`; }
}

// A class form's prompt, on a server whose lecturer opted in to showing them (the page says so):
// asked once per request, null when there is none to show. Written by the inspector as text.
const prompts = new Map();
export async function shownPrompt(sessionId, id) {
  if (document.body.dataset.classPrompts !== "1") return null;
  if (!prompts.has(id)) {
    const response = await fetch(`/s/${encodeURIComponent(sessionId)}/requests/${encodeURIComponent(id)}/prompt`);
    const prompt = response.ok ? (await response.json()).prompt : null;
    if (prompt !== null || response.status === 404) prompts.set(id, typeof prompt === "string" ? prompt : null);
    return prompt;
  }
  return prompts.get(id);
}
