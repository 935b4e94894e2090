// The charts' ticks and axis titles, chosen from the room the plot has and the labels' measured
// widths: a step is fine when each label, drawn in the axis's font, keeps a gap from the next;
// an axis title is the longest of its wordings that fits along the plot. A third of a projector
// screen had left fixed spacings running labels into each other ("0510 15") and titles cut at
// the canvas edge (issue 29).

// Steps of 1, 2 or 5 times a power of ten (whole ones for counts).
const STEPS = [];
for (let e = -3; e <= 7; e++) for (const m of [1, 2, 5]) STEPS.push(+(m * 10 ** e).toPrecision(3));
const MIN_TICKS = 3;

// uPlot keeps an axis's font as [font at the device's pixels, its size there, its size in CSS px].
const fontPx = (a) => a.font[2] || Number.parseFloat(a.font[0]) / devicePixelRatio || 12;

// True when `ticks`, at fractions `at(v)` of the axis's length, keep their labels apart: a
// label's height between two on a vertical axis, half of each label plus one em on a horizontal.
function ticksFit(u, index, ticks, at) {
  const a = u.axes && u.axes[index];
  if (!a || !u.bbox || !(u.bbox.width > 0)) return ticks.length <= 6; // before the first layout
  const horizontal = a.side % 2 === 0;
  const length = (horizontal ? u.bbox.width : u.bbox.height) / devicePixelRatio;
  const px = fontPx(a);
  let widths = ticks.map(() => px);
  if (horizontal) {
    u.ctx.font = a.font[0];
    const labels = typeof a.values === "function" ? a.values(u, ticks, index) : ticks.map(String);
    widths = labels.map((text) => u.ctx.measureText(String(text ?? "")).width / devicePixelRatio);
  }
  for (let i = 1; i < ticks.length; i++) {
    const apart = (at(ticks[i]) - at(ticks[i - 1])) * length;
    const need = horizontal ? (widths[i] + widths[i - 1]) / 2 + px : px * 1.5;
    if (apart < need) return false;
  }
  return true;
}

// The finest step from 0 to the top the step rounds `hi` up to (at least two steps) whose labels fit.
function stepFor(u, index, hi, integer) {
  const steps = integer ? STEPS.filter((s) => s >= 1) : STEPS;
  for (const step of steps) {
    const intervals = Math.max(MIN_TICKS - 1, Math.ceil(hi / step - 1e-9));
    if (intervals > 60) continue;
    const top = intervals * step;
    if (ticksFit(u, index, ticksTo(top, step), (v) => v / top)) return step;
  }
  // Nothing fits: two ticks, 0 and a step at most `hi` (a scale from 0 reaches two of them).
  return steps.filter((step) => step <= hi).pop() || steps[0];
}

function ticksTo(top, step) {
  const ticks = [];
  for (let v = 0; v <= top + step * 1e-9; v += step) ticks.push(+v.toPrecision(12));
  return ticks;
}

const axisOf = (u, scale) => (u.axes ? u.axes.findIndex((a) => (a.scale || "y") === scale) : -1);

// A scale from 0 whose top is a whole number of the step its axis can label.
export const rangeFrom0 = (integer, scale) => (u, lo, hi) => {
  const top = Math.max(integer ? 2 : 1e-3, hi || 0);
  const step = stepFor(u, axisOf(u, scale), top, integer);
  return [0, Math.max(MIN_TICKS - 1, Math.ceil(top / step - 1e-9)) * step];
};

// Ticks from 0 to the top, as many as their labels leave room for.
export const splitsFrom0 = (integer) => (u, index, min, max) => ticksTo(max, stepFor(u, index, max, integer));

// Log-scaled ticks: 1, 1-3 or 1-2-5 times powers of ten (finer where the range is narrow),
// every n-th of them when their labels would touch, never fewer than three.
export function logSplits(u, index, min, max) {
  if (!(min > 0) || !(max > min)) return [min, max];
  const at = (v) => (Math.log(v) - Math.log(min)) / (Math.log(max) - Math.log(min));
  for (const mantissas of [[1], [1, 3], [1, 2, 5], [1, 1.5, 2, 3, 5, 7], [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9]]) {
    const ticks = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
      for (const m of mantissas) { const v = m * 10 ** e; if (v >= min && v <= max) ticks.push(v); }
    }
    if (ticks.length < MIN_TICKS) continue;
    for (let every = 1; every <= ticks.length; every++) {
      const kept = ticks.filter((_, i) => i % every === 0);
      if (kept.length >= MIN_TICKS - 1 && ticksFit(u, index, kept, at)) return kept;
    }
  }
  return [min, max];
}

// Counts: "1,500", and thousands as "12k" from 10,000 (a narrow plot's labels stay short).
export const countLabels = (u, values) => values.map((x) => (x >= 1e4 ? `${+(x / 1000).toPrecision(4)}k` : x.toLocaleString("en-US")));

// Before each draw: every axis with `titles` (its wordings, longest first) takes the longest
// that fits along its plot, so no title is cut by the canvas.
export function fitTitles(u) {
  for (const a of u.axes) {
    if (!a.titles) continue;
    const length = (a.side % 2 === 0 ? u.bbox.width : u.bbox.height);
    u.ctx.font = a.labelFont[0];
    a.label = a.titles.find((title) => u.ctx.measureText(title).width <= length) || a.titles[a.titles.length - 1];
  }
}
