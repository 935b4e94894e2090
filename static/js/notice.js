// What the server refused, and a run to a breakpoint that found none, said where it is seen and
// heard: a line on the page in a live region (role=alert), never only the console. The region is
// always in the page and only its content comes and goes, so screen readers announce each message.
// A message stays until the next one, its × or NOTICE_MS, long enough to be read from the back.

import { html, render } from "./dom.js";

const NOTICE_MS = 12_000;

export function mount(el) {
  let timer = null;
  function hide() {
    clearTimeout(timer);
    render(el, html``);
  }
  function show(text) {
    clearTimeout(timer);
    render(el, html`<p class="notice-box"><span class="notice-text">${text}</span><button type="button" class="notice-close" aria-label="Dismiss">×</button></p>`);
    el.querySelector(".notice-close").addEventListener("click", hide);
    timer = setTimeout(hide, NOTICE_MS);
  }
  return { show, hide };
}
