// One request, inspected: why it got what it got in the last step (from the decision trace), its
// counters and latencies, its life on a timeline (queued, prefill chunks, decodes, preemptions),
// its whole block table and its history step by step (both virtualised lists, never truncated).
// Fetched from the server for the current step.

import { cssVar, fmtInt, fmtSeconds, plural, requestColor, statusLabel } from "../colors.js";
import { virtualList } from "../virtual_list.js";
import { reasonsOf } from "../why_data.js";
import { el as element, html, render as write } from "../dom.js";
import { explainRequest } from "../why_words.js";
import { shownPrompt } from "../class_desk.js";

export function mount(el, store, { sessionId, onWhy, onSelect }) {
  let shown = null; // `${id}@${step}` last fetched
  let inflight = false;

  el.addEventListener("click", (event) => {
    if (event.target.closest(".why-open")) onWhy();
    const other = event.target.closest("[data-id]");
    if (other) onSelect(other.dataset.id, { toggle: false });
  });

  async function update() {
    const id = store.selected;
    if (!id) { write(el, html`<p class="muted">Select a request (a chip, a batch row or a KV block) to inspect it.</p>`); shown = null; return; }
    const key = `${id}@${store.step}@${store.status.playing}`;
    if (key === shown || inflight) return;
    inflight = true;
    try {
      // The history (a row per step) only while paused: it is long and the step moves on.
      const paused = !store.status.playing;
      const response = await fetch(`/api/sessions/${sessionId}/requests/${encodeURIComponent(id)}?history=${paused}`);
      if (!response.ok) { write(el, html`<p class="muted">${id} has not arrived by step ${fmtInt(store.step)}.</p>`); shown = key; return; }
      const detail = await response.json();
      detail.prompt = await shownPrompt(sessionId, id);
      // The evidence only while paused: each answer replays a stretch of the run on the server.
      const record = store.lastRecord;
      const answer = record && !store.status.playing ? await reasonsOf(sessionId, record.step) : null;
      render(detail, answer);
      shown = key;
    } finally {
      inflight = false;
      if (`${store.selected}@${store.step}@${store.status.playing}` !== shown) store.dirty.add("inspector");
    }
  }

  function render(detail, answer) {
    const r = detail.request, l = detail.latencies;
    const t0 = r.arrival_s, t1 = Math.max(detail.clock_s, r.finish_s || 0, t0 + 1e-6);
    const pos = (s) => (100 * (s - t0)) / (t1 - t0);
    // Built as elements, placed through the CSSOM: the pages' CSP refuses style attributes in markup.
    const seg = (kind, title, left, width) => element("span", { class: kind, title, style: width ? { left: `${left}%`, width } : { left: `${left}%` } });
    const segs = [seg("queued", "queued", 0, `${pos(r.first_scheduled_s ?? detail.clock_s)}%`)];
    for (const run of detail.timeline) {
      if (run.kind === "prefill" || run.kind === "decode") {
        segs.push(seg(run.kind, `${run.kind} ${plural(run.tokens, "token")}, steps ${fmtInt(run.step + 1)}–${fmtInt(run.to_step + 1)}`, pos(run.s),
          `${Math.max(0.4, pos(run.to_s) - pos(run.s))}%`));
      } else if (run.kind === "preempted") {
        segs.push(seg("preempted", `preempted in step ${fmtInt(run.step + 1)}`, pos(run.s), null));
      }
    }
    const why = answer
      ? html`<section class="why-request"><p class="why-head">Why, in step ${fmtInt(answer.step + 1)} <button type="button" class="why-open ghost">Why? tab ›</button></p>${
        explainRequest(answer, r.id, r.status, store.kvGroups).map((s) => html`<p>${s}</p>`)}</section>`
      : html`<p class="muted why-head">Pause to see why it got what it got. <button type="button" class="why-open ghost">Why? tab ›</button></p>`;
    // A hybrid model's table per group (from the store: the same step), a heading row before each.
    const groups = store.kvGroups ? store.groupTables.get(r.id) : null;
    const groupRows = groups ? groups.flatMap((t, g) => [[g, -1, 0], ...t.map((block, i) => [g, i, block])]) : null;
    const events = detail.timeline.filter((run) => run.kind !== "prefill" && run.kind !== "decode")
      .map((run) => `step ${fmtInt(run.step + 1)}: ${run.kind}${run.cached ? ` (${plural(run.cached, "token")} from the prefix cache)` : ""}`).join(" · ");
    const previous = { table: el.querySelector(".vlist.table")?.scrollTop, history: el.querySelector(".vlist.history")?.scrollTop };
    write(el, html`<div class="inspector"><h3><i class="swatch"></i>${r.id} <span class="pill">${statusLabel(r.status)}</span>${store.mine && store.mine.has(r.id) ? html` <span class="pill mine">yours</span>` : ""}</h3>
      ${why}
      <dl class="kvlist">
        ${detail.prompt === null ? "" : html`<dt>its text</dt><dd class="prompt-text">${detail.prompt}</dd>`}
        <dt>prompt</dt><dd>${fmtInt(Math.min(r.computed, r.prompt))} / ${fmtInt(r.prompt)} computed${r.cached ? ` (${fmtInt(r.cached)} cached)` : ""}</dd>
        <dt>output</dt><dd>${fmtInt(r.output)} / ${fmtInt(r.max_tokens)} tokens${detail.in_flight ? ` + ${fmtInt(detail.in_flight)} in flight` : ""}</dd>
        <dt>priority</dt><dd>${r.priority}</dd>
        <dt>preemptions</dt><dd>${r.preemptions}</dd>
        <dt>arrived</dt><dd>${fmtSeconds(r.arrival_s)}</dd>
        <dt>queue</dt><dd>${fmtSeconds(l.queue_s)}</dd>
        <dt>TTFT</dt><dd>${fmtSeconds(l.ttft_s)}</dd>
        <dt>TPOT</dt><dd>${fmtSeconds(l.tpot_s)}</dd>
        <dt>E2E</dt><dd>${fmtSeconds(l.e2e_s)}</dd>
      </dl>
      ${lastTokenInFlight(detail)}
      <div class="timeline" role="img" aria-label="Timeline of ${r.id}"></div>
      ${events ? html`<p class="muted events-line">${events}</p>` : ""}
      <h4>Block table: ${plural(detail.block_table.length, "block")}${groupRows ? html` in ${fmtInt(store.kvGroups.length)} KV cache groups` : ""}</h4>
      <div class="vlist table" tabindex="0" aria-label="Block table of ${r.id}"></div>
      ${detail.history ? html`<h4>History: ${plural(detail.history.length, "step")} run</h4>
      <div class="vlist history" tabindex="0" aria-label="History of ${r.id}"></div>` : html`<p class="muted">Pause to list its history step by step.</p>`}</div>`);
    el.querySelector(".inspector h3 .swatch").style.background = requestColor(r.color);
    el.querySelector(".timeline").append(...segs);
    const rowHeight = Math.round(parseFloat(cssVar("--small")) * 1.5);
    const bs = store.session.block_size;
    const table = detail.block_table;
    const groupRow = ([g, logical, block]) => {
      if (logical < 0) return html`<div class="vrow vgroup"><span>${store.kvGroups[g].label}</span></div>`;
      // The words take the slots and ref columns together: "left the window" fits no single column.
      if (block === 0) return html`<div class="vrow"><span>${logical}</span><span>null</span><span class="vwide muted">left the window</span></div>`;
      const filled = Math.max(0, Math.min(bs, r.computed - logical * bs)), ref = store.blocks ? store.blocks.ref[block] : 1;
      return html`<div class="vrow"><span>${logical}</span><span>${block}</span><span>${filled}/${bs}</span><span>${ref > 1 ? `${ref} shared` : ref}</span></div>`;
    };
    // The step's hit lost its last block to a drafter: the block allocated fresh in its place.
    const cut = answer && (answer.decisions.dropped_hit_blocks || {})[r.id];
    const freshAt = cut ? table.indexOf((answer.decisions.allocated[r.id] || [])[0]) : -1;
    const tableList = virtualList(el.querySelector(".vlist.table"), {
      rowHeight,
      header: html`<div class="vrow vhead"><span>logical</span><span>physical</span><span>slots</span><span>ref</span></div>`,
      renderRow: (i) => {
        if (groupRows) return groupRow(groupRows[i]);
        const block = table[i];
        const filled = Math.max(0, Math.min(bs, r.computed - i * bs));
        const ref = store.blocks ? store.blocks.ref[block] : 1;
        if (i === freshAt) return html`<div class="vrow dropped-hit" title="cached block ${cut.block} matched here; the drafter's rule (${cut.rule}) dropped it from the hit"><span>${i}</span><span>${block}</span><span>${filled}/${bs}</span><span>new, not ${cut.block}</span></div>`;
        return html`<div class="vrow"><span>${i}</span><span>${block}</span><span>${filled}/${bs}</span><span>${ref > 1 ? `${ref} shared` : ref}</span></div>`;
      },
    });
    tableList.setCount(groupRows ? groupRows.length : table.length);
    if (previous.table !== undefined) el.querySelector(".vlist.table").scrollTop = previous.table;
    const history = detail.history;
    if (!history) return;
    const historyList = virtualList(el.querySelector(".vlist.history"), {
      rowHeight,
      // With window groups: the blocks its tables held over every group, those given back not counted.
      header: html`<div class="vrow vhead"><span>step</span><span>tokens</span><span>from token</span>${store.kvGroups
        ? html`<span title="blocks its tables held after scheduling, over every KV cache group (null slots not counted)">blocks</span>` : html`<span>blocks</span>`}</div>`,
      renderRow: (i) => {
        const [step, tokens, before, blocks, kind] = history[i];
        const scheduled = kind === "prefill" ? `${tokens} prefill` : tokens > 1 ? `1+${tokens - 1} drafts` : "1 decode";
        return html`<div class="vrow"><span>${step + 1}</span><span>${scheduled}</span><span>${before}</span><span>${blocks}</span></div>`;
      },
    });
    historyList.setCount(history.length);
    if (previous.history !== undefined) el.querySelector(".vlist.history").scrollTop = previous.history; else historyList.scrollToEnd();
  }

  return { update };
}

// Under async scheduling a step is scheduled while the one before still runs: a request whose last
// token is in that batch stays running, holding its blocks, until the batch's output comes back.
function lastTokenInFlight(detail) {
  const r = detail.request;
  if (!detail.in_flight || r.status !== "running" || r.output + 1 < r.max_tokens) return "";
  return html`<p class="in-flight">Its last token is in flight. Under async scheduling the engine schedules a step while the one before still runs, so this request stays running, holding its ${fmtInt(detail.block_table.length)} blocks, until that token comes back in the next pass; then it finishes.</p>`;
}
