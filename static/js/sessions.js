// Sessions from the browser's side. No GET creates one: a page creates its session with a POST
// and keeps the control token in this tab's sessionStorage, never in the address bar, so a
// projected browser shows no way to take control and a reload reuses the same session.

import { html, render } from "./dom.js";

const tokenKey = (sessionId) => `servescope:token:${sessionId}`;
const sessionKey = (key) => `servescope:session:${key}`;

export function tokenFor(sessionId) {
  return sessionStorage.getItem(tokenKey(sessionId)) || "";
}

export function forget(sessionId) {
  sessionStorage.removeItem(tokenKey(sessionId));
  for (const key of Object.keys(sessionStorage)) {
    if (key.startsWith("servescope:session:") && sessionStorage.getItem(key) === sessionId) sessionStorage.removeItem(key);
  }
}

// A session created elsewhere on this page (the fleet view opening a replica): keep its token.
export function rememberToken(sessionId, token) {
  sessionStorage.setItem(tokenKey(sessionId), token);
}

// A token handed over in a link's fragment (`#token=...`, which never reaches the server) moves
// into sessionStorage and out of the address bar before anything else runs. A `?token=` in the
// query is not adopted: it has already been sent to the server (and to any proxy's log), so it
// is only taken out of the address bar and the history.
export function adoptTokenFromUrl(sessionId) {
  const url = new URL(location.href);
  const token = new URLSearchParams(url.hash.slice(1)).get("token");
  if (!token && !url.searchParams.has("token")) return;
  if (token) sessionStorage.setItem(tokenKey(sessionId), token);
  url.searchParams.delete("token");
  history.replaceState(null, "", url.pathname + url.search);
}

export class SessionError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg).join("; ");
    return String(body.detail);
  } catch {
    return `the server answered ${response.status}`;
  }
}

// This tab's session for `key` (a page's query) while it exists, else a new one from `body`
// (POSTed to `url`: the lab's sides have their own, `/api/lab/sessions`).
export async function reuseOrCreate(key, body, url = "/api/sessions") {
  const known = sessionStorage.getItem(sessionKey(key));
  if (known && tokenFor(known)) {
    const response = await fetch(`/api/sessions/${known}`);
    if (response.ok) return { sessionId: known, token: tokenFor(known) };
    forget(known);
  }
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  if (!response.ok) throw new SessionError(response.status, await errorText(response));
  const created = await response.json();
  sessionStorage.setItem(tokenKey(created.session_id), created.control_token);
  sessionStorage.setItem(sessionKey(key), created.session_id);
  return { sessionId: created.session_id, token: created.control_token };
}

// Sessions this tab created and still holds the token of.
export function ownSessions() {
  return Object.keys(sessionStorage).filter((key) => key.startsWith("servescope:token:")).map((key) => key.slice("servescope:token:".length));
}

export async function endSession(sessionId) {
  const response = await fetch(`/api/sessions/${sessionId}`, { method: "DELETE", headers: { "x-control-token": tokenFor(sessionId) } });
  forget(sessionId);
  return response.ok || response.status === 404;
}

// An export, fetched with the token in a header and handed to the browser as a download.
export async function downloadExport(sessionId, name) {
  const response = await fetch(`/api/sessions/${sessionId}/export/${name}`, { headers: { "x-control-token": tokenFor(sessionId) } });
  if (!response.ok) {
    alert(`Export failed: ${await errorText(response)}`);
    return;
  }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = `servescope-${sessionId}-${name}`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

// When no session could be made (the server is full, or this client's quota is used): say so
// in the page, with a way out, instead of a page of raw JSON.
export function showStartFailure(error, idleMinutes) {
  const own = ownSessions();
  const main = document.createElement("main");
  main.className = "panel notice start-failure";
  render(main, html`<h1>No session could be started</h1><p class="reason"></p>
    <p>Sessions end by themselves after ${idleMinutes || 15} idle minutes, and a presenter can end theirs with "End session".</p>
    <p><button id="start-retry" class="primary">Try again</button>
    ${own.length ? html`<button id="start-end-own">End the ${own.length} session${own.length > 1 ? "s" : ""} this tab started, then try again</button>` : ""}
    <a href="/">Open the default scenario</a></p>`);
  main.querySelector(".reason").textContent = error.message;
  document.body.replaceChildren(main);
  main.querySelector("#start-retry").addEventListener("click", () => location.reload());
  const endOwn = main.querySelector("#start-end-own");
  if (endOwn) endOwn.addEventListener("click", async () => { await Promise.all(own.map(endSession)); location.reload(); });
}
