// Layout problems on the page as it is drawn (the transient key toast aside): text that spills out of the box that holds it
// (its panel, or the scroll area it scrolls in: sideways only), text boxes that overlap, and the
// smallest font in use. Read by tests/browser/test_lecture_e2e.py through page.evaluate.
(() => {
  const HOLDERS = ".panel, .topbar, .narration, dialog[open], .chart";
  const scrolls = (el) => { const s = getComputedStyle(el); return /(auto|scroll)/.test(s.overflowY + s.overflowX); };
  const visible = (el) => {
    const s = getComputedStyle(el);
    if (s.visibility === "hidden" || s.display === "none" || Number(s.opacity) === 0) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const label = (el) => `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${[...el.classList].join(".")} "${el.textContent.trim().slice(0, 40)}"`;
  const texts = [];
  // With a modal open, what it covers is not on show: only the modal is checked.
  const scope = document.querySelector("dialog[open]") || document.body;
  for (const el of scope.querySelectorAll("*")) {
    if (["SCRIPT", "STYLE", "OPTION", "OPTGROUP", "CANVAS", "svg"].includes(el.tagName) || el.closest("dialog:not([open]), [hidden], .sr-only, .toast")) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !visible(el)) continue;
    texts.push(el);
  }
  const problems = [];
  const shown = [];
  let smallest = Infinity;
  for (const el of texts) {
    const r = el.getBoundingClientRect();
    // Inside means inside the nearest holder (panel, bar, dialog) unless a scroll area comes
    // first; what every scroll area around it cuts off is out of view, which is fine.
    let rect = r, clipped = false, scrolled = false, held = false;
    for (let parent = el.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
      const p = parent.getBoundingClientRect();
      if (scrolls(parent)) {
        if (!scrolled && (r.left < p.left - 1 || r.right > p.right + 1) && parent.scrollWidth <= parent.clientWidth + 1) {
          problems.push(`overflows its scroll area sideways: ${label(el)}`);
        }
        scrolled = true;
        rect = { left: Math.max(rect.left, p.left), right: Math.min(rect.right, p.right), top: Math.max(rect.top, p.top), bottom: Math.min(rect.bottom, p.bottom) };
        if (rect.bottom - rect.top < 2 || rect.right - rect.left < 2) { clipped = true; break; }
      } else if (!scrolled && !held && parent.matches(HOLDERS)) {
        held = true;
        if (r.left < p.left - 1 || r.right > p.right + 1 || r.top < p.top - 1 || r.bottom > p.bottom + 1) problems.push(`outside its ${label(parent)}: ${label(el)}`);
      }
    }
    if (clipped) continue;
    if (rect.right > innerWidth + 1 || rect.bottom > innerHeight + 1 || rect.left < -1 || rect.top < -1) problems.push(`off screen: ${label(el)}`);
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === "hidden") problems.push(`cut off: ${label(el)}`);
    smallest = Math.min(smallest, Number.parseFloat(getComputedStyle(el).fontSize));
    // An inline element wrapped over lines is its line boxes, not the rectangle around them.
    const boxes = getComputedStyle(el).display === "inline" ? [...el.getClientRects()] : [rect];
    shown.push([el, boxes]);
  }
  const hit = (ra, rb) => ra.left < rb.right - 1 && rb.left < ra.right - 1 && ra.top < rb.bottom - 1 && rb.top < ra.bottom - 1;
  for (let i = 0; i < shown.length; i++) {
    for (let j = i + 1; j < shown.length; j++) {
      const [a, boxesA] = shown[i], [b, boxesB] = shown[j];
      if (a.contains(b) || b.contains(a)) continue;
      if (boxesA.some((ra) => boxesB.some((rb) => hit(ra, rb)))) problems.push(`overlap: ${label(a)} and ${label(b)}`);
    }
  }
  return { problems, smallest, count: shown.length };
})()
