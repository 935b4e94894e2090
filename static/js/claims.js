// "What it proves": a lesson's claims, each checked on the simulated numbers, and its table of
// every arm, as a slide of its own (a modal dialog), in the dashboard and the fleet view alike.

import { html, render } from "./dom.js";

// `lesson`: {title, summary, claims: [{holds, text}], table: {arms, rows: [{label, values}]}};
// `links`: the line under the claims, an html`` fragment made by the caller (the other arms, a comparison).
export function openClaims(dialog, lesson, links) {
  const table = html`<table><thead><tr><th scope="col">measure</th>${lesson.table.arms.map((a) => html`<th scope="col">${a}</th>`)}</tr></thead><tbody>${
    lesson.table.rows.map((row) => html`<tr><th scope="row">${row.label}</th>${row.values.map((v) => html`<td>${v}</td>`)}</tr>`)}</tbody></table>`;
  const claims = lesson.claims.map((c) => html`<li><span aria-hidden="true">${c.holds ? "✔" : "✘"}</span> ${c.holds ? "" : html`<b>fails:</b> `}${c.text}</li>`);
  // The title is focusable so that the dialog focuses it on opening: the first link sits below the
  // claims, and focusing it scrolled a long slide past its title at 1280x720.
  render(dialog, html`<h2 id="claims-title" tabindex="-1">What it proves: ${lesson.title}</h2><p>${lesson.summary}</p>
    <div class="claims">${table}<ul>${claims}</ul></div><p>${links}</p><form method="dialog"><button class="primary">Close</button></form>`);
  dialog.showModal();
}
