// "What it proves": a lesson's claims, each checked on the simulated numbers, and its table of
// every arm, as a slide of its own (a modal dialog), in the dashboard and the fleet view alike.

import { html, render } from "./dom.js";
import { setStyle } from "./writes.js";

// `lesson`: {title, summary, claims: [{holds, text}], table: {arms, rows: [{label, values}]}};
// `links`: the line under the claims, an html`` fragment made by the caller (the other arms, a comparison).
export function openClaims(dialog, lesson, links) {
  const table = html`<table><thead><tr><th scope="col">measure</th>${lesson.table.arms.map((a) => html`<th scope="col">${a}</th>`)}</tr></thead><tbody>${
    lesson.table.rows.map((row) => html`<tr><th scope="row">${row.label}</th>${row.values.map((v) => html`<td>${v}</td>`)}</tr>`)}</tbody></table>`;
  const claims = lesson.claims.map((c) => html`<li><span aria-hidden="true">${c.holds ? "✔" : "✘"}</span> ${c.holds ? "" : html`<b>fails:</b> `}${c.text}</li>`);
  // The title is focusable so that the dialog focuses it on opening: the first link sits below the
  // claims, and focusing it scrolled a long slide past its title at 1280x720. The claims come
  // first and stay whole; the table and the summary share a box that scrolls on its own.
  render(dialog, html`<h2 id="claims-title" tabindex="-1">What it proves: ${lesson.title}</h2>
    <ul class="claims">${claims}</ul><div class="claims-more" tabindex="0" role="region" aria-label="Table of every arm">${table}<p>${lesson.summary}</p></div>
    <div class="slide-foot"><p>${links}</p><form method="dialog"><button class="primary">Close</button></form></div>`);
  setStyle(dialog, "fontSize", "");
  dialog.showModal();
  fitSlide(dialog);
}

// A slide fits its screen, as one on a projector must: a long list of claims (or of answered
// questions, check_yourself.js) is set in smaller type, down to the theme's floor (16 px in the
// projector theme, what the back of a hall reads), before anything would scroll past the Close button.
export function fitSlide(dialog) {
  const floor = document.documentElement.dataset.theme === "projector" ? 16 : 12;
  let size = parseFloat(getComputedStyle(dialog).fontSize);
  while (dialog.scrollHeight > dialog.clientHeight + 1 && size > floor) {
    size = Math.max(floor, size - 1);
    setStyle(dialog, "fontSize", `${size}px`);
  }
}
