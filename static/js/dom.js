// The one way text reaches the page. Data (a results file's labels, a scenario's names, a request
// id, a breakpoint, anything the server sends) is text, never markup: a value `<img onerror=...>`
// must show as those characters. Two tools, and no other module touches innerHTML or builds
// markup as a string:
//  - el(tag, attrs, ...children) builds elements; strings become text nodes, never parsed;
//  - html`...` writes a page's fixed markup with its holes filled by text: each ${value} is
//    escaped unless it is itself html`...` (or a list of them), and render() accepts nothing else,
//    so a plain string (data) cannot reach the HTML parser by mistake.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

// Text safe between tags and inside a quoted attribute value.
function esc(text) {
  return String(text ?? "").replace(/[&<>"'`]/g, (c) => ESCAPES[c]);
}

class Html {
  constructor(markup) { this.markup = markup; }
  // Joined with + or put in a plain `${}`, a fragment would turn into a string, which the next
  // html`` would then escape: loud instead. Fragments join as html`${[a, b]}`.
  toString() { throw new TypeError("html`` fragments join inside html`${[a, b]}`, not with + or a plain template"); }
}

const hole = (value) => {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(hole).join("");
  if (value === null || value === undefined || value === false) return "";
  return esc(value);
};

export function html(strings, ...values) {
  let markup = strings[0];
  values.forEach((value, i) => { markup += hole(value) + strings[i + 1]; });
  return new Html(markup);
}

export const isHtml = (value) => value instanceof Html;

// Replaces el's children with the markup of an html`...` fragment (and only of one).
export function render(el, fragment) {
  if (!(fragment instanceof Html)) throw new TypeError("render() takes html`...`, not a string: text goes in as text");
  el.innerHTML = fragment.markup;
}

// A <template>'s content from a fragment, for rows cloned many times.
export function fragmentOf(fragment) {
  const template = document.createElement("template");
  render(template, fragment);
  return template.content;
}

// Links and sources from data: a path or an http(s) address, never `javascript:` or `data:`.
const URL_ATTRIBUTES = new Set(["href", "src", "action", "formaction"]);
export const safeUrl = (value) => /^(\/(?!\/)|\.|#|\?|https?:\/\/)/i.test(String(value).trim()) || !/^[^/?#]*:/.test(String(value));

// Builds an element: attrs are set as attributes (or, for `text`, `style` objects and `on*`
// functions, as properties and listeners); children are nodes or strings, added as text.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "style" && typeof value === "object") Object.assign(node.style, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (URL_ATTRIBUTES.has(name) && !safeUrl(value)) continue;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}
