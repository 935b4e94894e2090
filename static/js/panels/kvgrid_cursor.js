// The KV grid from the keyboard. The canvas takes the focus; the arrow keys move a cursor from
// block to block (up and down by a row of the grid as drawn, Page Up / Down by a screenful), each
// block's details written in a live region (the words of the pointer's tooltip: block id, owner,
// logical block, ref count, cached prefix); Enter opens the block's request in the inspector.
// Esc hands the keyboard back to the page (controls.js), so Space plays again.

import { groupName, groupOf, tableHolding } from "./kvgrid_groups.js";

// What one block is, in words: the pointer's tooltip and the keyboard cursor's line.
export function blockWords(store, mode, block, owner) {
  const b = store.blocks;
  if (mode === "contiguous") return owner ? `block ${block}: reserved for ${owner}` : `block ${block}: not reserved`;
  if (block === 0) return `block 0: vLLM's reserved null block${store.kvGroups ? "; a table slot a sliding window gave back points here" : ""}`;
  if (owner) {
    const logical = tableHolding(store, owner, block).indexOf(block);
    const group = groupOf(store, block) !== null ? `, ${groupName(store, groupOf(store, block))}` : "";
    return `block ${block}: ${owner}${group}, logical block ${logical}, ref count ${b.ref[block]}${b.cached[block] ? ", cached prefix" : ""}`;
  }
  return b.cached[block] ? `block ${block}: free, still holds a cached prefix (evictable)` : `block ${block}: free`;
}

export function mountCursor(canvas, store, { lineEl, layoutOf, modeOf, ownerAt, reveal, onSelect }) {
  let block = null; // the cursor's block; kept while the focus is away, so Tab comes back to it
  const focused = () => document.activeElement === canvas;
  const say = () => { lineEl.textContent = focused() && block !== null ? blockWords(store, modeOf(), block, ownerAt(block)) : ""; };
  function moveTo(next) {
    block = Math.max(0, Math.min(store.blocks.n - 1, next));
    reveal(block);
    say();
    store.dirty.add("kv");
  }
  // Where the cursor starts: the selected request's first block, else the first block held.
  function start() {
    const table = store.selected ? store.tables.get(store.selected) || [] : [];
    if (table.length) return table[0];
    const held = store.blocks.owner.findIndex((owner, i) => i > 0 && owner);
    return held > 0 ? held : Math.min(1, store.blocks.n - 1);
  }
  // A click selects a block's request and leaves the focus where it was: the arrows go on stepping
  // the session for a pointer's user; the grid takes the keyboard only when Tab brings it there.
  canvas.addEventListener("mousedown", (event) => event.preventDefault());
  canvas.addEventListener("focus", () => {
    if (!store.blocks) return;
    moveTo(block === null || block >= store.blocks.n ? start() : block);
  });
  canvas.addEventListener("blur", () => { say(); store.dirty.add("kv"); });
  canvas.addEventListener("keydown", (event) => {
    if (!store.blocks || event.ctrlKey || event.metaKey || event.altKey) return;
    const layout = layoutOf();
    const page = layout.cols * (layout.strip ? layout.rows : Math.ceil(store.blocks.n / layout.cols));
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: layout.cols, ArrowUp: -layout.cols, PageDown: page, PageUp: -page }[event.key];
    if (step !== undefined) {
      // The grid's own keys while it has the focus: the arrows do not step the session here.
      event.preventDefault(); event.stopPropagation();
      moveTo((block ?? start()) + step);
    } else if (event.key === "Enter" && block !== null) {
      event.preventDefault(); event.stopPropagation();
      const owner = ownerAt(block);
      if (owner) onSelect(owner, { toggle: false });
      else lineEl.textContent = `${blockWords(store, modeOf(), block, null)}: no request holds it`;
    }
  });

  // The cursor's ring, over whatever the cell shows, while the grid has the focus; the line is
  // brought up to date when the state under it changes, but only while paused (a live region
  // rewritten every frame of play would talk over everything).
  function draw(ctx, colours) {
    if (!focused() || block === null) return;
    if (!store.status.playing) {
      const words = blockWords(store, modeOf(), block, ownerAt(block));
      if (lineEl.textContent !== words) lineEl.textContent = words;
    }
    const { cell, cols, rows, offset: first } = layoutOf();
    if (block < first || block >= first + rows * cols) return;
    const x = (block % cols) * cell, y = Math.floor((block - first) / cols) * cell;
    lineEl.classList.toggle("top", y > (rows * cell) / 2);
    ctx.save();
    ctx.lineWidth = 2;
    ctx.strokeStyle = colours.panel; ctx.strokeRect(x - 1, y - 1, cell + 1, cell + 1);
    ctx.strokeStyle = colours.text; ctx.setLineDash([3, 2]); ctx.strokeRect(x - 1, y - 1, cell + 1, cell + 1);
    ctx.restore();
  }
  return { draw };
}
