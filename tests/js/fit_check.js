// What a screen cuts short, beside layout_check.js (read by tests/browser/pages.py check_fit):
// - a text line cut by the edge of a box that clips it (a scroll area shows whole lines only,
//   a clipped box such as the KV gauge shows its whole text);
// - a lane showing part of a chip row, or a lane (its title, chips and count) cut by the panel
//   or the screen;
// - chart tick labels that run into each other or out of the canvas, axis titles cut by it.
(() => {
  const problems = [];
  const label = (el) => `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${[...el.classList].join(".")} "${el.textContent.trim().slice(0, 40)}"`;
  const shown = (el) => {
    const s = getComputedStyle(el);
    return s.visibility !== "hidden" && s.display !== "none" && el.getClientRects().length > 0;
  };
  const clipsY = (el) => getComputedStyle(el).overflowY !== "visible";
  const clipsX = (el) => getComputedStyle(el).overflowX !== "visible";
  // The boxes around `el` that cut what overflows them, nearest first (the screen last).
  const clippers = (el) => {
    const list = [];
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) if (clipsY(p) || clipsX(p)) list.push(p);
    return list;
  };
  const inner = (box) => {
    const r = box.getBoundingClientRect(), s = getComputedStyle(box);
    const top = r.top + parseFloat(s.borderTopWidth), left = r.left + parseFloat(s.borderLeftWidth);
    return { top, left, bottom: top + box.clientHeight, right: left + box.clientWidth };
  };
  const screen = { top: 0, left: 0, bottom: innerHeight, right: innerWidth };
  // Part of `r` inside `area` and part outside it (on the given axis).
  const cutY = (r, a) => r.bottom > a.top + 2 && r.top < a.bottom - 2 && (r.top < a.top - 1 || r.bottom > a.bottom + 1);
  const cutX = (r, a) => r.right > a.left + 2 && r.left < a.right - 2 && (r.left < a.left - 1 || r.right > a.right + 1);

  // Text lines: each text node's line boxes against every box that clips it.
  const scope = document.querySelector("dialog[open]") || document.body;
  const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!node.textContent.trim() || !el || el.closest("script, style, option, [hidden], .sr-only, .toast, dialog:not([open])") || !shown(el)) continue;
    range.selectNodeContents(node);
    const lines = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    if (!lines.length) continue;
    const boxes = clippers(el);
    lines.forEach((line) => {
      for (const box of boxes) {
        const a = inner(box);
        // Wholly outside a scroll area is scrolled out of view; wholly outside a clipped box is cut.
        if ((clipsY(box) && cutY(line, a)) || (getComputedStyle(box).overflowX === "hidden" && cutX(line, a))) {
          problems.push(`a line cut by the edge of ${label(box)}: ${label(el)}`);
          return;
        }
        if (line.bottom <= a.top + 2 || line.top >= a.bottom - 2 || line.right <= a.left + 2 || line.left >= a.right - 2) return;
      }
      if (cutY(line, screen) || cutX(line, screen)) problems.push(`a line cut by the screen's edge: ${label(el)}`);
    });
  }

  // Lanes: whole chip rows, and every lane whole inside its panel and on screen.
  for (const lane of document.querySelectorAll(".lane")) {
    if (!shown(lane) || lane.closest(".folded")) continue;
    const r = lane.getBoundingClientRect();
    for (const box of [...clippers(lane), null]) {
      const a = box ? inner(box) : screen;
      if (r.top < a.top - 1 || r.bottom > a.bottom + 1) {
        problems.push(`lane ${label(lane.querySelector("header"))} cut by ${box ? label(box) : "the screen"}`);
        break;
      }
    }
    const chips = lane.querySelector(".chips"), area = inner(chips);
    for (const chip of chips.querySelectorAll(".chip")) {
      if (cutY(chip.getBoundingClientRect(), area)) { problems.push(`lane ${label(lane.querySelector("header"))} shows part of a chip row`); break; }
    }
  }

  // Charts: uPlot draws its axes on the canvas; their ticks are read back from each plot
  // (charts.js keeps it on its box as `plot`) and measured with the font they were drawn in.
  for (const box of document.querySelectorAll(".chart .plot")) {
    const u = box.plot;
    if (!u || !shown(box) || box.closest(".folded")) continue;
    const ctx = u.ctx, ratio = devicePixelRatio, canvas = { width: u.ctx.canvas.width / ratio, height: u.ctx.canvas.height / ratio };
    const name = box.parentElement.id;
    u.axes.forEach((a, i) => {
      if (a.show === false || !a._values) return;
      const horizontal = a.side % 2 === 0, scale = a.scale || (horizontal ? "x" : "y");
      ctx.font = a.font[0];
      const px = a.font[2] || parseFloat(a.font[0]) / ratio;
      const spans = a._splits.map((value, k) => {
        const text = a._values[k];
        if (text == null || text === "") return null;
        const at = u.valToPos(value, scale); // CSS px within the plotting area
        const w = ctx.measureText(String(text)).width / ratio;
        if (horizontal) { const x = u.bbox.left / ratio + at; return { text, lo: x - w / 2, hi: x + w / 2 }; }
        const y = u.bbox.top / ratio + at;
        const x0 = a.side === 3 ? a._pos + a._size - a.ticks.size - a.gap - w : a._pos + a.ticks.size + a.gap;
        return { text, lo: y - px / 2, hi: y + px / 2, left: x0, right: x0 + w };
      }).filter(Boolean).sort((p, q) => p.lo - q.lo);
      const limit = horizontal ? canvas.width : canvas.height;
      spans.forEach((s, k) => {
        if (k && s.lo < spans[k - 1].hi + 2) problems.push(`${name}: ticks "${spans[k - 1].text}" and "${s.text}" run into each other`);
        if (s.lo < -1 || s.hi > limit + 1 || (!horizontal && (s.left < -1 || s.right > canvas.width + 1))) problems.push(`${name}: tick "${s.text}" cut by the canvas`);
      });
      if (a.label) {
        ctx.font = a.labelFont[0];
        const w = ctx.measureText(a.label).width / ratio;
        const middle = horizontal ? (u.bbox.left + u.bbox.width / 2) / ratio : (u.bbox.top + u.bbox.height / 2) / ratio;
        if (middle - w / 2 < -1 || middle + w / 2 > limit + 1) problems.push(`${name}: axis title "${a.label}" cut by the canvas`);
      }
    });
  }
  return problems;
})()
