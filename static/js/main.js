// Boot: one store, one websocket, one module per panel, and a single requestAnimationFrame
// loop that redraws only what changed since the last frame (never once per message).

import { mount as mountClassDesk } from "./class_desk.js";
import { connect } from "./connection.js";
import { breakpointsAnswered, refusalText } from "./breakpoints_dialog.js";
import { mount as mountControls } from "./controls.js";
import { mount as mountNotice } from "./notice.js";
import { mount as mountBatch } from "./panels/batch.js";
import { mount as mountCharts } from "./panels/charts.js";
import { mount as mountEvents } from "./panels/events.js";
import { mount as mountInspector } from "./panels/inspector.js";
import { mount as mountKv } from "./panels/kvgrid.js";
import { mount as mountNarration } from "./panels/narration.js";
import { mount as mountQueues } from "./panels/queues.js";
import { mount as mountWhy } from "./panels/why.js";
import { endSession, forget, tokenFor } from "./sessions.js";
import { mount as mountStage } from "./stage.js";
import { createStore } from "./store.js";

const body = document.body;
const sessionId = body.dataset.session;
// The presenter is the tab that holds the token (boot.js put it in sessionStorage).
const token = tokenFor(sessionId);
const canControl = Boolean(token);
const $ = (id) => document.getElementById(id);

const store = createStore();
const notice = mountNotice($("notice"));
// The server's note when a run to a breakpoint reached the end without one (app/live.py).
const NO_BREAKPOINT_HIT = "no breakpoint hit before the end";
const params = new URLSearchParams(location.search);
if (params.get("theme") === "projector" || localStorage.getItem("servescope-theme") === "projector") {
  document.documentElement.dataset.theme = "projector";
}

// Frames actually drawn (all, and those that showed a new state), and what receiving the state
// costs, for benchmarks and for the curious (window.servescope).
const stats = { frames: 0, stateFrames: 0, longestFrameMs: 0, longestFramePanelMs: {}, panelMs: {}, states: 0, decodeMs: 0, applyMs: 0 };
const { send, takeState } = connect(store, {
  sessionId,
  token,
  stats,
  onError: (frame) => {
    // A token the session does not know (a stale tab): forget it and show the view-only page.
    if (frame.code === "bad_token") { forget(sessionId); location.reload(); return; }
    if (frame.code === "no_session") return; // the banner says so
    // A refusal is said on the page: in the Breakpoints dialog when it answers the set sent there.
    if (!breakpointsAnswered(frame)) notice.show(refusalText(frame));
  },
  onStatus: (frame) => {
    breakpointsAnswered(frame);
    if (frame.note) showNote(frame.note);
    if (frame.note === NO_BREAKPOINT_HIT) notice.show(`B ran to the end of the run (step ${frame.step.toLocaleString("en-US")}): no breakpoint was hit`);
  },
});

// The address bar shows the view link (never the token) with the scenario, so the link still
// recreates this run after the session ends.
let urlWritten = false;
function writeUrl() {
  if (urlWritten || !store.session || !store.session.origin) return;
  urlWritten = true;
  history.replaceState(null, "", `/s/${sessionId}/view?${store.session.origin}`);
}

const endButton = $("end-session");
endButton.hidden = !canControl;
endButton.addEventListener("click", async () => {
  if (!confirm("End this session? Everyone watching it loses it; the link can start the same run again.")) return;
  await endSession(sessionId);
  location.replace(`/s/${sessionId}/view${store.session && store.session.origin ? `?${store.session.origin}` : ""}`);
});

// Clicking the selected chip again deselects it; an event or a block always selects.
function select(id, { toggle = true, tab = "inspector" } = {}) {
  store.selected = toggle && id === store.selected ? null : id;
  store.dirty.add("selection");
  if (store.selected) showTab(tab);
}
function seek(step) { if (canControl) send({ type: "seek", step }); }

// In the projector theme the side panel may be folded away: showing one of its tabs brings it on
// stage, beside the KV grid (where the Why? tab draws the step's block diff).
function bringSideOnStage() {
  const panels = stage.panels();
  if (document.documentElement.dataset.theme !== "projector" || panels.includes("side")) return;
  stage.follow([...panels.filter((p) => p !== "batch" && p !== "charts").slice(-2), "side"]);
}

function showTab(name) {
  bringSideOnStage();
  for (const tab of ["events", "inspector", "why"]) {
    const on = tab === name;
    $(`tab-${tab}`).classList.toggle("on", on);
    $(`tab-${tab}`).setAttribute("aria-selected", String(on));
    $(tab).hidden = !on;
  }
  store.dirty.add("inspector");
  store.dirty.add("why");
  // The step's block diff is drawn on the grid only while the Why? tab shows it.
  if (name !== "why" && store.blockDiff) { store.blockDiff = null; store.dirty.add("kv"); }
}
$("tab-events").addEventListener("click", () => showTab("events"));
$("tab-inspector").addEventListener("click", () => showTab("inspector"));
$("tab-why").addEventListener("click", () => showTab("why"));

let noteTimer = null;
function showNote(text) {
  $("run-state").textContent = text;
  clearTimeout(noteTimer);
  noteTimer = setTimeout(() => store.dirty.add("status"), 3000);
}

mountClassDesk($("class-desk"), store, { sessionId }); // before the panels: they read store.mine
const controls = mountControls(store, { send, sessionId, canControl, onTheme: toggleTheme });
const queues = mountQueues($("queues"), store, { onSelect: select });
const batch = mountBatch($("batch"), store, { onSelect: select });
const kv = mountKv($("kv-canvas"), store, {
  onSelect: select, legendEl: $("kv-legend"), summaryEl: $("kv-summary"), subEl: $("kv-sub"), gaugeEl: $("kv-gauge"), cursorEl: $("kv-cursor"),
  pagedButton: $("view-paged"), contiguousButton: $("view-contiguous"),
});
const charts = mountCharts($("charts"), store);
// A preemption line opens the evidence for it; other events inspect their request.
const events = mountEvents($("events"), store, {
  onSeek: seek, onSelect: (id, kind) => select(id, { toggle: false, tab: kind === "preempted" ? "why" : "inspector" }),
});
const inspector = mountInspector($("inspector"), store, { sessionId, onWhy: () => showTab("why"), onSelect: select });
const why = mountWhy($("why"), store, { sessionId, onSelect: select });
const stage = mountStage(document.querySelector("main.grid"), $("stage-bar"), { onChange: () => store.dirty.add("all") });
const narration = mountNarration($("narration"), store, { seek, canControl, stage, dialog: $("claims-dialog"), checkDialog: $("check-dialog") });
controls.lessonKeys({ next: narration.next, prev: narration.prev, claims: () => narration.openClaims(), check: () => narration.openCheck() });

function toggleTheme() {
  const next = document.documentElement.dataset.theme === "projector" ? "normal" : "projector";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("servescope-theme", next);
  charts.rebuild();
  store.dirty.add("all");
}

let framePanelMs = {}; // this frame's drawing time by panel: the slowest frame's is kept in `stats`
function timed(name, draw) {
  const start = performance.now();
  draw();
  const ms = performance.now() - start;
  stats.panelMs[name] = (stats.panelMs[name] || 0) + ms;
  framePanelMs[name] = (framePanelMs[name] || 0) + ms;
}
window.servescope = { store, send, stats, narration, stage };

// The charts show the whole run over simulated time: while playing, a redraw a second keeps
// them current at a fraction of the cost of redrawing four plots every frame, and each redraw
// is spread over four frames, one plot a frame (a plot takes 5-20 ms at 1920x1080: at two redraws
// a second, these were a good part of the frames that came late).
const CHARTS_EVERY_MS = 1000;
let chartsDue = false, chartsDrawnAt = -Infinity, chartsSpread = false;
// While playing, the batch rows, the event log and the next plot wait for a frame with room once
// this frame's own panels (counters, requests, KV cache) have taken this long: a batch turning
// over then spreads its work over two frames instead of stalling one.
const FRAME_BUDGET_MS = 8;
const waiting = new Set(); // of "batch", "events": drawn in a later frame
let queuesBehind = false; // the lanes left chips to relabel in the next frame

function frame(now) {
  takeState(now);
  const d = store.dirty;
  chartsDue = chartsDue || d.has("all") || d.has("state") || d.has("charts");
  const chartsNow = chartsDue && (d.has("all") || d.has("charts") || !store.status.playing || now - chartsDrawnAt >= CHARTS_EVERY_MS);
  if (d.size || chartsNow || chartsSpread || waiting.size || queuesBehind) {
    const start = performance.now();
    const all = d.has("all"), state = all || d.has("state");
    if (all || state || d.has("status")) timed("controls", controls.update);
    const updateQueues = () => { queuesBehind = queues.update(); };
    if (state || d.has("selection")) { timed("queues", updateQueues); waiting.add("batch"); }
    else if (d.has("status") || queuesBehind) timed("queues", updateQueues); // a pause writes the chips that waited
    if (state || d.has("selection") || d.has("kv")) timed("kv", () => kv.update(all || d.has("selection") || d.has("kv")));
    if (all || d.has("events")) waiting.add("events");
    const room = !store.status.playing || all || performance.now() - start < FRAME_BUDGET_MS;
    if (room && waiting.delete("batch")) timed("batch", batch.update);
    if (room && waiting.delete("events")) timed("events", events.update);
    if (chartsNow) {
      chartsDue = false; chartsDrawnAt = now;
      if (store.status.playing && !all) chartsSpread = true;
      else { chartsSpread = false; timed("charts", charts.update); }
    }
    if (chartsSpread && room) timed("charts", () => { chartsSpread = !charts.drawNext(); });
    if (all || state) timed("narration", narration.update);
    if (all) writeUrl();
    if (!$("inspector").hidden && (state || d.has("selection") || d.has("inspector") || d.has("status"))) inspector.update();
    if (!$("why").hidden && (state || d.has("selection") || d.has("why") || d.has("status"))) why.update();
    d.clear();
    stats.frames += 1;
    if (state) stats.stateFrames += 1;
    const frameMs = performance.now() - start;
    if (frameMs > stats.longestFrameMs) { stats.longestFrameMs = frameMs; stats.longestFramePanelMs = framePanelMs; }
    framePanelMs = {};
  }
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
