// The one owner of the session's websocket: connects, reconnects with backoff, keeps frames in
// order (a gap in sequence numbers asks for a snapshot) and shows a banner while disconnected.

import { applyDelta, applyEvents, applySnapshot } from "./store.js";

export function connect(store, { sessionId, token, onError, onStatus }) {
  const banner = document.getElementById("banner");
  // The control token goes in the first message, never in the URL (URLs reach access logs).
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/${sessionId}`;
  let socket = null;
  let retryMs = 500;
  let everConnected = false;
  let closedForGood = false;

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }

  function open() {
    socket = new WebSocket(url);
    socket.addEventListener("open", () => {
      if (token) socket.send(JSON.stringify({ type: "auth", token }));
      retryMs = 500;
      everConnected = true;
      showBanner("");
    });
    socket.addEventListener("message", (message) => {
      let frame;
      try { frame = JSON.parse(message.data); } catch { return; }
      switch (frame.type) {
        case "snapshot": applySnapshot(store, frame); break;
        case "delta": if (!applyDelta(store, frame)) send({ type: "snapshot" }); break;
        case "events": applyEvents(store, frame); break;
        case "status":
          store.status = frame; store.dirty.add("status");
          if (onStatus) onStatus(frame);
          break;
        case "error":
          if (frame.code === "no_session") { closedForGood = true; showBanner("This session no longer exists (it expired or was deleted). Open / to start a new one."); }
          if (onError) onError(frame);
          break;
        default: break; // heartbeat, pong
      }
    });
    socket.addEventListener("close", () => {
      if (closedForGood) return;
      showBanner(everConnected ? "Connection lost. Reconnecting…" : "Cannot reach the servescope server. Retrying…");
      setTimeout(open, retryMs);
      retryMs = Math.min(retryMs * 2, 8000);
    });
  }

  function send(command) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(command));
  }

  // An open page says so now and then: a session nobody's page pings expires when idle.
  setInterval(() => send({ type: "ping" }), 30_000);
  open();
  return { send };
}
