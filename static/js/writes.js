import { isHtml, render } from "./dom.js";

// Writes made only when the value changes. The dashboard draws every frame while playing, and even
// an equal write makes the browser restyle the element (and replace its text) all over again.

export function setProp(el, name, value) {
  if (el[name] !== value) el[name] = value;
}

export function setAttr(el, name, value) {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

// One CSS property, set through the CSSOM (which the pages' CSP allows; style attributes in
// markup it refuses).
export function setStyle(el, property, value) {
  if (el.style[property] !== value) el.style[property] = value;
}

// Changes an element's text in place: setting textContent replaces its text node, which the
// browser then styles and lays out as a new node.
export function setText(el, text) {
  if (el.firstChild && el.firstChild === el.lastChild && el.firstChild.nodeType === Node.TEXT_NODE) {
    if (el.firstChild.data !== text) el.firstChild.data = text;
  } else {
    el.textContent = text;
  }
}

// A line of figures keeps its tags from one step to the next and changes only its numbers. When
// the tags are those last written, only the text nodes that differ are changed: innerHTML would
// parse the line again and give the browser new nodes to style and lay out, every frame. The
// line is an html`` fragment (dom.js), so data in it is already text.
const TAG = /<[^>]*>/g;
const shownHtml = new WeakMap(); // element -> { html, tags, texts, nodes }

export function setHtml(el, fragment) {
  if (!isHtml(fragment)) throw new TypeError("setHtml() takes html`...`, not a string");
  const html = fragment.markup;
  const shown = shownHtml.get(el);
  if (shown && shown.html === html) return;
  const tags = (html.match(TAG) || []).join("");
  const texts = html.split(TAG).filter(Boolean);
  // Text with an entity (&amp;) reads differently in the node than in the HTML: parsed afresh.
  if (shown && shown.nodes && shown.tags === tags && shown.texts.length === texts.length && !html.includes("&")) {
    texts.forEach((text, i) => { if (shown.texts[i] !== text) shown.nodes[i].data = text; });
    Object.assign(shown, { html, texts });
    return;
  }
  render(el, fragment);
  const nodes = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) nodes.push(walker.currentNode);
  // Patched later only if each piece of text became one node, in order.
  const matches = nodes.length === texts.length && nodes.every((node, i) => node.data === texts[i]);
  shownHtml.set(el, { html, tags, texts, nodes: matches ? nodes : null });
}
