// The KV block pool on a canvas: one cell per physical block, coloured by the request that
// owns it. Free blocks are plain; free blocks still holding a cached prefix (evictable) carry a
// corner mark; blocks shared by several requests carry a dot; a request's last block shows how
// full it is (PagedAttention's only waste). The "reserve max length" view lays the same running
// requests out the pre-PagedAttention way, one max_model_len region each, so the waste is seen.
// Cells never shrink below a readable size: when the pool does not fit, the grid shows a window of
// it (following the selected request's blocks; scroll or click the strip to move) above an
// overview strip of the whole pool.

import { cssVar, requestColor } from "../colors.js";
import { setAttr, setProp, setText } from "../writes.js";
import { blockWords, mountCursor } from "./kvgrid_cursor.js";
import { drawBand, drawBands, tableHolding, tablesOf } from "./kvgrid_groups.js";
import { mountText } from "./kvgrid_text.js";

export function mount(canvas, store, { onSelect, legendEl, summaryEl, subEl, gaugeEl, cursorEl, pagedButton, contiguousButton }) {
  let mode = "paged";
  let layout = null; // { cell, cols, gap, dpr, rows, offset, strip }
  let offset = 0; // first block in the window (a multiple of cols) when the pool does not fit
  let followed = null; // the selected request the window last moved to
  let hitOwners = []; // contiguous view: block -> request id drawn there

  // The size comes from the observer, so drawing never forces a layout by reading it.
  let box = { width: 0, height: 0 };
  const resize = new ResizeObserver(([entry]) => {
    box = { width: entry.contentRect.width, height: entry.contentRect.height };
    store.dirty.add("kv");
  });
  resize.observe(canvas.parentElement);

  function setMode(next) {
    mode = next;
    pagedButton.classList.toggle("on", mode === "paged");
    contiguousButton.classList.toggle("on", mode === "contiguous");
    pagedButton.setAttribute("aria-checked", String(mode === "paged"));
    contiguousButton.setAttribute("aria-checked", String(mode === "contiguous"));
    store.dirty.add("kv");
  }
  // The pool as drawn is the arm's own allocator: under a contiguous one each request already
  // holds its whole reservation, so the toggle names that, and the re-laid "Reserve max" view
  // (the same picture again) goes.
  function nameAllocator() {
    const reserving = store.session.scenario.engine.kv_allocator === "contiguous";
    setText(pagedButton, reserving ? "Reserve max" : "Paged");
    setAttr(pagedButton, "title", reserving ? "This engine's pool: each request holds max_model_len of blocks" : "This engine's pool, paged");
    setProp(contiguousButton, "hidden", reserving);
    if (reserving && mode !== "paged") setMode("paged");
  }
  pagedButton.addEventListener("click", () => setMode("paged"));
  contiguousButton.addEventListener("click", () => setMode("contiguous"));

  function blockAt(event) {
    if (!layout) return -1;
    const rect = canvas.getBoundingClientRect();
    const col = Math.floor((event.clientX - rect.left) / layout.cell);
    const row = Math.floor((event.clientY - rect.top) / layout.cell);
    if (row >= layout.rows) return -1;
    const block = layout.offset + row * layout.cols + col;
    return col < layout.cols && block >= 0 && block < store.blocks.n ? block : -1;
  }
  function inStrip(event) {
    const rect = canvas.getBoundingClientRect();
    return layout && layout.strip && event.clientY - rect.top >= layout.stripTop;
  }
  function moveWindow(block) {
    if (!layout || !layout.strip) return;
    const rows = Math.ceil(store.blocks.n / layout.cols);
    const row = Math.max(0, Math.min(rows - layout.rows, Math.floor(block / layout.cols) - Math.floor(layout.rows / 2)));
    if (row * layout.cols !== offset) { offset = row * layout.cols; store.dirty.add("kv"); }
  }
  canvas.addEventListener("wheel", (event) => {
    if (!layout || !layout.strip) return;
    event.preventDefault();
    const rows = Math.ceil(store.blocks.n / layout.cols);
    const row = Math.max(0, Math.min(rows - layout.rows, offset / layout.cols + Math.sign(event.deltaY) * Math.max(1, layout.rows >> 2)));
    offset = row * layout.cols; store.dirty.add("kv");
  }, { passive: false });
  function ownerAt(block) {
    return mode === "paged" ? store.blocks.owner[block] : hitOwners[block];
  }
  canvas.addEventListener("click", (event) => {
    if (inStrip(event)) {
      const rect = canvas.getBoundingClientRect();
      moveWindow(Math.floor(((event.clientX - rect.left) / rect.width) * store.blocks.n));
      return;
    }
    const block = blockAt(event);
    if (block >= 0 && ownerAt(block)) onSelect(ownerAt(block));
  });
  canvas.addEventListener("mousemove", (event) => {
    if (inStrip(event)) { canvas.title = "the whole pool: how full each part is; click to show that part above"; return; }
    const block = blockAt(event);
    if (block < 0 || !store.blocks) { canvas.title = ""; return; }
    canvas.title = blockWords(store, mode, block, ownerAt(block));
  });
  // The compare page's grids are pictures only: the keyboard cursor is the dashboard's.
  const cursor = !cursorEl ? { draw() {} } : mountCursor(canvas, store, {
    lineEl: cursorEl, layoutOf: () => layout, modeOf: () => mode, ownerAt, onSelect,
    reveal: (block) => { if (layout && (block < layout.offset || block >= layout.offset + layout.rows * layout.cols)) moveWindow(block); },
  });

  function sizeCanvas(n) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, box.width), h = Math.max(1, box.height);
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    // The whole pool while its cells stay at 8 px or more; below that, a window at a size that
    // reads from the back of a hall in the projector theme.
    const minCell = document.documentElement.dataset.theme === "projector" ? 10 : 8;
    let cell = Math.max(2, Math.min(48, Math.floor(Math.sqrt((w * h) / n))));
    while (cell > 2 && Math.floor(w / cell) * Math.floor(h / cell) < n) cell -= 1;
    if (cell >= 8) {
      layout = { cell, cols: Math.max(1, Math.floor(w / cell)), gap: 1, dpr, offset: 0, strip: 0 };
      layout.rows = Math.ceil(n / layout.cols);
      return layout;
    }
    // Too many blocks for readable cells: a window of the pool, and the whole pool as a strip.
    const strip = Math.round(minCell * 2);
    const cols = Math.max(1, Math.floor(w / minCell));
    const rows = Math.max(1, Math.floor((h - strip - 6) / minCell));
    const maxOffset = Math.max(0, Math.ceil(n / cols) - rows) * cols;
    offset = Math.min(maxOffset, Math.floor(offset / cols) * cols);
    layout = { cell: minCell, cols, gap: 1, dpr, rows, offset, strip, stripTop: rows * minCell + 6, width: w };
    return layout;
  }

  // The overview strip: each pixel column is a run of blocks, filled to how many are held; the
  // window shown above is framed, the selected request's blocks ticked.
  function drawStrip(ctx, c) {
    const { strip, stripTop, width, offset: start, rows, cols } = layout;
    if (!strip) return;
    const b = store.blocks, n = b.n;
    ctx.clearRect(0, stripTop - 2, width, strip + 2);
    ctx.fillStyle = c.free; ctx.fillRect(0, stripTop, width, strip);
    ctx.fillStyle = c.accent;
    const columns = Math.floor(width);
    for (let x = 0; x < columns; x++) {
      const from = Math.floor((x * n) / columns), to = Math.max(from + 1, Math.floor(((x + 1) * n) / columns));
      let held = 0;
      for (let block = from; block < to; block++) if (b.owner[block]) held += 1;
      const height = Math.round((strip * held) / (to - from));
      if (height) ctx.fillRect(x, stripTop + strip - height, 1, height);
    }
    const selected = store.selected ? store.tables.get(store.selected) || [] : [];
    ctx.fillStyle = c.focus;
    for (const block of selected) ctx.fillRect(Math.floor((block / n) * columns), stripTop, 2, strip);
    ctx.strokeStyle = c.text; ctx.lineWidth = 2;
    const x0 = (start / n) * width, x1 = (Math.min(n, start + rows * cols) / n) * width;
    ctx.strokeRect(x0 + 1, stripTop - 1, Math.max(3, x1 - x0 - 2), strip + 2);
  }

  function colours() {
    return { free: cssVar("--free"), cached: cssVar("--cached"), nul: cssVar("--null"), focus: cssVar("--focus"),
      panel: cssVar("--panel"), text: cssVar("--text"), accent: cssVar("--accent"), allocated: cssVar("--finished"),
      freed: cssVar("--preempted"), cachedMark: cssVar("--accent") };
  }

  // A request's colour never changes, so it is worked out once (the cache is emptied when large).
  const requestColours = new Map();
  function colourOf(id) {
    let colour = requestColours.get(id);
    if (!colour) {
      const request = store.requests.get(id);
      if (!request) return requestColor(Number.parseInt(id.replace(/\D/g, ""), 10) || 0);
      colour = requestColor(request.color);
      if (requestColours.size > 4096) requestColours.clear();
      requestColours.set(id, colour);
    }
    return colour;
  }

  function drawPaged(ctx, c) {
    const b = store.blocks, bs = store.session.block_size;
    const { cell, cols, gap } = layout;
    const size = cell - gap;
    // Sort the cells by what they are, then draw each kind with one fill style: thousands of
    // fillStyle changes per frame cost more than the drawing itself. Walking the block tables
    // (one colour per request) is cheaper than looking up an owner for every block.
    const free = [], cachedFree = [], shared = [], byColour = [], faint = [], partial = [];
    const owned = new Uint8Array(b.n);
    for (const id of store.tables.keys()) {
      const request = store.requests.get(id);
      const colour = colourOf(id);
      // A shared block is drawn in the colour of the owner the store names, as a repaint does
      // (never the null block: a window group's table points there where it gave a block back).
      const mine = (block) => b.owner[block] === id;
      for (const table of tablesOf(store, id)) { // a hybrid model: each group's table holds every token
        if (!table.length) continue;
        // Tokens held: the last block may be partly full; blocks past it are reserved ahead of
        // need (the contiguous allocator) or for the drafts of speculative decoding (lookahead).
        const held = request ? Math.max(1, Math.min(table.length, Math.ceil(request.computed / bs))) : table.length;
        const inLast = request ? request.computed - (held - 1) * bs : bs;
        const solid = inLast > 0 && inLast < bs ? held - 1 : held;
        byColour.push([colour, table.slice(0, solid).filter(mine)]);
        if (solid < table.length) faint.push([colour, table.slice(solid).filter(mine)]);
        if (solid < held && mine(table[held - 1])) partial.push([table[held - 1], colour, inLast / bs]);
        for (const block of table) owned[block] = 1;
      }
    }
    for (let block = 1; block < b.n; block++) {
      if (!owned[block]) {
        free.push(block);
        if (b.cached[block]) cachedFree.push(block);
      } else if (b.ref[block] > 1) {
        shared.push(block);
      }
    }
    const { offset: first, rows } = layout;
    const last = first + rows * cols;
    const shown = (block) => block >= first && block < last;
    const at = (block) => [(block % cols) * cell, Math.floor((block - first) / cols) * cell];
    const fillAll = (blocks) => { for (const block of blocks) { if (!shown(block)) continue; const [x, y] = at(block); ctx.fillRect(x, y, size, size); } };
    if (first === 0) { ctx.fillStyle = c.nul; ctx.fillRect(0, 0, size, size); }
    ctx.fillStyle = c.free; fillAll(free);
    ctx.fillStyle = c.cached; // evictable cached prefix: the top-left corner, marked
    const corner = Math.max(1, Math.round(size * 0.5));
    for (const block of cachedFree) { if (!shown(block)) continue; const [x, y] = at(block); ctx.fillRect(x, y, corner, corner); }
    for (const [colour, blocks] of byColour) { ctx.fillStyle = colour; fillAll(blocks); }
    ctx.globalAlpha = 0.3; // reserved but unused, and the empty part of partly filled last blocks
    for (const [colour, blocks] of faint) { ctx.fillStyle = colour; fillAll(blocks); }
    ctx.globalAlpha = 1;
    for (const [block, colour, fill] of partial) { // PagedAttention's only waste: the unfilled part
      if (!shown(block)) continue;
      const [x, y] = at(block);
      const filled = Math.max(1, Math.round(size * fill));
      ctx.fillStyle = colour; ctx.fillRect(x, y + size - filled, size, filled);
    }
    drawBands(ctx, store, { at, first, last: Math.min(last, b.n), size }); // a hybrid model's groups
    if (size >= 4 && shared.length) { // shared through the prefix cache: a dot in the middle
      ctx.fillStyle = c.panel;
      const dot = Math.max(2, Math.round(size / 3));
      const offset = (size - dot) / 2;
      for (const block of shared) { if (!shown(block)) continue; const [x, y] = at(block); ctx.fillRect(x + offset, y + offset, dot, dot); }
    }
    const selected = store.selected ? store.tables.get(store.selected) || [] : [];
    if (selected.length) {
      ctx.strokeStyle = c.focus; ctx.lineWidth = Math.max(1.5, size / 6);
      for (const block of selected) { if (!shown(block)) continue; const [x, y] = at(block); ctx.strokeRect(x + ctx.lineWidth / 2, y + ctx.lineWidth / 2, size - ctx.lineWidth, size - ctx.lineWidth); }
    }
  }

  // Repaint single cells after a delta, drawing each exactly as the full pass would.
  function paintCells(ctx, c, blocks) {
    const b = store.blocks, bs = store.session.block_size;
    const { cell, cols, gap } = layout;
    const size = cell - gap;
    const selected = new Set(store.selected ? store.tables.get(store.selected) || [] : []);
    const { offset: first, rows } = layout;
    for (const block of blocks) {
      if (block >= b.n || block < first || block >= first + rows * cols) continue;
      const x = (block % cols) * cell, y = Math.floor((block - first) / cols) * cell;
      ctx.clearRect(x, y, cell, cell);
      if (block === 0) { ctx.fillStyle = c.nul; ctx.fillRect(x, y, size, size); continue; }
      const owner = b.owner[block];
      if (!owner) {
        ctx.fillStyle = c.free; ctx.fillRect(x, y, size, size);
        if (b.cached[block]) { const corner = Math.max(1, Math.round(size * 0.5)); ctx.fillStyle = c.cached; ctx.fillRect(x, y, corner, corner); }
        continue;
      }
      const colour = colourOf(owner);
      const table = tableHolding(store, owner, block);
      const request = store.requests.get(owner);
      const index = table.indexOf(block);
      const held = request ? Math.max(1, Math.min(table.length, Math.ceil(request.computed / bs))) : table.length;
      const inLast = request ? request.computed - (held - 1) * bs : bs;
      const solid = inLast > 0 && inLast < bs ? held - 1 : held;
      ctx.fillStyle = colour;
      if (index >= solid) {
        ctx.globalAlpha = 0.3; ctx.fillRect(x, y, size, size); ctx.globalAlpha = 1;
        if (index === held - 1) { const filled = Math.max(1, Math.round(size * (inLast / bs))); ctx.fillRect(x, y + size - filled, size, filled); }
      } else {
        ctx.fillRect(x, y, size, size);
      }
      drawBand(ctx, store, block, x, y, size);
      if (size >= 4 && b.ref[block] > 1) {
        const dot = Math.max(2, Math.round(size / 3));
        ctx.fillStyle = c.panel; ctx.fillRect(x + (size - dot) / 2, y + (size - dot) / 2, dot, dot);
      }
      if (selected.has(block)) {
        ctx.strokeStyle = c.focus; ctx.lineWidth = Math.max(1.5, size / 6);
        ctx.strokeRect(x + ctx.lineWidth / 2, y + ctx.lineWidth / 2, size - ctx.lineWidth, size - ctx.lineWidth);
      }
    }
  }

  // The Why? tab's block diff of the last step: allocated outlined, freed crossed, evicted struck
  // through, newly shared ringed (shape and colour both tell them apart).
  function drawDiff(ctx, c, diff) {
    const { cell, cols, gap, offset: first, rows } = layout;
    const size = cell - gap;
    const line = Math.max(1.5, size / 7);
    const last = first + rows * cols;
    const at = (block) => [(block % cols) * cell, Math.floor((block - first) / cols) * cell];
    ctx.lineWidth = line;
    const each = (blocks, colour, draw) => {
      ctx.strokeStyle = colour; ctx.beginPath();
      for (const b of blocks) if (b >= first && b < last) draw(...at(b));
      ctx.stroke();
    };
    each(diff.allocated, c.allocated, (x, y) => ctx.rect(x + line / 2, y + line / 2, size - line, size - line));
    each(diff.freed, c.freed, (x, y) => { ctx.moveTo(x + 1, y + 1); ctx.lineTo(x + size - 1, y + size - 1); ctx.moveTo(x + size - 1, y + 1); ctx.lineTo(x + 1, y + size - 1); });
    each(diff.evicted, c.text, (x, y) => { ctx.moveTo(x, y + size / 2); ctx.lineTo(x + size, y + size / 2); });
    each(diff.shared, c.cachedMark, (x, y) => { ctx.moveTo(x + size - 1, y + size / 2); ctx.arc(x + size / 2, y + size / 2, size / 2 - 1, 0, 2 * Math.PI); });
  }

  // The pre-PagedAttention layout: the running requests in admission order, each in a region of
  // max_model_len slots; the part beyond what it holds now is reserved but unused.
  function drawContiguous(ctx, c) {
    const s = store.session, bs = s.block_size, n = store.blocks.n;
    const region = Math.ceil(s.max_model_len / bs);
    const { cell, cols, gap } = layout;
    const size = cell - gap;
    const { offset: first, rows } = layout;
    const last = Math.min(n, first + rows * cols);
    const y0 = (block) => Math.floor((block - first) / cols) * cell;
    hitOwners = new Array(n).fill(null);
    ctx.fillStyle = c.free;
    for (let block = Math.max(1, first); block < last; block++) ctx.fillRect((block % cols) * cell, y0(block), size, size);
    if (first === 0) { ctx.fillStyle = c.nul; ctx.fillRect(0, 0, size, size); }
    let start = 1, fitted = 0, usedSlots = 0;
    for (const id of store.queues.running) {
      if (start + region > n) break;
      const request = store.requests.get(id);
      const held = request ? Math.ceil(request.computed / bs) : 0;
      usedSlots += request ? request.computed : 0;
      const colour = colourOf(id);
      for (let i = 0; i < region; i++) {
        const block = start + i;
        hitOwners[block] = id;
        if (block < first || block >= last) continue;
        const x = (block % cols) * cell, y = y0(block);
        ctx.fillStyle = colour;
        ctx.globalAlpha = i < held ? 1 : 0.22;
        ctx.fillRect(x, y, size, size);
      }
      ctx.globalAlpha = 1;
      start += region;
      fitted += 1;
    }
    const running = store.queues.running.length;
    const reserved = fitted * region * bs;
    // Its usage as vLLM counts a pool's (the null block left out): the regions reserved, held or not.
    return { fitted, running, region, waste: reserved ? 1 - usedSlots / reserved : 0, usage: (fitted * region) / Math.max(1, n - 1) };
  }

  let paintedKey = ""; // what the canvas holds a full drawing of: size, pool, theme, view
  let reservation = null; // the "Reserve max" view's figures, from its last full drawing

  // `full`: redraw everything (a snapshot, a new selection, a resize); otherwise only the cells
  // the deltas since the last drawing changed.
  function update(full = true) {
    if (!store.blocks || !store.session) return;
    const n = store.blocks.n;
    nameAllocator();
    sizeCanvas(n);
    if (store.selected !== followed) { // the window goes to the selected request's first block
      followed = store.selected;
      const table = store.selected ? store.tables.get(store.selected) || [] : [];
      if (table.length && layout.strip && (table[0] < layout.offset || table[0] >= layout.offset + layout.rows * layout.cols)) {
        moveWindow(table[0]);
        sizeCanvas(n);
      }
    }
    const { dpr } = layout;
    setAttr(canvas, "data-cell", String(layout.cell)); // for the tests: cells stay readable
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const c = colours();
    const key = `${canvas.width}x${canvas.height}/${n}/${document.documentElement.dataset.theme}/${mode}/${layout.offset}`;
    const partial = !full && mode === "paged" && key === paintedKey && !store.blockDiff;
    const dirty = store.kvDirty;
    store.kvDirty = new Set();
    paintedKey = key;
    if (partial) {
      paintCells(ctx, c, dirty);
      cursor.draw(ctx, c);
      drawStrip(ctx, c);
      updateText();
      return;
    }
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (mode === "paged") {
      drawPaged(ctx, c);
      if (store.blockDiff) drawDiff(ctx, c, store.blockDiff);
    } else {
      reservation = drawContiguous(ctx, c);
    }
    cursor.draw(ctx, c);
    drawStrip(ctx, c);
    text.updateFrame(mode, n, layout);
    updateText();
  }

  const text = mountText(store, { legendEl, summaryEl, subEl, gaugeEl });
  const updateText = () => text.updateText(mode, reservation);

  return { update, setMode };
}
