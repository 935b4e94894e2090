// The KV block pool on a canvas: one cell per physical block, coloured by the request that
// owns it. Free blocks are plain; free blocks still holding a cached prefix (evictable) carry a
// corner mark; blocks shared by several requests carry a dot; a request's last block shows how
// full it is (PagedAttention's only waste). The "reserve max length" view lays the same running
// requests out the pre-PagedAttention way, one max_model_len region each, so the waste is seen.

import { cssVar, fmtInt, requestColor } from "../colors.js";

export function mount(canvas, store, { onSelect, legendEl, summaryEl, subEl, gaugeEl, pagedButton, contiguousButton }) {
  let mode = "paged";
  let layout = null; // { cell, cols, gap, dpr }
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
  pagedButton.addEventListener("click", () => setMode("paged"));
  contiguousButton.addEventListener("click", () => setMode("contiguous"));

  function blockAt(event) {
    if (!layout) return -1;
    const rect = canvas.getBoundingClientRect();
    const col = Math.floor((event.clientX - rect.left) / layout.cell);
    const row = Math.floor((event.clientY - rect.top) / layout.cell);
    const block = row * layout.cols + col;
    return col < layout.cols && block >= 0 && block < store.blocks.n ? block : -1;
  }
  function ownerAt(block) {
    return mode === "paged" ? store.blocks.owner[block] : hitOwners[block];
  }
  canvas.addEventListener("click", (event) => {
    const block = blockAt(event);
    if (block >= 0 && ownerAt(block)) onSelect(ownerAt(block));
  });
  canvas.addEventListener("mousemove", (event) => {
    const block = blockAt(event);
    if (block < 0 || !store.blocks) { canvas.title = ""; return; }
    const owner = ownerAt(block);
    const b = store.blocks;
    if (mode === "contiguous") { canvas.title = owner ? `reserved for ${owner}` : "not reserved"; return; }
    const logical = owner ? (store.tables.get(owner) || []).indexOf(block) : -1;
    canvas.title = block === 0 ? "block 0: vLLM's reserved null block"
      : owner ? `block ${block}: ${owner}, logical block ${logical}, ref count ${b.ref[block]}${b.cached[block] ? ", cached prefix" : ""}`
      : b.cached[block] ? `block ${block}: free, still holds a cached prefix (evictable)` : `block ${block}: free`;
  });

  function sizeCanvas(n) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, box.width), h = Math.max(1, box.height);
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    let cell = Math.max(2, Math.min(48, Math.floor(Math.sqrt((w * h) / n))));
    while (cell > 2 && Math.floor(w / cell) * Math.floor(h / cell) < n) cell -= 1;
    layout = { cell, cols: Math.max(1, Math.floor(w / cell)), gap: cell >= 6 ? 1 : 0, dpr };
    return layout;
  }

  function colours() {
    return { free: cssVar("--free"), cached: cssVar("--cached"), nul: cssVar("--null"), focus: cssVar("--focus"),
      panel: cssVar("--panel"), text: cssVar("--text") };
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
    for (const [id, table] of store.tables) {
      const request = store.requests.get(id);
      if (!table.length) continue;
      const colour = colourOf(id);
      // Tokens held: the last block may be partly full; blocks past it are reserved ahead of
      // need (the contiguous allocator).
      const held = request ? Math.max(1, Math.min(table.length, Math.ceil(request.computed / bs))) : table.length;
      const inLast = request ? request.computed - (held - 1) * bs : bs;
      const solid = inLast > 0 && inLast < bs ? held - 1 : held;
      // A shared block is drawn in the colour of the owner the store names, as a repaint does.
      const mine = (block) => b.owner[block] === id;
      byColour.push([colour, table.slice(0, solid).filter(mine)]);
      if (solid < table.length) faint.push([colour, table.slice(solid).filter(mine)]);
      if (solid < held && mine(table[held - 1])) partial.push([table[held - 1], colour, inLast / bs]);
      for (const block of table) owned[block] = 1;
    }
    for (let block = 1; block < b.n; block++) {
      if (!owned[block]) {
        free.push(block);
        if (b.cached[block]) cachedFree.push(block);
      } else if (b.ref[block] > 1) {
        shared.push(block);
      }
    }
    const at = (block) => [(block % cols) * cell, Math.floor(block / cols) * cell];
    const fillAll = (blocks) => { for (const block of blocks) { const [x, y] = at(block); ctx.fillRect(x, y, size, size); } };
    ctx.fillStyle = c.nul; ctx.fillRect(0, 0, size, size);
    ctx.fillStyle = c.free; fillAll(free);
    ctx.fillStyle = c.cached; // evictable cached prefix: the top-left corner, marked
    const corner = Math.max(1, Math.round(size * 0.5));
    for (const block of cachedFree) { const [x, y] = at(block); ctx.fillRect(x, y, corner, corner); }
    for (const [colour, blocks] of byColour) { ctx.fillStyle = colour; fillAll(blocks); }
    ctx.globalAlpha = 0.3; // reserved but unused, and the empty part of partly filled last blocks
    for (const [colour, blocks] of faint) { ctx.fillStyle = colour; fillAll(blocks); }
    ctx.globalAlpha = 1;
    for (const [block, colour, fill] of partial) { // PagedAttention's only waste: the unfilled part
      const [x, y] = at(block);
      const filled = Math.max(1, Math.round(size * fill));
      ctx.fillStyle = colour; ctx.fillRect(x, y + size - filled, size, filled);
    }
    if (size >= 4 && shared.length) { // shared through the prefix cache: a dot in the middle
      ctx.fillStyle = c.panel;
      const dot = Math.max(2, Math.round(size / 3));
      const offset = (size - dot) / 2;
      for (const block of shared) { const [x, y] = at(block); ctx.fillRect(x + offset, y + offset, dot, dot); }
    }
    const selected = store.selected ? store.tables.get(store.selected) || [] : [];
    if (selected.length) {
      ctx.strokeStyle = c.focus; ctx.lineWidth = Math.max(1.5, size / 6);
      for (const block of selected) { const [x, y] = at(block); ctx.strokeRect(x + ctx.lineWidth / 2, y + ctx.lineWidth / 2, size - ctx.lineWidth, size - ctx.lineWidth); }
    }
  }

  // Repaint single cells after a delta, drawing each exactly as the full pass would.
  function paintCells(ctx, c, blocks) {
    const b = store.blocks, bs = store.session.block_size;
    const { cell, cols, gap } = layout;
    const size = cell - gap;
    const selected = new Set(store.selected ? store.tables.get(store.selected) || [] : []);
    for (const block of blocks) {
      if (block >= b.n) continue;
      const x = (block % cols) * cell, y = Math.floor(block / cols) * cell;
      ctx.clearRect(x, y, cell, cell);
      if (block === 0) { ctx.fillStyle = c.nul; ctx.fillRect(x, y, size, size); continue; }
      const owner = b.owner[block];
      if (!owner) {
        ctx.fillStyle = c.free; ctx.fillRect(x, y, size, size);
        if (b.cached[block]) { const corner = Math.max(1, Math.round(size * 0.5)); ctx.fillStyle = c.cached; ctx.fillRect(x, y, corner, corner); }
        continue;
      }
      const colour = colourOf(owner);
      const table = store.tables.get(owner) || [];
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

  // The pre-PagedAttention layout: the running requests in admission order, each in a region of
  // max_model_len slots; the part beyond what it holds now is reserved but unused.
  function drawContiguous(ctx, c) {
    const s = store.session, bs = s.block_size, n = store.blocks.n;
    const region = Math.ceil(s.max_model_len / bs);
    const { cell, cols, gap } = layout;
    const size = cell - gap;
    hitOwners = new Array(n).fill(null);
    ctx.fillStyle = c.free;
    for (let block = 1; block < n; block++) ctx.fillRect((block % cols) * cell, Math.floor(block / cols) * cell, size, size);
    ctx.fillStyle = c.nul; ctx.fillRect(0, 0, size, size);
    let start = 1, fitted = 0, usedSlots = 0;
    for (const id of store.queues.running) {
      if (start + region > n) break;
      const request = store.requests.get(id);
      const held = request ? Math.ceil(request.computed / bs) : 0;
      usedSlots += request ? request.computed : 0;
      const colour = colourOf(id);
      for (let i = 0; i < region; i++) {
        const block = start + i;
        const x = (block % cols) * cell, y = Math.floor(block / cols) * cell;
        hitOwners[block] = id;
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
    return { fitted, running, region, waste: reserved ? 1 - usedSlots / reserved : 0 };
  }

  let paintedKey = ""; // what the canvas holds a full drawing of: size, pool, theme, view
  let reservation = null; // the "Reserve max" view's figures, from its last full drawing

  // `full`: redraw everything (a snapshot, a new selection, a resize); otherwise only the cells
  // the deltas since the last drawing changed.
  function update(full = true) {
    if (!store.blocks || !store.session) return;
    const n = store.blocks.n;
    const { dpr } = sizeCanvas(n);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const c = colours();
    const key = `${canvas.width}x${canvas.height}/${n}/${document.documentElement.dataset.theme}/${mode}`;
    const partial = !full && mode === "paged" && key === paintedKey;
    const dirty = store.kvDirty;
    store.kvDirty = new Set();
    paintedKey = key;
    if (partial) {
      paintCells(ctx, c, dirty);
      updateText();
      return;
    }
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (mode === "paged") {
      drawPaged(ctx, c);
    } else {
      reservation = drawContiguous(ctx, c);
    }
    subEl.innerHTML = `· ${fmtInt(n)} blocks × ${store.session.block_size} tokens`;
    legendEl.innerHTML = legend(mode);
    updateText();
  }

  // Written only when it changed: the text of a panel drawn every frame mostly stays the same.
  const shownHtml = new WeakMap();
  function setHtml(el, html) {
    if (shownHtml.get(el) !== html) { shownHtml.set(el, html); el.innerHTML = html; }
  }

  function updateText() {
    const usage = store.lastRecord ? store.lastRecord.kv_usage : 0;
    setHtml(gaugeEl, `<i style="width:${(usage * 100).toFixed(1)}%"></i><span>${(usage * 100).toFixed(1)}% used</span>`);
    gaugeEl.setAttribute("aria-valuenow", (usage * 100).toFixed(1));
    const r = reservation;
    const summary = mode === "paged" ? pagedSummary()
      : `reserving ${fmtInt(r.region)} blocks (max_model_len) per request: <b>${r.fitted} of ${r.running}</b> running requests fit; ` +
        `<b>${(r.waste * 100).toFixed(0)}%</b> of reserved slots unused`;
    setHtml(summaryEl, `<div>${summary}</div>` + blockTable());
  }

  function pagedSummary() {
    const bs = store.session.block_size;
    let slots = 0, tokens = 0;
    for (const [id, table] of store.tables) {
      const request = store.requests.get(id);
      if (!request) continue;
      slots += table.length * bs;
      tokens += Math.min(request.computed, table.length * bs);
    }
    const { ref, cached: hasPrefix, owner, n } = store.blocks;
    let shared = 0, cached = 0;
    for (let block = 0; block < n; block++) {
      if (ref[block] > 1) shared += 1;
      if (hasPrefix[block] && !owner[block]) cached += 1;
    }
    const reserving = store.session.scenario.engine.kv_allocator === "contiguous";
    return `${reserving ? "reserved but unused slots" : "unused slots in last blocks"}: ` +
      `<b>${slots ? (((slots - tokens) / slots) * 100).toFixed(1) : "0.0"}%</b>` +
      ` · shared blocks ${fmtInt(shared)} · evictable cached ${fmtInt(cached)}`;
  }

  function blockTable() {
    const id = store.selected;
    if (!id || mode !== "paged") return "";
    const table = store.tables.get(id) || [];
    const request = store.requests.get(id);
    if (!table.length) return `<div class="block-table"><b>${id}</b> holds no blocks (${request ? request.status : "not visible"})</div>`;
    const bs = store.session.block_size;
    const entries = table.map((block, i) => {
      const filled = request ? Math.max(0, Math.min(bs, request.computed - i * bs)) : bs;
      const shared = store.blocks.ref[block] > 1 ? "*" : "";
      return `<code title="logical ${i} → physical ${block}, ${filled}/${bs} slots${shared ? ", shared" : ""}">${i}→${block}${shared}${filled < bs ? ` (${filled}/${bs})` : ""}</code>`;
    });
    return `<div class="block-table"><b>${id}</b> logical→physical (* shared): ${entries.join(" ")}</div>`;
  }

  function legend(view) {
    const sw = (style, label) => `<span><i class="swatch" style="${style}"></i>${label}</span>`;
    if (view === "contiguous") return sw("background:#999", "held") + sw("background:#999;opacity:.25", "reserved, unused") + sw("background:var(--free)", "free");
    const sw2 = (style, label, title) => `<span title="${title}"><i class="swatch" style="${style}"></i>${label}</span>`;
    return sw2("background:var(--free)", "free", "free block") +
      sw2("background:linear-gradient(var(--cached),var(--cached)) 0 0/50% 50% no-repeat,var(--free)", "cached", "free, but still holds a cached prefix: a new request with that prefix reuses it; evicted when reallocated") +
      sw2("background:linear-gradient(var(--panel),var(--panel)) center/40% 40% no-repeat,#888", "shared", "shared by several requests through the prefix cache (ref count > 1)") +
      sw2("background:linear-gradient(0deg,#888 40%,#ddd 40%)", "partly full", "a request's last block, filled to the height shown: PagedAttention's only waste") +
      sw2("background:var(--null)", "null", "block 0, vLLM's reserved null block");
  }

  return { update, setMode };
}
