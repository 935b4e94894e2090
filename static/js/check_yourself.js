// "Check yourself": two or three questions about the run the class just watched (a step, a request,
// a count), answered and checked in the page, as a slide of its own (a modal dialog, like "What it
// proves"), on the dashboard and in the fleet view. The questions and their answers come with the
// lesson (scheduler_core/lessons/check_yourself.py, fleet_questions.py); an answer reaches the
// page's text only once it is checked right or revealed.

import { fitSlide } from "./claims.js";
import { html, render } from "./dom.js";
import { setStyle } from "./writes.js";

// `lesson`: {title, arm, questions: [{step, text, units, answer, hint}]}, a fleet's questions naming
// their instant (`at`, "0.125 s") and the frame to seek to (`frame`) instead of a step. `seek(target)`
// for "Go to step" (null where the page cannot seek: a dashboard viewer follows the presenter);
// `canReveal`: whether this page may reveal the answers (the presenter's only).
export function openCheck(dialog, { title, arm, questions }, { seek = null, canReveal = false } = {}) {
  const items = questions.map((q, i) => html`<li><form class="check" data-index="${i}" novalidate>
      <label for="check-${i}">${q.text}</label>
      <span class="check-row"><input id="check-${i}" name="answer" type="text" autocomplete="off" spellcheck="false"
        aria-describedby="check-${i}-units check-${i}-result"><span id="check-${i}-units" class="muted">${q.units}</span>
        <button>Check</button></span>
      <p id="check-${i}-result" class="check-result" aria-live="polite"></p></form></li>`);
  render(dialog, html`<h2 id="check-title" tabindex="-1">Check yourself <span class="muted">· arm ${arm}</span></h2>
    <p class="muted check-intro">${title}: questions on the run you just watched. Each answer is one number, or a ${
      questions.some((q) => q.units === "replica") ? "replica's name" : "request id"}.</p>
    <ol class="checks">${items}</ol>
    <div class="slide-foot"><p>${canReveal ? html`<button type="button" data-action="reveal">Reveal answers</button>` : ""}</p>
    <form method="dialog"><button class="primary">Close</button></form></div>`);
  dialog.onsubmit = (event) => {
    const form = event.target.closest("form.check");
    if (!form) return; // the Close form closes the dialog
    event.preventDefault();
    const index = Number(form.dataset.index);
    const given = form.elements.answer.value;
    if (given.trim()) judge(dialog, questions[index], index, matches(given, questions[index].answer), seek);
    fitSlide(dialog); // a verdict with its hint may take a line more
  };
  dialog.onclick = (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    if (button.dataset.action === "reveal") { questions.forEach((q, i) => reveal(dialog, q, i)); fitSlide(dialog); }
    if (button.dataset.action === "seek") { dialog.close(); seek(Number(button.dataset.target)); }
  };
  setStyle(dialog, "fontSize", "");
  dialog.showModal();
  fitSlide(dialog);
  dialog.querySelector("input")?.focus();
}

function judge(dialog, question, index, right, seek) {
  const result = dialog.querySelector(`#check-${index}-result`);
  result.className = `check-result ${right ? "right" : "wrong"}`;
  const go = seek ? html` <button type="button" data-action="seek" data-target="${question.frame ?? question.step}">Go to ${at(question)}</button>` : "";
  render(result, right
    ? html`<span aria-hidden="true">✔</span> Right: ${fmt(question.answer)} ${question.units}.`
    : html`<span aria-hidden="true">✘</span> Not quite. ${question.hint}${go}`);
}

function reveal(dialog, question, index) {
  const result = dialog.querySelector(`#check-${index}-result`);
  result.className = "check-result revealed";
  // "Answer: 2,254 step", not "(step 2,254)" after it: a step's own number says when.
  const when = question.units === "step" ? "" : ` (${at(question)})`;
  render(result, html`Answer: <b>${fmt(question.answer)}</b> ${question.units}${when}.`);
}

// The moment a question names: an engine step, or a fleet's instant.
const at = (question) => question.at || `step ${fmt(question.step)}`;

const fmt = (value) => (typeof value === "number" ? value.toLocaleString("en-US") : String(value));

// A count read off the screen may come with its thousands separator or its unit ("1,024 tokens");
// a request id may be typed by its number alone ("17" for req-00017).
export function matches(given, answer) {
  const text = String(given).trim().toLowerCase();
  if (typeof answer === "number") {
    const digits = text.replace(/[^0-9.-]/g, "");
    return /\d/.test(digits) && Number(digits) === answer;
  }
  const want = String(answer).toLowerCase();
  const number = (id) => (id.match(/(\d+)$/) || [])[1];
  if (text === want) return true;
  if (number(text) === undefined || Number(number(text)) !== Number(number(want))) return false;
  const prefix = text.slice(0, text.length - number(text).length);
  return prefix === "" || prefix === want.slice(0, want.length - number(want).length);
}
