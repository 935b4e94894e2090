import { html, render } from "./dom.js";

// A list of any length that renders only the rows in view (fixed row height), so a request's
// whole block table or history never needs truncating.

// `header` and each `renderRow(i)` are html`` fragments (dom.js).
export function virtualList(el, { rowHeight, renderRow, header = "" }) {
  el.classList.add("vlist");
  render(el, html`${header}<div class="vlist-spacer"><div class="vlist-rows"></div></div>`);
  const spacer = el.querySelector(".vlist-spacer");
  const rows = el.querySelector(".vlist-rows");
  let count = 0;
  let pending = false;
  function draw() {
    pending = false;
    const top = Math.max(0, el.scrollTop - spacer.offsetTop);
    const height = el.clientHeight || 10 * rowHeight;
    const first = Math.max(0, Math.floor(top / rowHeight) - 4);
    const last = Math.min(count, Math.ceil((top + height) / rowHeight) + 4);
    rows.style.transform = `translateY(${first * rowHeight}px)`;
    const shown = [];
    for (let i = first; i < last; i++) shown.push(renderRow(i));
    render(rows, html`${shown}`);
  }
  el.addEventListener("scroll", () => { if (!pending) { pending = true; requestAnimationFrame(draw); } });
  return {
    setCount(n) { count = n; spacer.style.height = `${n * rowHeight}px`; draw(); },
    scrollToEnd() { el.scrollTop = el.scrollHeight; draw(); },
  };
}
