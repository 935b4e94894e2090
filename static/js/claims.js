// "What it proves": a lesson's claims, each checked on the simulated numbers, and its table of
// every arm, as a slide of its own (a modal dialog), in the dashboard and the fleet view alike.

import { esc, fromEscaped, html, render } from "./dom.js";

// `lesson`: {title, summary, claims: [{holds, text}], table: {arms, rows: [{label, values}]}};
// `links`: the line under the claims, an html`` fragment made by the caller (the other arms, a comparison).
export function openClaims(dialog, lesson, links) {
  const table = `<table><thead><tr><th scope="col">measure</th>${lesson.table.arms.map((a) => `<th scope="col">${esc(a)}</th>`).join("")}</tr></thead><tbody>` +
    lesson.table.rows.map((row) => `<tr><th scope="row">${esc(row.label)}</th>${row.values.map((v) => `<td>${esc(v)}</td>`).join("")}</tr>`).join("") +
    "</tbody></table>";
  const claims = lesson.claims.map((c) => `<li><span aria-hidden="true">${c.holds ? "✔" : "✘"}</span> ${c.holds ? "" : "<b>fails:</b> "}${esc(c.text)}</li>`).join("");
  // The title is focusable so that the dialog focuses it on opening: the first link sits below the
  // claims, and focusing it scrolled a long slide past its title at 1280x720.
  render(dialog, html`${fromEscaped(`<h2 id="claims-title" tabindex="-1">What it proves: ${esc(lesson.title)}</h2><p>${esc(lesson.summary)}</p>` +
    `<div class="claims">${table}<ul>${claims}</ul></div>`)}<p>${links}</p><form method="dialog"><button class="primary">Close</button></form>`);
  dialog.showModal();
}
