// What the configuration form reads from its number fields, and how it leaves: a value the
// browser cannot read ("12e", which a number input reports as empty) or cannot hold ("1e400",
// Infinity, which JSON turns into null) is named, never sent as "unset" for the server to fill in
// with a default or the old value; and Esc asks before throwing edits away.

// The number in a field, "" when it is really empty, or { problem } saying what is wrong with it.
export function numberOf(input) {
  // Chromium reports both "12e" and "1e400" (past a double) as bad input, with an empty value.
  const problem = { problem: `${input.dataset.name}: not a finite number (write it as 1200 or 1.2e3)` };
  if (input.validity && input.validity.badInput) return problem;
  if (input.value === "") return "";
  const value = Number(input.value);
  if (!Number.isFinite(value)) return problem;
  return value;
}

// Esc closes a <dialog> through its cancel event: with edits made, the first Esc only asks (in the
// form's error line), a second one discards them. `onAsk(text)` shows the question; `edited`: the
// form opens on settings that are already an edit (a pasted line's).
export function askBeforeDiscarding(dialog, form, onAsk, edited = false) {
  let asked = false;
  form.addEventListener("input", () => { edited = true; asked = false; });
  // A property, not a listener: the form is built afresh at every opening, the dialog is not.
  dialog.oncancel = (event) => {
    if (!edited || asked) return;
    event.preventDefault();
    asked = true;
    onAsk("You have changed settings: press Esc again to discard them, or Start session to use them.");
  };
}

// A pasted `vllm serve` line, read by the server (the CLI's parser, the one validation path) over the
// form's settings: { scenario, ignored } to show in the form, or { error } naming what is wrong.
export async function pasteVllmLine(command, scenario) {
  const response = await fetch("/api/scenarios/vllm-command", { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ command, scenario }) });
  const body = await response.json();
  if (response.ok) return body;
  const detail = Array.isArray(body.detail) ? body.detail.map((d) => `${d.loc.filter((l) => l !== "body").join(".")}: ${d.msg}`).join("; ") : String(body.detail);
  return { error: detail };
}
