// The KV panel's words beside its canvas: the usage gauge, the summary line (unused slots,
// shared and cached blocks, or what reserving max_model_len costs), the selected request's
// block table, the legend and the pool's size. Written each frame, only where they changed.

import { fmtInt, statusLabel } from "../colors.js";
import { html, render } from "../dom.js";
import { setAttr, setHtml, setText } from "../writes.js";
import { groupLegend, groupRows, tablesOf } from "./kvgrid_groups.js";

export function mountText(store, { legendEl, summaryEl, subEl, gaugeEl }) {
  // The gauge's bar and figure are made once; each frame changes the bar's width and the text.
  render(gaugeEl, html`<i></i><span></span>`);
  const gaugeBar = gaugeEl.firstChild, gaugeText = gaugeEl.lastChild;
  // Speculative decoding on: requests hold lookahead slots for their drafts.
  const drafts = () => Boolean(store.session.scenario.engine.speculative_config);

  function updateText(mode, reservation) {
    // The gauge reads the view shown: the engine's own pool, or the "Reserve max" view's regions.
    const r = mode === "contiguous" ? reservation : null;
    const percent = ((r ? r.usage : store.lastRecord ? store.lastRecord.kv_usage : 0) * 100).toFixed(1);
    if (gaugeBar.style.width !== `${percent}%`) gaugeBar.style.width = `${percent}%`;
    setText(gaugeText, `${percent}% ${r ? "reserved" : "used"}`);
    setAttr(gaugeEl, "aria-valuenow", percent);
    setAttr(gaugeEl, "aria-label", r ? "KV blocks reserved in the Reserve max view" : "KV usage");
    const summary = mode === "paged" ? pagedSummary()
      : html`reserving ${fmtInt(r.region)} blocks (max_model_len) per request: <b>${r.fitted} of ${r.running}</b> running requests fit; <b>${(r.waste * 100).toFixed(0)}%</b> of reserved slots unused`;
    summaryEl.classList.toggle("grouped", Boolean(store.kvGroups)); // a row per group: room for them
    setHtml(summaryEl, html`<div>${summary}</div>${blockTable(mode)}`);
  }

  function pagedSummary() {
    const bs = store.session.block_size;
    // Blocks past a request's computed tokens are its lookahead: slots vLLM allocates ahead for
    // the draft tokens of speculative decoding (the contiguous view reserves whole regions instead).
    // A hybrid model's tables (one per group) count their null slots as nothing held: a sliding
    // window gave those blocks back to the pool.
    let slots = 0, tokens = 0, lookahead = 0, nulls = 0;
    for (const id of store.tables.keys()) {
      const request = store.requests.get(id);
      if (!request) continue;
      for (const table of tablesOf(store, id)) {
        const gone = table.reduce((count, block) => count + (block === 0 ? 1 : 0), 0);
        slots += (table.length - gone) * bs;
        tokens += Math.max(0, Math.min(request.computed, table.length * bs) - gone * bs);
        lookahead += Math.max(0, table.length - Math.max(1, Math.ceil(request.computed / bs)));
        nulls += gone;
      }
    }
    const { ref, cached: hasPrefix, owner, n } = store.blocks;
    let shared = 0, cached = 0;
    for (let block = 0; block < n; block++) {
      if (ref[block] > 1) shared += 1;
      if (hasPrefix[block] && !owner[block]) cached += 1;
    }
    const reserving = store.session.scenario.engine.kv_allocator === "contiguous";
    const drafting = !reserving && drafts();
    const unused = slots - tokens - (drafting ? lookahead * bs : 0);
    return html`${reserving ? "reserved but unused slots" : "unused slots in last blocks"}: <b>${slots ? ((unused / slots) * 100).toFixed(1) : "0.0"}%</b>${drafting ? ` · lookahead blocks ${fmtInt(lookahead)}` : ""} · shared blocks ${fmtInt(shared)} · evictable cached ${fmtInt(cached)}${hitRate()}${
      store.kvGroups ? html` · <span title="table slots pointing at the null block: blocks the sliding windows gave back to the pool while their requests ran">null slots <b>${fmtInt(nulls)}</b></span>` : ""}`;
  }

  // The run's prefix-cache hit rate so far (vLLM's PrefixCacheStats), while prefix caching is on.
  function hitRate() {
    const report = store.metrics && store.metrics.report;
    if (!report || !store.session.scenario.engine.enable_prefix_caching) return "";
    return html` · <span class="hit-rate" title="prompt tokens served from the prefix cache, of all prompt tokens looked up so far">prefix hits <b>${(100 * report.prefix_cache_hit_rate).toFixed(1)}%</b></span>`;
  }

  function blockTable(mode) {
    const id = store.selected;
    if (!id || mode !== "paged") return "";
    const table = store.tables.get(id) || [];
    const request = store.requests.get(id);
    if (!table.length) return html`<div class="block-table"><b>${id}</b> holds no blocks (${request ? statusLabel(request.status, true) : "not visible"})</div>`;
    if (store.kvGroups) return html`<div class="block-table"><b>${id}</b> <span title="one row per KV cache group; null: the block left the window and went back to the pool">logical→physical per group (* shared):</span>${groupRows(store, id, request)}</div>`;
    const bs = store.session.block_size;
    const entries = table.map((block, i) => {
      const filled = request ? Math.max(0, Math.min(bs, request.computed - i * bs)) : bs;
      const shared = store.blocks.ref[block] > 1 ? "*" : "";
      return html`${i ? " " : ""}<code title="logical ${i} → physical ${block}, ${filled}/${bs} slots${shared ? ", shared" : ""}">${i}→${block}${shared}${filled < bs ? ` (${filled}/${bs})` : ""}</code>`;
    });
    return html`<div class="block-table"><b>${id}</b> logical→physical (* shared): ${entries}</div>`;
  }

  // Each swatch's look is a class in dashboard.css (.swatch.kv-*): no style attribute in markup,
  // which the pages' CSP (style-src 'self') refuses.
  function legend(view) {
    const sw = (kind, label, title) => html`<span title="${title || label}"><i class="swatch kv-${kind}"></i>${label}</span>`;
    if (view === "contiguous") return [sw("held", "held"), sw("reserved", "reserved, unused"), sw("free", "free")];
    return [sw("free", "free", "free block"),
      sw("cached", "cached", "free, but still holds a cached prefix: a new request with that prefix reuses it; evicted when reallocated"),
      sw("shared", "shared", "shared by several requests through the prefix cache (ref count > 1)"),
      sw("partial", "partly full", "a request's last block, filled to the height shown: PagedAttention's only waste"),
      drafts() ? sw("lookahead", "lookahead", "allocated ahead of a request's tokens for the draft tokens speculative decoding will verify (vLLM's lookahead slots)") : "",
      sw("null", "null", store.kvGroups ? "block 0, vLLM's reserved null block: a table slot whose block left a sliding window points here"
        : "block 0, vLLM's reserved null block"),
      ...groupLegend(store)];
  }

  // After a full redraw: the pool's size, and the legend of the view with the window shown.
  function updateFrame(mode, n, layout) {
    render(subEl, html`· ${fmtInt(n)} blocks × ${store.session.block_size} tokens`);
    const last = Math.min(n, layout.offset + layout.rows * layout.cols) - 1;
    const windowNote = layout.strip ? html`<span class="window-note">showing blocks ${fmtInt(layout.offset)}–${fmtInt(last)}; the strip below is the whole pool (click it or scroll to move)</span>` : "";
    render(legendEl, html`${legend(mode)}${windowNote}`);
  }

  return { updateText, updateFrame };
}
