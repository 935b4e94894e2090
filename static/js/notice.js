// What the server refused, and a run to a breakpoint that found none, said where it is seen and
// heard: a line on the page in a live region (role=alert), never only the console. The region is
// always in the page and only its content comes and goes, so screen readers announce each message.
// A message stays until the next one, its × or NOTICE_MS, long enough to be read from the back.

import { html, render } from "./dom.js";

const NOTICE_MS = 12_000;

// A message as text, its request ids (`req-00012`) each kept on one line: a line never breaks at their hyphen.
export function withIds(text) {
  return html`${String(text).split(/(req-\d+)/).map((part, i) => (i % 2 ? html`<span class="id">${part}</span>` : part))}`;
}

export function mount(el) {
  let timer = null;
  function hide() {
    clearTimeout(timer);
    render(el, html``);
  }
  function show(text) {
    clearTimeout(timer);
    render(el, html`<p class="notice-box"><span class="notice-text">${withIds(text)}</span><button type="button" class="notice-close" aria-label="Dismiss">×</button></p>`);
    el.querySelector(".notice-close").addEventListener("click", hide);
    timer = setTimeout(hide, NOTICE_MS);
  }
  return { show, hide };
}
