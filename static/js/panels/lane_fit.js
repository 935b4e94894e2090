// The lanes share their panel's height in whole chip rows: every lane (Running, Waiting,
// Finished, ...) keeps its title in view with at least one row, the rows left over go a row at a
// time to the lanes that have more chips, and a lane shows only the chips of its rows, counting
// the rest in "+N more". Lanes that each scrolled on their own cut a row of chips in half while
// the panel had room below, and pushed the lanes after them off screen (issue 29).

import { setProp, setText } from "../writes.js";

// `box` holds the lanes; each lane has its `lane` element, `chips` (the row box, positioned:
// the chips' offsetTop is measured from it), `more`, `slots` (its chips) and `total` (the
// requests it holds). Reads the layout twice and writes between: a few chips' worth of work.
export function fitLanes(box, lanes) {
  const shown = lanes.filter(({ lane }) => !lane.hidden);
  for (const { slots, more, total } of shown) {
    for (const chip of slots) if (chip.hidden) show(chip);
    // A lane with requests but no chips (none detailed in the frame yet) counts them all.
    showMore(more, !total ? "none" : slots.length ? "" : `+${total} more`);
  }
  const sample = shown.find(({ slots }) => slots.length)?.slots[0];
  if (!sample) return;
  const chipsStyle = getComputedStyle(sample.parentElement);
  const gap = Number.parseFloat(chipsStyle.rowGap) || 0, top = Number.parseFloat(chipsStyle.paddingTop) || 0;
  const pitch = sample.offsetHeight + gap;
  const rowOf = (el) => Math.round((el.offsetTop - top) / pitch);
  const needs = shown.map(({ slots }) => (slots.length ? rowOf(slots[slots.length - 1]) + 1 : 0));
  const rows = shareRows(needs, roomForRows(box, shown, needs, pitch, gap));
  shown.forEach(({ slots, more, total }, i) => {
    if (!needs[i]) return;
    let visible = slots.findIndex((chip) => rowOf(chip) >= rows[i]);
    if (visible < 0) visible = slots.length;
    for (const chip of slots.slice(visible)) hide(chip);
    if (total <= visible) return;
    showMore(more, `+${total - visible} more`);
    // "+N more" ends the last row: a chip gives it its place rather than it start a row of its own.
    while (visible > 0 && rowOf(more) >= rows[i]) {
      hide(slots[--visible]);
      showMore(more, `+${total - visible} more`);
    }
  });
}

// The height the chip rows may take: the box's, less the lanes' titles, paddings and gaps and
// the "none" of an empty lane (what the lanes measure now, less their rows of chips).
function roomForRows(box, shown, needs, pitch, gap) {
  const style = getComputedStyle(box);
  const laneGap = Number.parseFloat(style.rowGap) || 0;
  const chipRows = needs.reduce((sum, n) => sum + (n ? n * pitch - gap : 0), 0);
  const lanes = shown.reduce((sum, { lane }) => sum + lane.offsetHeight, 0) + laneGap * (shown.length - 1);
  const padding = Number.parseFloat(style.paddingTop) + Number.parseFloat(style.paddingBottom);
  const room = box.clientHeight - padding - (lanes - chipRows);
  return Math.floor((room + gap * needs.filter(Boolean).length) / pitch);
}

// One row to each lane with chips, then the rest a row at a time to the lanes that need more.
function shareRows(needs, total) {
  const rows = needs.map((n) => Math.min(n, 1));
  let left = total - rows.reduce((a, b) => a + b, 0);
  for (let given = true; left > 0 && given;) {
    given = false;
    needs.forEach((need, i) => {
      if (left > 0 && rows[i] < need) { rows[i] += 1; left -= 1; given = true; }
    });
  }
  return rows;
}

// A hidden chip is out of view at once (its IntersectionObserver says so a frame later): while
// playing it waits for its request until it is shown again, and takes no relabel of this frame's.
function hide(chip) {
  setProp(chip, "hidden", true);
  chip.inView = false;
}

// Shown again: in view until its IntersectionObserver says otherwise (it says nothing when the
// chip is hidden and shown in one frame).
function show(chip) {
  setProp(chip, "hidden", false);
  chip.inView = undefined;
}

function showMore(more, text) {
  setText(more, text);
  setProp(more, "hidden", !text);
}
