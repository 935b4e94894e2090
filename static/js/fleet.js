// The fleet view: a fleet run (POST /api/fleet, which keeps nothing on the server) played back
// frame by frame: each replica's queues, KV gauge and small KV grid side by side, the router's
// and the link's events, the fleet's metrics. Clicking a replica opens the single-engine panels
// of the requests the router sent it (a new session, created here from the page). A fleet
// lesson's arm tells its story in the caption bar, beat by beat (fleet_story.js).
import { fmtInt, fmtSeconds } from "./colors.js";
import { html, render } from "./dom.js";
import { drawGrid } from "./kv_cells.js";
import { mount as mountStory } from "./fleet_story.js";
import { rememberToken } from "./sessions.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
if (params.get("theme") === "projector" || localStorage.getItem("servescope-theme") === "projector") {
  document.documentElement.dataset.theme = "projector";
}
// A value from the address bar that is none of a select's options would leave it empty: keep its default then.
function setFromQuery(id, value) {
  const control = $(id), before = control.value;
  control.value = value;
  if (control.value === "") control.value = before;
}
for (const [key, id] of [["scenario", "preset"], ["router", "router"], ["replicas", "replicas"], ["layout", "layout"],
  ["rate", "rate"], ["requests", "num-requests"]]) {
  if (params.get(key)) setFromQuery(id, params.get(key));
}
if (params.get("lesson")) {
  const lesson = JSON.parse(document.body.dataset.lessons)[params.get("lesson")];
  if (lesson) setFromQuery("preset", `lesson:${params.get("lesson")}:${params.get("arm") || lesson.arms[0]}`);
}

let run = null;      // the last fleet run
let body = null;     // the request that made it (reused to open a replica)
let frame = 0;
let timer = null;

let presets = null;  // GET /api/presets: each preset's scenario, for the rate and request overrides

const LESSONS = JSON.parse(document.body.dataset.lessons);
const LINK_NAMES = { nvlink: "NVLink", infiniband: "InfiniBand", ethernet: "Ethernet" };
// A class's copy of a lesson (`&view=1`, the link handed to the room) checks its answers but cannot reveal them.
const story = mountStory($("lesson"), { seek: (index) => { pause(); show(index); }, dialog: $("claims-dialog"),
  checkDialog: $("check-dialog"), canReveal: !params.has("view") });

async function fleetBody() {
  const choice = $("preset").value;
  if (choice.startsWith("lesson:")) {
    const [, lesson, arm] = choice.split(":");
    return { lesson, arm };
  }
  presets = presets || await (await fetch("/api/presets")).json();
  const split = $("layout").value === "disaggregated";
  const cluster = split
    ? { router: $("router").value, link: $("link").value,
        prefill: { replicas: Number($("prefill-replicas").value) }, decode: { replicas: Number($("decode-replicas").value) } }
    : { replicas: Number($("replicas").value), router: $("router").value };
  // The preset with the fleet's load: a scenario the server checks like any other.
  const scenario = structuredClone(presets[$("preset").value].scenario);
  delete scenario.description;
  scenario.name = $("preset").value;
  scenario.workload = { ...scenario.workload, num_requests: Number($("num-requests").value), arrival_rate: Number($("rate").value) };
  return { scenario, cluster };
}

function showBanner(text) {
  $("banner").textContent = text;
  $("banner").hidden = !text;
}

function errorText(detail) {
  if (!Array.isArray(detail)) return String(detail);
  return detail.map((e) => `${(e.loc || []).filter((p) => p !== "body").join(".")}: ${e.msg}`).join("; ");
}

async function runFleet() {
  pause();
  body = await fleetBody();
  document.body.classList.add("busy");
  $("run").disabled = true;
  showBanner("");
  try {
    const response = await fetch("/api/fleet", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const data = await response.json();
    if (!response.ok) { showBanner(errorText(data.detail)); return; }
    run = data;
    story.load(run);
    buildCards();
    summarise();
    $("time").max = run.frames.length - 1;
    // A lesson starts at its opening beat; any other fleet where the dashboard starts, at the start,
    // from the first frame with a request on a replica (its end is every replica idle; so is t = 0).
    show(run.lesson ? 0 : firstBusyFrame());
  } catch (e) {
    showBanner(`the fleet did not run: ${e}`);
  } finally {
    document.body.classList.remove("busy");
    $("run").disabled = false;
  }
}

function firstBusyFrame() {
  const busy = run.frames.findIndex((f) => f.replicas.some((r) => r.running + r.waiting > 0));
  return Math.max(0, busy);
}

function metric(label, value) {
  return html`<div class="metric"><span>${label}</span><strong>${value}</strong></div>`;
}

function summarise() {
  const r = run.report;
  const parts = [
    metric("GPUs", run.num_gpus),
    metric("requests", fmtInt(r.num_requests)),
    metric("throughput", `${(r.requests_per_s ?? 0).toFixed(2)} req/s`),
    metric("TTFT p99", fmtSeconds(r.ttft_s.p99)),
    metric("TPOT p99", fmtSeconds(r.tpot_s.p99)),
    metric("prefix hit rate", `${(100 * r.prefix_cache_hit_rate).toFixed(1)}%`),
    metric("router", r.router.policy),
  ];
  if (r.kv_transfer) {
    parts.push(metric("KV moved", `${(r.kv_transfer.bytes / 1e9).toFixed(2)} GB over ${LINK_NAMES[r.kv_transfer.link]}`));
    parts.push(metric("per transfer", fmtSeconds(r.kv_transfer.seconds_mean)));
  }
  render($("summary"), html`${parts}`);
}

function buildCards() {
  const grid = $("replicas-grid");
  grid.replaceChildren();
  const decisions = { ...run.report.router.decisions, ...(run.report.decode_router?.decisions || {}) };
  run.replicas.forEach((replica, index) => {
    const stats = run.report.replicas[index];
    const card = document.createElement("button");
    card.type = "button";
    card.className = "replica";
    card.dataset.index = index;
    const opens = replica.role !== "decode";
    card.setAttribute("aria-disabled", String(!opens));
    card.title = opens ? `Open ${replica.name}'s engine panels: the ${fmtInt(decisions[replica.name] || 0)} requests routed to it`
      : "A decode replica receives transferred KV: its requests cannot be replayed by a lone engine";
    render(card, html`
      <header><h3>${replica.name}</h3><span class="role ${replica.role}">${replica.role}</span></header>
      <div class="stats">
        <span>routed</span><b class="routed">${fmtInt(decisions[replica.name] || 0)}</b><span>finished</span><b class="finished">0</b>
        <span>running</span><b class="running-n">0</b><span>waiting</span><b class="waiting-n">0</b>
      </div>
      <div class="queue-bar" aria-hidden="true"><div class="running"></div><div class="waiting"></div></div>
      <div class="stats"><span>KV cache</span><b class="kv-n">0%</b><span>blocks</span><b>${fmtInt(replica.num_blocks)}</b></div>
      <div class="gauge" aria-hidden="true"><div class="fill"></div></div>
      <canvas width="200" height="80" aria-label="${replica.name} KV blocks"></canvas>
      <div class="stats"><span>TTFT p99</span><b>${fmtSeconds(stats.ttft_s.p99)}</b>
        <span>hit rate</span><b>${(100 * stats.prefix_cache_hit_rate).toFixed(0)}%</b></div>
      ${opens ? html`<div class="hint">open its engine panels ›</div>` : ""}`);
    if (opens) card.addEventListener("click", () => openReplica(replica.name));
    grid.appendChild(card);
  });
}

// The largest queue over the run sets the bar's scale, so bars compare across replicas and time.
function queueScale() {
  let most = 1;
  for (const f of run.frames) for (const r of f.replicas) most = Math.max(most, r.running + r.waiting);
  return most;
}

// Requests sent to each replica by time t (a decode replica's are its transfers), when the run
// kept every event; otherwise the cards keep the whole run's totals.
function routedBy(t) {
  if (run.events.length < run.num_events) return null;
  const counts = {};
  for (const e of run.events) {
    if (e.t > t) break;
    if (e.kind === "route" || e.kind === "transfer") counts[e.replica] = (counts[e.replica] || 0) + 1;
  }
  return counts;
}

function show(index) {
  if (!run) return;
  frame = Math.max(0, Math.min(index, run.frames.length - 1));
  $("time").value = frame;
  const f = run.frames[frame];
  $("clock").textContent = `${f.t.toFixed(3)} s`;
  const scale = queueScale();
  const routed = routedBy(f.t);
  document.querySelectorAll("#replicas-grid .replica").forEach((card) => {
    const r = f.replicas[Number(card.dataset.index)];
    if (routed) card.querySelector(".routed").textContent = fmtInt(routed[run.replicas[Number(card.dataset.index)].name] || 0);
    card.querySelector(".running-n").textContent = fmtInt(r.running);
    card.querySelector(".waiting-n").textContent = fmtInt(r.waiting);
    card.querySelector(".finished").textContent = fmtInt(r.finished);
    card.querySelector(".kv-n").textContent = `${(100 * r.kv).toFixed(1)}%`;
    card.querySelector(".queue-bar .running").style.width = `${(100 * r.running) / scale}%`;
    const waiting = card.querySelector(".queue-bar .waiting");
    waiting.style.left = `${(100 * r.running) / scale}%`;
    waiting.style.width = `${(100 * r.waiting) / scale}%`;
    card.querySelector(".gauge .fill").style.width = `${100 * r.kv}%`;
    drawGrid(card.querySelector("canvas"), r.grid);
  });
  showEvents(f.t);
  story.update(frame);
}

function showEvents(t) {
  const upTo = run.events.filter((e) => e.t <= t);
  const recent = upTo.slice(-60).reverse();
  render($("events"), html`${recent.map((e) =>
    html`<li title="${e.detail}"><span class="t">${e.t.toFixed(3)}</span><span class="kind-${e.kind}">${e.kind}</span> ${e.request} → ${e.replica}${e.detail ? html` <span class="t detail">(${e.detail})</span>` : ""}</li>`)}`);
  const shown = run.events.length < run.num_events ? ` (the first ${fmtInt(run.events.length)} kept)` : "";
  $("event-count").textContent = `${fmtInt(upTo.length)} of ${fmtInt(run.num_events)}${shown}`;
}

async function openReplica(name) {
  const response = await fetch("/api/fleet/replica", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ...body, replica: name }),
  });
  const data = await response.json();
  if (!response.ok) { showBanner(errorText(data.detail)); return; }
  // The control token stays in this tab's storage, never in the address bar.
  rememberToken(data.session_id, data.control_token);
  location.href = data.control_url;
}

function pause() {
  clearInterval(timer);
  timer = null;
  $("play").textContent = "▶ Play";
}

function play() {
  if (!run) return;
  if (timer) { pause(); return; }
  if (frame >= run.frames.length - 1) show(0);
  $("play").textContent = "❚❚ Pause";
  timer = setInterval(() => {
    if (frame >= run.frames.length - 1) { pause(); return; }
    show(frame + 1);
  }, 100);
}

function layoutChanged() {
  const split = $("layout").value === "disaggregated";
  const lesson = $("preset").value.startsWith("lesson:") ? LESSONS[$("preset").value.split(":")[1]] : null;
  document.querySelectorAll(".split-only").forEach((el) => { el.hidden = !split || lesson; });
  document.querySelectorAll(".colocated-only").forEach((el) => { el.hidden = split || lesson; });
  // A lesson's arm brings its own fleet and workload: only the arm is chosen here.
  document.querySelectorAll(".own-fleet:not(.split-only):not(.colocated-only)").forEach((el) => { el.hidden = Boolean(lesson); });
  document.body.classList.toggle("lesson-mode", Boolean(lesson));
  story.pick(lesson, lesson ? $("preset").value.split(":")[2] : null);
}

$("fleet-form").addEventListener("submit", (event) => { event.preventDefault(); runFleet(); });
$("layout").addEventListener("change", layoutChanged);
$("preset").addEventListener("change", () => { layoutChanged(); if ($("preset").value.startsWith("lesson:")) runFleet(); });
$("time").addEventListener("input", () => { pause(); show(Number($("time").value)); });
$("play").addEventListener("click", play);
$("theme").addEventListener("click", () => {
  const projector = document.documentElement.dataset.theme !== "projector";
  document.documentElement.dataset.theme = projector ? "projector" : "normal";
  localStorage.setItem("servescope-theme", projector ? "projector" : "normal");
  show(frame);
});
// The dashboard's keys: Space plays, → and ← step, Home goes back to the start, N / P move
// between a lesson's beats, W opens what it proves, Q its questions, T switches the theme.
document.addEventListener("keydown", (event) => {
  if (event.target.closest("input, select") || event.ctrlKey || event.metaKey || event.altKey) return;
  if ((event.key === " " || event.key === "Enter") && event.target.closest("button, a")) return;
  const keys = {
    " ": play,
    t: () => $("theme").click(),
    ArrowRight: () => { pause(); show(frame + 1); },
    ArrowLeft: () => { pause(); show(frame - 1); },
    Home: () => { pause(); show(0); },
    n: story.next,
    p: story.prev,
    w: story.openClaims,
    q: story.openCheck,
  };
  const action = keys[event.key.length === 1 ? event.key.toLowerCase() : event.key];
  if (!action) return;
  event.preventDefault();
  action();
});
window.addEventListener("resize", () => show(frame));
layoutChanged();
runFleet();
// For tests and the screenshots script: the run shown, the frame on screen, the story's beats.
window.servescope = { run: () => run, frame: () => frame, story };
