// Layout problems on the page as it is drawn: text that spills out of the box that holds it
// (its panel, or the scroll area it scrolls in: sideways only), text boxes that overlap, and the
// smallest font in use. Read by tests/test_lecture_e2e.py through page.evaluate.
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
  for (const el of document.querySelectorAll("body *")) {
    if (["SCRIPT", "STYLE", "OPTION", "OPTGROUP", "CANVAS", "svg"].includes(el.tagName) || el.closest("dialog:not([open]), [hidden], .sr-only, .u-legend th:empty")) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !visible(el)) continue;
    texts.push(el);
  }
  const problems = [];
  const shown = [];
  let smallest = Infinity;
  for (const el of texts) {
    const r = el.getBoundingClientRect();
    // The nearest scroll area or holder decides what "inside" means.
    let rect = r, clipped = false, parent = el.parentElement;
    while (parent && parent !== document.body) {
      const p = parent.getBoundingClientRect();
      if (scrolls(parent)) {
        if (r.left < p.left - 1 || r.right > p.right + 1) {
          if (parent.scrollWidth <= parent.clientWidth + 1) problems.push(`overflows its scroll area sideways: ${label(el)}`);
        }
        if (r.bottom <= p.top || r.top >= p.bottom) { clipped = true; break; } // scrolled out of view: fine
        rect = { left: Math.max(r.left, p.left), right: Math.min(r.right, p.right), top: Math.max(r.top, p.top), bottom: Math.min(r.bottom, p.bottom) };
        break;
      }
      if (parent.matches(HOLDERS)) {
        if (r.left < p.left - 1 || r.right > p.right + 1 || r.top < p.top - 1 || r.bottom > p.bottom + 1) problems.push(`outside its ${label(parent)}: ${label(el)}`);
        break;
      }
      parent = parent.parentElement;
    }
    if (clipped) continue;
    if (r.right > innerWidth + 1 || r.bottom > innerHeight + 1 || r.left < -1 || r.top < -1) problems.push(`off screen: ${label(el)}`);
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === "hidden") problems.push(`cut off: ${label(el)}`);
    smallest = Math.min(smallest, Number.parseFloat(getComputedStyle(el).fontSize));
    shown.push([el, rect]);
  }
  for (let i = 0; i < shown.length; i++) {
    for (let j = i + 1; j < shown.length; j++) {
      const [a, ra] = shown[i], [b, rb] = shown[j];
      if (a.contains(b) || b.contains(a)) continue;
      if (ra.left < rb.right - 1 && rb.left < ra.right - 1 && ra.top < rb.bottom - 1 && rb.top < ra.bottom - 1) problems.push(`overlap: ${label(a)} and ${label(b)}`);
    }
  }
  return { problems, smallest, count: shown.length };
})()
