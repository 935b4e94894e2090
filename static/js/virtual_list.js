// A list of any length that renders only the rows in view (fixed row height), so a request's
// whole block table or history never needs truncating.

export function virtualList(el, { rowHeight, renderRow, header = "" }) {
  el.classList.add("vlist");
  el.innerHTML = `${header}<div class="vlist-spacer"><div class="vlist-rows"></div></div>`;
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
    let html = "";
    for (let i = first; i < last; i++) html += renderRow(i);
    rows.innerHTML = html;
  }
  el.addEventListener("scroll", () => { if (!pending) { pending = true; requestAnimationFrame(draw); } });
  return {
    setCount(n) { count = n; spacer.style.height = `${n * rowHeight}px`; draw(); },
    scrollToEnd() { el.scrollTop = el.scrollHeight; draw(); },
  };
}
