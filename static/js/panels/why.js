// "Why?": the evidence behind the last step, from the server's decision trace: for the selected
// request what it asked, got and why; the step's preemptions (who needed blocks, how many were
// free, the victim and the rule, where its blocks went); why the waiting queue stopped; and the
// block-table diff against the step before, listed here and drawn on the KV grid.

import { fmtInt } from "../colors.js";
import { blockDiff, whyOf } from "../why_data.js";
import { html, render as write } from "../dom.js";
import { explainRequest, explainStep, freedWords, leftWindowWords, mergedWindows } from "../why_words.js";

const MAX_IDS = 400; // block ids listed per kind (the count is always whole)

export function mount(el, store, { sessionId, onSelect }) {
  let shown = ""; // `${step}/${selected}` drawn
  let drawOnGrid = true;
  let retry = null; // the timer that asks again a server that was busy

  el.addEventListener("click", (event) => {
    const rid = event.target.closest("[data-id]");
    if (rid) onSelect(rid.dataset.id, { toggle: false, tab: "why" });
  });
  el.addEventListener("change", (event) => {
    if (event.target.id !== "why-draw") return;
    drawOnGrid = event.target.checked;
    shown = "";
    store.dirty.add("why");
  });

  async function update() {
    const record = store.lastRecord;
    if (!record) { write(el, html`<p class="muted">Step the engine, then ask why.</p>`); setDiff(null); return; }
    if (store.status.playing) {
      if (shown !== "playing") write(el, html`<p class="muted">Pause (Space) to see why the scheduler did what it did.</p>`);
      shown = "playing";
      setDiff(null);
      return;
    }
    const key = `${record.step}/${store.selected}/${drawOnGrid}`;
    if (key === shown) return;
    shown = key;
    const reply = await whyOf(sessionId, record.step);
    if (shown !== key) return; // the step or the selection moved on while fetching
    if (reply.busy) {
      write(el, html`<p class="muted" role="status">The server is busy replaying other steps; asking again in ${reply.busy} s.</p>`);
      setDiff(null);
      clearTimeout(retry);
      retry = setTimeout(() => { if (shown === key) { shown = ""; store.dirty.add("why"); } }, reply.busy * 1000);
      return;
    }
    if (reply.failed) { write(el, html`<p class="muted" role="status">No reasons for step ${fmtInt(record.step + 1)} now: ${reply.failed}.</p>`); setDiff(null); return; }
    const answer = reply.answer;
    if (!answer) { write(el, html`<p class="muted">No reasons for step ${fmtInt(record.step + 1)}.</p>`); setDiff(null); return; }
    render(answer);
  }

  function setDiff(diff) {
    const next = diff && drawOnGrid ? diff : null;
    if (store.blockDiff === next) return;
    store.blockDiff = next;
    store.dirty.add("kv");
  }

  function render(answer) {
    const rid = store.selected;
    const status = rid ? store.requests.get(rid)?.status : null;
    const diff = blockDiff(answer);
    const sentences = (list) => list.map((s) => html`<p>${s}</p>`);
    const request = rid
      ? html`<section class="why-request" aria-label="Why ${rid}"><h3>${rid} in step ${fmtInt(answer.step + 1)}</h3>${sentences(explainRequest(answer, rid, status, store.kvGroups))}</section>`
      : html`<p class="muted">Select a request (a chip, a batch row, a KV block) to see why it got what it got.</p>`;
    write(el, html`${request}<section class="why-step"><h3>Step ${fmtInt(answer.step + 1)}</h3>${sentences(explainStep(answer, rid))}</section>${diffSection(answer, diff)}`);
    setDiff(diff);
  }

  function diffSection(answer, diff) {
    const d = answer.decisions;
    const list = (ids) => ids.slice(0, MAX_IDS).join(" ") + (ids.length > MAX_IDS ? ` … (+${ids.length - MAX_IDS})` : "");
    const perRequest = (map) => Object.entries(map).map(([r, ids]) =>
      html`<li><button type="button" class="rid" data-id="${r}">${r}</button>: ${list(ids)}</li>`);
    const frees = d.frees.filter((f) => f.blocks).map((f) =>
      html`<li><button type="button" class="rid" data-id="${f.request}">${f.request}</button> ${f.cause}: ${freedWords(f)} <span class="ids">${list([...f.to_head, ...f.to_tail_cached, ...f.to_tail])}</span></li>`);
    const windows = mergedWindows(d.left_window || [], store.kvGroups).map((w) =>
      html`<li><button type="button" class="rid" data-id="${w.request}">${w.request}</button>: ${leftWindowWords(w, d.limits, store.kvGroups)} <span class="ids">${list([...w.to_head, ...w.to_tail_cached, ...w.to_tail])}</span></li>`);
    const row = (kind, label, count, body) =>
      html`<div class="diff-kind"><h4><i class="glyph ${kind}" aria-hidden="true"></i>${label} <b>${fmtInt(count)}</b></h4>${body}</div>`;
    return html`<section class="why-diff" aria-label="Block table diff"><h3>Blocks, against step ${fmtInt(answer.step)}</h3><label><input type="checkbox" id="why-draw" ${drawOnGrid ? html`checked` : ""}> draw on the KV grid</label>${[
      row("allocated", "allocated", diff.allocated.length, html`<ul>${perRequest(d.allocated)}</ul>`),
      row("freed", "freed", diff.freed.length, html`<ul>${frees}${windows}</ul>`),
      row("evicted", "evicted from the prefix cache", diff.evicted.length, html`<p class="ids">${list(diff.evicted)}</p>`),
      ...dropRows(d, row),
      row("shared", "newly shared or hit in the prefix cache", diff.shared.length, html`${
        Object.keys(d.newly_shared).length ? html`<p>shared with requests that hold them:</p><ul>${perRequest(d.newly_shared)}</ul>` : ""}${
        Object.keys(d.revived).length ? html`<p>cached prefixes taken back off the free queue:</p><ul>${perRequest(d.revived)}</ul>` : ""}`)]}</section>`;
  }

  return { update };
}

// Hits an EAGLE/MTP drafter cut by their last block: the cached block left out, and the block
// allocated fresh in its place (the first of the request's new blocks).
function dropRows(d, row) {
  const drops = Object.entries(d.dropped_hit_blocks || {});
  if (!drops.length) return [];
  return [row("allocated", "dropped from a prefix-cache hit, allocated fresh", drops.length, html`<ul>${drops.map(([r, drop]) =>
    html`<li><button type="button" class="rid" data-id="${r}">${r}</button>: cached block ${drop.block} left out (${drop.rule}); ${
      (d.allocated[r] || []).length ? `new block ${d.allocated[r][0]} in its place` : "not admitted this step"}</li>`)}</ul>`)];
}
