// Writes made only when the value changes. The dashboard draws every frame while playing, and even
// an equal write makes the browser restyle the element (and replace its text) all over again.

export function setProp(el, name, value) {
  if (el[name] !== value) el[name] = value;
}

export function setAttr(el, name, value) {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}
