// A small KV grid on a canvas: an engine's blocks folded into cells, one character each ("." free,
// "c" cached, "1"-"9" in use by tenths, "#" full; scheduler_core/lessons/fleet_timeline.py makes
// them), 20 to a row. The fleet page draws a simulated replica's and a served replica's alike.
import { cssVar } from "./colors.js";

export function drawGrid(canvas, cells) {
  const columns = 20;
  const rows = Math.ceil(cells.length / columns);
  const width = canvas.clientWidth || 200;
  const size = Math.max(2, Math.floor(width / columns));
  const ratio = window.devicePixelRatio || 1;
  canvas.width = columns * size * ratio;
  canvas.height = rows * size * ratio;
  canvas.style.height = `${rows * size}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  const free = cssVar("--free"), cached = cssVar("--cached"), used = cssVar("--decode");
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i];
    const x = (i % columns) * size, y = Math.floor(i / columns) * size;
    if (c === "." || c === "c") {
      ctx.fillStyle = c === "c" ? cached : free;
      ctx.globalAlpha = c === "c" ? 0.55 : 1;
    } else {
      ctx.fillStyle = used;
      ctx.globalAlpha = c === "#" ? 1 : 0.25 + 0.075 * Number(c);
    }
    ctx.fillRect(x, y, size - 1, size - 1);
  }
  ctx.globalAlpha = 1;
}
