// This step's batch: how the token budget was spent (prefill chunks against decodes), one row
// per scheduled request, and what the step's time was made of.

import { fmtInt, fmtSeconds, noun, plural, requestColor } from "../colors.js";
import { html, render as write } from "../dom.js";
import { setAttr, setHtml, setStyle } from "../writes.js";

// "host": the engine's CPU work between steps (scheduling, inputs, outputs), which the GPU waits
// for without async scheduling; under async scheduling it overlaps the batch in flight and is not charged.
const COST_LABELS = { linear: "linear layers", attention: "attention", other: "activations and fixed latency", swap: "swap (PCIe)",
  host: "host work, GPU idle" };
// Every scheduled request has a row, but only the rows in view (and a few either side) exist:
// a step of 256 decodes, or a batch turning over, then costs a screenful of rows, not 256.
const OVERSCAN_ROWS = 3;
// Policies whose step has no token budget: a static batch (and the naive loop built on it) runs
// its members' whole prompts in one step, so max_num_batched_tokens bounds nothing there.
const UNBUDGETED = new Set(["static", "naive"]);
const ROW_GAP_PX = 2; // .batch-window's gap

export function mount(el, store, { onSelect }) {
  el.addEventListener("click", (event) => {
    const row = event.target.closest(".batch-row");
    if (row) onSelect(row.dataset.id);
  });
  el.addEventListener("pointerover", (event) => {
    const row = event.target.closest(".batch-row");
    if (row && row.fullTitle) row.title = row.fullTitle;
  });
  el.parts = null; // the panel's parts, once a step has been drawn
  return { update: () => render(el, store) };
}

// The scroll box's position and its room's height, kept from their own events so that drawing never has to
// ask the layout for them in the middle of a frame.
function watchRows(el, store) {
  const rows = el.rows;
  rows.scrollTop = 0;
  rows.room = 0;
  rows.rowHeight = 0;
  rows.box.addEventListener("scroll", () => {
    rows.scrollTop = rows.box.scrollTop;
    if (!rows.redraw) rows.redraw = requestAnimationFrame(() => { rows.redraw = 0; el.shownKey = ""; render(el, store); });
  });
  // A scroll that comes to rest between rows goes on to the nearest row: the box shows whole rows.
  rows.box.addEventListener("scrollend", () => {
    const snapped = Math.round(rows.box.scrollTop / (rows.rowHeight || 20)) * (rows.rowHeight || 20);
    if (Math.abs(snapped - rows.box.scrollTop) > 0.5) rows.box.scrollTop = snapped;
  });
  // The room for the rows, not the box: the box takes the whole rows that fit in it.
  rows.observer = new ResizeObserver(([entry]) => {
    rows.room = entry.contentRect.height;
    rows.rowHeight = 0; // the theme may have changed the font: measured again
    el.shownKey = "";
    render(el, store);
  });
  rows.observer.observe(rows.box.parentElement);
}

// The box as high as the whole rows that fit in its room, and a cue (its inset shadow) at an
// edge with more rows beyond it.
function fitRows(rows, total) {
  const rowHeight = rows.rowHeight || 20;
  const fits = Math.max(1, Math.floor((rows.room + ROW_GAP_PX) / rowHeight));
  setStyle(rows.box, "height", `${Math.min(fits, Math.max(1, total)) * rowHeight - ROW_GAP_PX}px`);
  rows.box.classList.toggle("more-above", rows.scrollTop > 1);
  rows.box.classList.toggle("more-below", rows.scrollTop + fits * rowHeight < total * rowHeight - 1);
}

function render(el, store) {
  const record = store.lastRecord;
  if (!store.session) return; // the budget is not known before the first snapshot
  const key = `${record ? record.step : -1}/${store.selected}/${store.requests.size}/${store.session.session_id}/${store.mineVersion}`;
  if (el.shownKey === key) return; // nothing this panel shows has changed
  el.shownKey = key;
  const budgeted = !UNBUDGETED.has(store.session.scenario.engine.policy);
  if (!record) {
    if (el.rows) el.rows.observer.disconnect();
    el.parts = el.rows = null;
    const budget = store.session.max_num_batched_tokens;
    write(el, html`<p class="muted">No step yet. Press <b>Step</b> (→) or <b>Play</b> (Space).</p><p class="muted">${budgeted
      ? html`Each step spends at most <b>${fmtInt(budget)}</b> ${budget === 1 ? "token" : "tokens"}: running requests first, then new ones.`
      : html`No token budget: a static batch computes its members' whole prompts in one step, then decodes them together.`}</p>`);
    return;
  }
  let prefill = 0, decode = 0;
  for (const [, n, , kind] of record.scheduled) (kind === "prefill" ? (prefill += n) : (decode += n));
  const used = prefill + decode;
  // Without a budget the bar and the rows are shares of the step itself.
  const budget = budgeted ? store.session.max_num_batched_tokens : Math.max(1, used);
  // Speculative decoding: drafts ride on their request's decode; verifications that came back
  // this step accepted some of them (under async scheduling, drafts of an earlier pass).
  const drafts = record.scheduled_spec_decode_tokens || {}, accepted = record.num_accepted_tokens || {};
  const numDrafts = Object.values(drafts).reduce((a, b) => a + b, 0);
  const numAccepted = Object.values(accepted).reduce((a, b) => a + b, 0);
  const parts = Object.entries(record.cost || {});
  const total = parts.reduce((a, [, v]) => a + v, 0) || 1;
  const dominant = parts.length ? parts.reduce((a, b) => (b[1] > a[1] ? b : a))[0] : null;
  // Under async scheduling a pass ends when the batch in flight comes back, while this step's
  // batch runs on the GPU after it: the pass's time and the batch's cost are two figures.
  const overlapped = Boolean(store.session.scenario.engine.async_scheduling);
  const cost = html`${overlapped && parts.length ? html`<span>this batch on the GPU ${fmtSeconds(total)}:</span> ` : ""}${
    parts.map(([k, v], i) => html`${i ? " · " : ""}<span class="${k === dominant ? "dominant" : ""}">${COST_LABELS[k] || k} ${fmtSeconds(v)} (${Math.round((100 * v) / total)}%)</span>`)}`;
  const box = el.rows || {};
  const rowHeight = box.rowHeight || 20;
  const first = Math.max(0, Math.floor((box.scrollTop || 0) / rowHeight) - OVERSCAN_ROWS);
  // From the room, not the box: the box takes its height from these rows (fitRows).
  const last = Math.min(record.scheduled.length, first + Math.ceil((box.room || 400) / rowHeight) + 2 * OVERSCAN_ROWS);
  const rows = record.scheduled.slice(first, last).map(([id, n, before, kind]) => {
    const request = store.requests.get(id);
    const colour = request ? requestColor(request.color) : "#888";
    const width = Math.max(0.6, Math.min(100, (100 * n) / budget));
    const draftCount = drafts[id] || 0;
    const label = kind === "prefill" ? `${fmtInt(n)} tok` : draftCount ? `1+${draftCount} tok` : "1 tok";
    const verified = id in accepted ? `; ${plural(accepted[id], "draft")} accepted in this step's verification` : "";
    const title = kind === "prefill" ? `${id}: prefill chunk of ${plural(n, "token")} after ${fmtInt(before)} cached`
      : `${id}: decode, 1 token${draftCount ? ` and ${plural(draftCount, "draft token")} to verify` : ""} after ${fmtInt(before)} cached${verified}`;
    // The class form's requests this browser sent (class_desk.js) read "#12 yours".
    const mine = Boolean(store.mine && store.mine.has(id));
    return { id, title, colour, label: `${id.replace(/^req-0*(?=\d)/, "#")}${mine ? " yours" : ""}`, mine, kind, width: `${width}%`,
      size: `${kind === "prefill" ? "P " : "D "}${label}`, selected: id === store.selected };
  });
  const notes = [];
  if (record.admitted.length) notes.push(`admitted ${record.admitted.length}`);
  if (record.resumed.length) notes.push(`resumed ${record.resumed.length}`);
  if (record.preempted.length) notes.push(html`<b class="preempted-note">preempted ${record.preempted.length}</b>`);
  if (record.finished.length) notes.push(`finished ${record.finished.length}`);
  if (Object.keys(accepted).length) notes.push(`${fmtInt(numAccepted)} ${numAccepted === 1 ? "draft" : "drafts"} accepted`);
  if (!el.parts) {
    write(el, html`<div class="budget"></div><div class="budget-bar" role="img"><span class="prefill"></span><span class="decode"></span></div><div class="legend"></div><div class="cost"></div><div class="batch-room"><div class="batch-rows" tabindex="0" role="region" aria-label="Requests in this step"><div class="batch-spacer"><div class="batch-window"></div></div></div></div>`);
    el.parts = Object.fromEntries(["budget", "budget-bar", "legend", "cost"].map((name) => [name, el.querySelector(`.${name}`)]));
    el.rows = { box: el.querySelector(".batch-rows"), spacer: el.querySelector(".batch-spacer"), window: el.querySelector(".batch-window"), shown: [] };
    watchRows(el, store);
  }
  // Each part is written only when it changed, and then mostly its figures alone (`setHtml`).
  const set = (name, fragment) => setHtml(el.parts[name], fragment);
  set("budget", html`<span>step <b>${fmtInt(record.step + 1)}</b> · <b>${fmtInt(used)}</b> ${budgeted ? `of ${fmtInt(budget)} tokens` : "tokens, no token budget"} · <b>${fmtInt(record.scheduled.length)}</b> ${noun(record.scheduled.length, "request")}</span><span>${notes.map((note, i) => html`${i ? " · " : ""}${note}`)}</span>`);
  // The bar's widths go through the CSSOM: the pages' CSP refuses style attributes in markup.
  const [prefillBar, decodeBar] = el.parts["budget-bar"].children;
  setStyle(prefillBar, "width", `${(100 * prefill) / budget}%`);
  setStyle(decodeBar, "width", `${(100 * decode) / budget}%`);
  setAttr(el.parts["budget-bar"], "aria-label", budgeted ? `${prefill} prefill and ${decode} decode tokens of a ${budget}-token budget` : `${prefill} prefill and ${decode} decode tokens`);
  set("legend", html`<span><i class="swatch prefill"></i>P prefill ${fmtInt(prefill)}</span><span><i class="swatch decode"></i>D decode ${fmtInt(decode)}${numDrafts ? ` (${fmtInt(numDrafts)} drafts)` : ""}</span>${
    overlapped ? html`<span title="how long this pass of the engine loop took: it waits for the batch in flight to come back">pass time <b>${fmtSeconds(record.step_s)}</b></span>`
      : html`<span>step time <b>${fmtSeconds(record.step_s)}</b></span>`}${
    // Served runs: the step's tokens still pass the API server (ZMQ hop, detokenizing, streaming).
    record.front_end_s ? html`<span class="front-end" title="after the step, its tokens still pass vLLM's API server: the ZMQ hop back, its queue, detokenizing and streaming them to the clients (the longest wait shown)">front end: +${fmtSeconds(record.front_end_s)}</span>` : ""}`);
  set("cost", cost);
  renderRows(el.rows, rows, first, record.scheduled.length);
}

// One element per row position in view, made once; each of its parts is written only where it
// changed: in a run of decode steps, nothing, and a batch turning over (every row in view takes
// another request) writes their text and styles, never parses and builds rows afresh.
const ROW = document.createElement("template");
write(ROW, html`<div class="batch-row"><span><i class="swatch"></i> </span><span class="track"><span class="fill"></span></span><span class="kind"></span></div>`);

function createRow() {
  const el = ROW.content.firstChild.cloneNode(true);
  const [who, track, size] = el.children;
  return { el, swatch: who.firstChild, label: who.lastChild, fill: track.firstChild, size, shown: {} };
}

function renderRows(rows, wanted, first, total) {
  if (!rows.rowHeight && rows.shown.length) rows.rowHeight = rows.shown[0].el.getBoundingClientRect().height + ROW_GAP_PX;
  const rowHeight = rows.rowHeight || 20;
  fitRows(rows, total);
  const spacer = `${Math.max(0, total * rowHeight - ROW_GAP_PX)}px`, offset = `translateY(${first * rowHeight}px)`;
  if (rows.spacer.style.height !== spacer) rows.spacer.style.height = spacer;
  if (rows.window.style.transform !== offset) rows.window.style.transform = offset;
  wanted.forEach((row, i) => {
    let shown = rows.shown[i];
    if (!shown) {
      shown = createRow();
      rows.window.append(shown.el);
      rows.shown.push(shown);
    }
    const was = shown.shown;
    if (was.colour !== row.colour) shown.swatch.style.background = row.colour;
    if (was.label !== row.label) shown.label.data = row.label;
    if (was.kind !== row.kind) shown.fill.className = `fill ${row.kind}`;
    if (was.width !== row.width) shown.fill.style.width = row.width;
    if (was.size !== row.size) shown.size.textContent = row.size;
    if (was.selected !== row.selected) shown.el.classList.toggle("selected", row.selected);
    if (was.mine !== row.mine) shown.el.classList.toggle("mine", row.mine);
    if (was.id !== row.id) shown.el.dataset.id = row.id;
    shown.shown = row;
    // The title (tokens cached so far) changes every step: written when the pointer reaches it.
    shown.el.fullTitle = row.title;
  });
  for (const extra of rows.shown.splice(wanted.length)) extra.el.remove();
}
