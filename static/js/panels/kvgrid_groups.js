// A hybrid model's KV cache groups on the KV grid: several groups over one block pool, as vLLM
// 0.33's HybridKVCacheCoordinator keeps them (a full-attention group beside sliding-window ones).
// A request holds one table per group, each laid out by its own logical positions (every group
// holds the same tokens), and each held block carries a band along its top in its group's colour,
// which the legend names in vLLM's words. A single-group engine draws no band.

import { cssVar } from "../colors.js";
import { html } from "../dom.js";

// The palette has this many group colours (vLLM's models have 8 groups at most: see kv_cache_groups.py).
const GROUP_COLOURS = 8;
const NO_GROUP = 255;

// A request's tables as the grid walks them: its one table, or its table per group (0: the null block).
export function tablesOf(store, id) {
  if (store.kvGroups) return store.groupTables.get(id) || [];
  const table = store.tables.get(id);
  return table ? [table] : [];
}

// The group whose table holds `block` (null: none, or a single-group engine).
export function groupOf(store, block) {
  const group = store.kvGroups && store.blocks.group ? store.blocks.group[block] : NO_GROUP;
  return group === NO_GROUP ? null : group;
}

// The table holding `block` among its owner's, for the block's logical position in it.
export function tableHolding(store, owner, block) {
  if (!store.kvGroups) return store.tables.get(owner) || [];
  return (store.groupTables.get(owner) || [])[groupOf(store, block)] || [];
}

// The group in vLLM's words, "sliding window 128", numbered where several groups read the same
// (Gemma 3: one full-attention group and six of sliding window 1024).
function groupLabel(store, group) {
  const { label } = store.kvGroups[group];
  return store.kvGroups.some((other, g) => g !== group && other.label === label) ? `${label} (group ${group})` : label;
}

// "group 1, sliding window 128": the words a tooltip uses.
export function groupName(store, group) {
  return `group ${group}, ${store.kvGroups[group].label}`;
}

function bandColours() {
  return Array.from({ length: GROUP_COLOURS }, (_, g) => cssVar(`--group-${g}`));
}

// The band along a cell's top: thick enough to tell at 10 px cells from the back of a hall.
const bandHeight = (size) => Math.max(2, Math.round(size * 0.3));

// The bands of every held cell in the window drawn (blocks `first` to `last` - 1), one fill style
// per group. `at(block)` gives a cell's corner.
export function drawBands(ctx, store, { at, first, last, size }) {
  const { group, owner } = store.blocks;
  if (!store.kvGroups || !group) return;
  const colours = bandColours(), height = bandHeight(size);
  const byGroup = colours.map(() => []);
  for (let block = Math.max(1, first); block < last; block++) {
    if (group[block] !== NO_GROUP && owner[block]) byGroup[group[block] % GROUP_COLOURS].push(block);
  }
  byGroup.forEach((cells, g) => {
    if (!cells.length) return;
    ctx.fillStyle = colours[g];
    for (const block of cells) { const [x, y] = at(block); ctx.fillRect(x, y, size, height); }
  });
}

// The band of one cell, for a repaint.
export function drawBand(ctx, store, block, x, y, size) {
  const group = groupOf(store, block);
  if (group === null) return;
  ctx.fillStyle = bandColours()[group % GROUP_COLOURS];
  ctx.fillRect(x, y, size, bandHeight(size));
}

// The legend's entries: one per group, or one for a run of groups that read the same (Gemma 3's
// six of sliding window 1024), with a swatch each.
export function groupLegend(store) {
  const entries = [];
  (store.kvGroups || []).forEach((group, g) => {
    const last = entries[entries.length - 1];
    if (last && last.label === group.label) last.groups.push(g); else entries.push({ label: group.label, groups: [g] });
  });
  return entries.map(({ label, groups }) => {
    const which = groups.length > 1 ? ` (groups ${groups[0]}–${groups[groups.length - 1]})` : "";
    return html`<span title="KV cache group${groups.length > 1 ? "s" : ""} ${groups.join(", ")}: ${label}; the band along a block's top says which group holds it">${
      groups.map((g) => html`<i class="swatch kv-group-${g % GROUP_COLOURS}"></i>`)}${label}${which}</span>`;
  });
}

// The selected request's table in each group, a row each: runs of consecutive blocks as one
// entry ("4–11→343–350"), a run of null slots (blocks a window gave back) as "0–13→null".
export function groupRows(store, id, request) {
  const bs = store.session.block_size, ref = store.blocks.ref;
  const filled = (i) => (request ? Math.max(0, Math.min(bs, request.computed - i * bs)) : bs);
  return tablesOf(store, id).map((table, g) => {
    const entries = [];
    for (let i = 0; i < table.length;) {
      const block = table[i], shared = block !== 0 && ref[block] > 1;
      let last = i; // the run: null slots, or consecutive full blocks alike in being shared
      while (last + 1 < table.length && (block === 0 ? table[last + 1] === 0
        : table[last + 1] === table[last] + 1 && (ref[table[last + 1]] > 1) === shared && filled(last + 1) === bs && filled(i) === bs)) last += 1;
      const span = (a, b) => (a === b ? `${a}` : `${a}–${b}`);
      const gap = entries.length ? " " : "";
      if (block === 0) {
        entries.push(html`${gap}<code class="null-slot" title="logical ${span(i, last)} → the null block: out of the window, given back to the pool">${span(i, last)}→null</code>`);
      } else {
        const part = filled(i) < bs ? ` (${filled(i)}/${bs})` : "";
        entries.push(html`${gap}<code title="logical ${span(i, last)} → physical ${span(block, table[last])}${shared ? ", shared" : ""}${part ? `, ${filled(i)}/${bs} slots` : ""}">${span(i, last)}→${span(block, table[last])}${shared ? "*" : ""}${part}</code>`);
      }
      i = last + 1;
    }
    return html`<div class="group-row"><i class="swatch kv-group-${g % GROUP_COLOURS}" aria-hidden="true"></i>${groupLabel(store, g)}: ${entries}</div>`;
  });
}
