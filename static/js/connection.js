// The one owner of the session's websocket: connects, reconnects with backoff, keeps frames in
// order (a delta that does not apply to the state held asks for a snapshot) and shows a banner
// while disconnected. Messages are decoded by a worker (frame-decoder.js); after each state
// frame the page acknowledges, once it has drawn, the sequence number it has handled, and the
// server sends the next state only then: a page never receives more than it can draw.

import { applyDelta, applyEvents, applySnapshot } from "./store.js";

export function connect(store, { sessionId, token, onError, onStatus, stats }) {
  const banner = document.getElementById("banner");
  // The control token goes in the first message, never in the URL (URLs reach access logs).
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/${sessionId}`;
  const decoder = new Worker(new URL("./frame-decoder.js", import.meta.url), { type: "module" });
  let socket = null;
  let retryMs = 500;
  let everConnected = false;
  let closedForGood = false;
  let handledSeq = -1;
  let ackScheduled = false;

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }

  // A task of its own runs after this animation frame's rendering, so after the page drew.
  function acknowledge() {
    if (ackScheduled) return;
    ackScheduled = true;
    setTimeout(() => { ackScheduled = false; send({ type: "ack", seq: handledSeq }); });
  }

  // State frames are applied one per animation frame, in order: two that arrive together are
  // drawn as two frames, not merged into one (the window of unacknowledged frames bounds the queue).
  // A page that draws in its own animation-frame callback takes the state there first
  // (`takeState`), so a frame is drawn in the animation frame after it arrives, not the one after that.
  const states = [];
  let applyScheduled = false;
  let appliedInFrame = null;
  function applyNextState(now) {
    if (!states.length) return;
    if (now === appliedInFrame) { scheduleApply(); return; }
    appliedInFrame = now;
    const frame = states.shift();
    const start = performance.now();
    if (frame.type === "snapshot") applySnapshot(store, frame);
    else if (!applyDelta(store, frame)) send({ type: "snapshot" });
    handledSeq = frame.seq;
    acknowledge();
    if (stats) { stats.decodeMs += frame.decodeMs; stats.applyMs += performance.now() - start; stats.states += 1; }
    if (states.length) scheduleApply();
  }
  function scheduleApply() {
    if (!applyScheduled) { applyScheduled = true; requestAnimationFrame((now) => { applyScheduled = false; applyNextState(now); }); }
  }

  decoder.addEventListener("message", ({ data: frame }) => {
    switch (frame.type) {
      case "snapshot": case "delta": states.push(frame); scheduleApply(); break;
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

  function open() {
    socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    socket.addEventListener("open", () => {
      if (token) socket.send(JSON.stringify({ type: "auth", token }));
      retryMs = 500;
      everConnected = true;
      showBanner("");
    });
    socket.addEventListener("message", (message) => {
      const data = message.data;
      decoder.postMessage(data, typeof data === "string" ? [] : [data]);
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
  return { send, takeState: applyNextState };
}
