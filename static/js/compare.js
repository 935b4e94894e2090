// Compare mode: two sessions on the same workload, driven in lockstep. Playing sends the same
// "step k" to both sides each tick, so both are always at the same step (a side that has finished
// stays on its last one while the other plays on); the table below shows
// each metric for A and B and which side is better.

import { fmtInt, fmtSeconds } from "./colors.js";
import { connect } from "./connection.js";
import { html, render } from "./dom.js";
import { mount as mountBatch } from "./panels/batch.js";
import { mount as mountKv } from "./panels/kvgrid.js";
import { mount as mountQueues } from "./panels/queues.js";
import { reuseOrCreate, showStartFailure } from "./sessions.js";
import { createStore } from "./store.js";
import { mount as mountDivergence } from "./divergence.js";

const $ = (id) => document.getElementById(id);
const TICK_MS = 100;
// [label, path in the metrics report, formatter, true when lower is better]
const ROWS = [
  ["finished", ["num_requests"], (v) => v, false],
  ["output tok/s", ["output_tokens_per_s"], (v) => Math.round(v).toLocaleString("en-US"), false],
  ["TTFT p50", ["ttft_s", "p50"], fmtSeconds, true],
  ["TTFT p99", ["ttft_s", "p99"], fmtSeconds, true],
  ["ITL p99", ["itl_s", "p99"], fmtSeconds, true],
  ["E2E p50", ["e2e_s", "p50"], fmtSeconds, true],
  ["preemptions", ["preemptions"], (v) => v, true],
  ["KV usage (mean)", ["kv_usage_mean"], (v) => `${(v * 100).toFixed(1)}%`, null],
  ["unused slots", ["fragmentation"], (v) => `${(v * 100).toFixed(1)}%`, true],
  ["prefix hits", ["prefix_cache_hit_rate"], (v) => `${(v * 100).toFixed(0)}%`, false],
];

// The page creates its two sessions (no GET does), or reuses the ones this tab made for this URL.
const sideElements = [...document.querySelectorAll("[data-create]")];
let opened = [];
try {
  opened = await Promise.all(sideElements.map((el, i) => reuseOrCreate(`compare${location.pathname}${location.search}:${i}`, el.dataset.create, el.dataset.createUrl)));
} catch (error) {
  showStartFailure(error);
  await new Promise(() => {});  // the page now says why; nothing below can run without sessions
}

const sides = opened.map(({ sessionId, token }, i) => {
  const el = sideElements[i];
  const store = createStore();
  const role = (name) => el.querySelector(`[data-role="${name}"]`);
  const { send } = connect(store, { sessionId, token });
  const select = (id) => { store.selected = id === store.selected ? null : id; store.dirty.add("selection"); };
  const panels = [
    mountQueues(role("queues"), store, { onSelect: select }),
    mountBatch(role("batch"), store, { onSelect: select }),
    mountKv(role("canvas"), store, { onSelect: select, legendEl: role("legend"), summaryEl: role("summary"), subEl: role("sub"),
      gaugeEl: role("gauge"), pagedButton: role("paged"), contiguousButton: role("contiguous") }),
  ];
  return { el, store, send, panels, clock: role("clock") };
});

let playing = false;
let owed = 0;
const speed = () => Number($("speed").value);
const both = (command) => sides.forEach((side) => side.send(command));
const done = () => sides.every((side) => side.store.done);
// The step the comparison is at: a side that has finished stays on its last step while the other
// runs on, so the lockstep is that of the sides still running.
const running = () => sides.filter((side) => !side.store.done);
const lockstep = () => Math.max(...sides.map((s) => s.store.step));

function tick() {
  if (!playing) return;
  owed += (speed() * TICK_MS) / 1000;
  const n = Math.floor(owed);
  // Wait for the running sides to catch up before asking for more: lockstep, never drift.
  const live = running();
  if (n >= 1 && live.every((side) => side.store.step === live[0].store.step)) {
    owed -= n;
    both({ type: "step", n });
  }
  if (done()) setPlaying(false);
  else setTimeout(tick, TICK_MS);
}
function setPlaying(on) {
  playing = on && !done();
  $("play").textContent = playing ? "❚❚ Pause" : "▶ Play";
  if (playing) tick();
}
function stepBack(n) { setPlaying(false); both({ type: "seek", step: Math.max(0, lockstep() - n) }); }

$("play").addEventListener("click", () => setPlaying(!playing));
$("step").addEventListener("click", () => { setPlaying(false); both({ type: "step", n: 1 }); });
$("step-back").addEventListener("click", () => stepBack(1));
$("reset").addEventListener("click", () => { setPlaying(false); both({ type: "reset" }); });
if (localStorage.getItem("servescope-theme") === "projector") document.documentElement.dataset.theme = "projector";
$("theme").addEventListener("click", () => {
  const next = document.documentElement.dataset.theme === "projector" ? "normal" : "projector";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("servescope-theme", next);
  sides.forEach((s) => s.store.dirty.add("all"));
});
$("help").addEventListener("click", () => $("help-dialog").showModal());
// A control used with the mouse hands the keyboard back to the page.
document.querySelector(".topbar").addEventListener("click", (event) => { const b = event.target.closest("button"); if (b && event.detail > 0) b.blur(); });
$("speed").addEventListener("change", (event) => event.target.blur());
document.addEventListener("keydown", (event) => {
  if (event.target.closest("input, select, textarea, dialog") || event.ctrlKey || event.metaKey || event.altKey) return;
  if ((event.key === " " || event.key === "Enter") && event.target.closest("button, a")) return;
  const actions = {
    " ": () => setPlaying(!playing), ArrowRight: () => both({ type: "step", n: event.shiftKey ? 10 : 1 }),
    ArrowLeft: () => stepBack(event.shiftKey ? 10 : 1), Home: () => both({ type: "reset" }), t: () => $("theme").click(),
    "?": () => $("help-dialog").showModal(),
  };
  if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
});

function value(report, path) { return path.reduce((v, key) => (v == null ? v : v[key]), report); }

function renderDiff() {
  const [a, b] = sides.map((s) => s.store.metrics && s.store.metrics.report);
  if (!a || !b) return;
  const rows = ROWS.map(([label, path, fmt, lowerIsBetter]) => {
    const va = value(a, path), vb = value(b, path);
    const known = va != null && vb != null;
    const ratio = known && va ? vb / va : null;
    let cls = "";
    // Only a difference the table shows is coloured: equal as printed is equal.
    if (known && lowerIsBetter !== null && fmt(va) !== fmt(vb)) cls = (vb < va) === lowerIsBetter ? "better" : "worse";
    return html`<tr><th>${label}</th><td>${va == null ? "–" : fmt(va)}</td><td class="${cls}">${vb == null ? "–" : fmt(vb)}</td><td>${ratio == null || !Number.isFinite(ratio) ? "–" : `${ratio.toFixed(2)}×`}</td></tr>`;
  });
  render($("diff"), html`<table><thead><tr><th scope="col">metric</th><th scope="col">A</th><th scope="col">B</th><th scope="col">B / A</th></tr></thead><tbody>${rows}</tbody></table>`);
}

function frame() {
  let changed = false;
  for (const side of sides) {
    if (!side.store.dirty.size) continue;
    changed = true;
    side.panels.forEach((panel) => panel.update());
    side.clock.textContent = `· step ${fmtInt(side.store.step)} · ${side.store.clock.toFixed(3)} s simulated`;
    side.store.dirty.clear();
  }
  if (changed) {
    $("step-counter").value = lockstep().toLocaleString("en-US");
    renderDiff();
  }
  requestAnimationFrame(frame);
}
mountDivergence($("lab-strip"), sides, both);
window.servescope = { sides, both };
requestAnimationFrame(frame);
