// One request, inspected: its counters and latencies, its life on a timeline (queued, prefill
// chunks, decodes, preemptions) and its block table. Fetched from the server for the current step.
// Steps are shown as everywhere else: the timeline's iteration k is "step k + 1".

import { fmtInt, fmtSeconds, requestColor } from "../colors.js";

export function mount(el, store, { sessionId }) {
  let shown = null; // `${id}@${step}` last fetched
  let inflight = false;

  async function update() {
    const id = store.selected;
    if (!id) { el.innerHTML = '<p class="muted">Select a request (a chip, a batch row or a KV block) to inspect it.</p>'; shown = null; return; }
    const key = `${id}@${store.step}`;
    if (key === shown || inflight) return;
    inflight = true;
    try {
      const response = await fetch(`/api/sessions/${sessionId}/requests/${encodeURIComponent(id)}`);
      if (!response.ok) { el.innerHTML = `<p class="muted">${id} has not arrived by step ${store.step}.</p>`; shown = key; return; }
      render(await response.json());
      shown = key;
    } finally {
      inflight = false;
      if (`${store.selected}@${store.step}` !== shown) store.dirty.add("inspector");
    }
  }

  function render(detail) {
    const r = detail.request, l = detail.latencies;
    const t0 = r.arrival_s, t1 = Math.max(detail.clock_s, r.finish_s || 0, t0 + 1e-6);
    const pos = (s) => (100 * (s - t0)) / (t1 - t0);
    const colour = requestColor(r.color);
    const segs = [];
    const firstScheduled = r.first_scheduled_s ?? detail.clock_s;
    segs.push(`<span title="queued" style="left:0;width:${pos(firstScheduled)}%;background:var(--waiting);opacity:.5"></span>`);
    for (const run of detail.timeline) {
      if (run.kind === "prefill" || run.kind === "decode") {
        segs.push(`<span title="${run.kind} ${run.tokens} tokens, steps ${run.step + 1}–${run.to_step + 1}" style="left:${pos(run.s)}%;` +
          `width:${Math.max(0.4, pos(run.to_s) - pos(run.s))}%;background:var(--${run.kind})"></span>`);
      } else if (run.kind === "preempted") {
        segs.push(`<span title="preempted at step ${run.step + 1}" style="left:${pos(run.s)}%;width:3px;background:var(--preempted)"></span>`);
      }
    }
    const rows = detail.timeline.filter((run) => run.kind !== "decode" || run.tokens > 0).slice(-40).map((run) => {
      if (run.kind === "prefill") return `<li>step ${run.step + 1}: prefill ${run.tokens} tokens from token ${run.from_token}</li>`;
      if (run.kind === "decode") return `<li>steps ${run.step + 1}–${run.to_step + 1}: ${run.tokens} decode tokens</li>`;
      if (run.kind === "admitted" || run.kind === "resumed") return `<li>step ${run.step + 1}: ${run.kind}${run.cached ? `, ${run.cached} tokens from the prefix cache` : ""}</li>`;
      return `<li>step ${run.step + 1}: <b>${run.kind}</b></li>`;
    }).join("");
    el.innerHTML = `<div class="inspector"><h3><i class="swatch" style="background:${colour}"></i>${r.id} <span class="pill">${r.status}</span></h3>
      <dl class="kvlist">
        <dt>prompt</dt><dd>${fmtInt(Math.min(r.computed, r.prompt))} / ${fmtInt(r.prompt)} computed${r.cached ? ` (${fmtInt(r.cached)} cached)` : ""}</dd>
        <dt>output</dt><dd>${fmtInt(r.output)} / ${fmtInt(r.max_tokens)} tokens</dd>
        <dt>priority</dt><dd>${r.priority}</dd>
        <dt>preemptions</dt><dd>${r.preemptions}</dd>
        <dt>arrived</dt><dd>${fmtSeconds(r.arrival_s)}</dd>
        <dt>queue</dt><dd>${fmtSeconds(l.queue_s)}</dd>
        <dt>TTFT</dt><dd>${fmtSeconds(l.ttft_s)}</dd>
        <dt>TPOT</dt><dd>${fmtSeconds(l.tpot_s)}</dd>
        <dt>E2E</dt><dd>${fmtSeconds(l.e2e_s)}</dd>
        <dt>blocks</dt><dd>${detail.block_table.length ? `${detail.block_table.length}: ${detail.block_table.slice(0, 16).join(" ")}${detail.block_table.length > 16 ? " …" : ""}` : "none"}</dd>
      </dl>
      <div class="timeline" role="img" aria-label="Timeline of ${r.id}">${segs.join("")}</div>
      <ul class="muted">${rows}</ul></div>`;
  }

  return { update };
}
