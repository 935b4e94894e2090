// The Breakpoints dialog. Whether a breakpoint can stop this run is the server's to say
// (app/breakpoints.py checks each one against the run: a step already behind, a request id the
// workload does not have), so Set keeps the dialog open until the answer: the status frame
// carrying the set sent closes it; a refusal is written in the dialog (role=alert) beside the
// field it names, and that field takes the focus.

import { html, render } from "./dom.js";
import { withIds } from "./notice.js";

let pending = null; // { dialog, sent, inputs }: the set sent, waiting for the server's answer

const plain = (set) => JSON.stringify((set || []).map((b) => ({ kind: b.kind, value: b.value ?? null })));

export function openBreakpoints(store, dialog, send) {
  const current = store.status.breakpoints || [];
  const has = (kind) => current.find((b) => b.kind === kind);
  // Offered again only what can still stop the run: a step ahead, a request not finished.
  const step = has("step") && has("step").value > store.step ? has("step").value : "";
  const finished = (id) => ((store.requests.get(id) || {}).status || "").startsWith("finished");
  const asked = has("request") ? has("request").value : store.selected && !finished(store.selected) ? store.selected : "";
  // The request id shown is data (a scenario's or a trace's id): a hole of html``, so text.
  render(dialog, html`<h2 id="bp-title">Breakpoints</h2><p class="muted">Playback stops after a step that matches; B runs to the next one.</p>
    <form method="dialog" class="form-grid">
      <label><span>a preemption</span><input type="checkbox" data-kind="preemption" ${has("preemption") ? "checked" : ""}></label>
      <label><span>a request finishes</span><input type="checkbox" data-kind="finish" ${has("finish") ? "checked" : ""}></label>
      <label><span>a request is admitted</span><input type="checkbox" data-kind="admit" ${has("admit") ? "checked" : ""}></label>
      <label><span>KV usage at least (%)</span><input type="number" min="1" max="100" data-kind="kv_usage" value="${has("kv_usage") ? Math.round(has("kv_usage").value * 100) : ""}"></label>
      <label><span>at step</span><input type="number" min="${store.step + 1}" data-kind="step" value="${step}" placeholder="after ${store.step}"></label>
      <label><span>request id is scheduled</span><input type="text" data-kind="request" value="${asked}" placeholder="req-00012"></label>
      <p class="form-error bp-error" id="bp-error" role="alert"></p>
      <div><button value="cancel">Cancel</button> <button value="ok" class="primary" id="bp-save">Set</button></div>
    </form>`);
  dialog.querySelector("#bp-save").addEventListener("click", (event) => {
    event.preventDefault(); // closed by the server's answer, not by the click
    const breakpoints = [], inputs = [];
    for (const input of dialog.querySelectorAll("[data-kind]")) {
      input.removeAttribute("aria-invalid"); input.removeAttribute("aria-describedby");
      const kind = input.dataset.kind;
      if (input.type === "checkbox") { if (input.checked) { breakpoints.push({ kind }); inputs.push(input); } continue; }
      if (input.value === "") continue;
      const value = kind === "kv_usage" ? Number(input.value) / 100 : kind === "step" ? Number.parseInt(input.value, 10) : input.value;
      breakpoints.push({ kind, value });
      inputs.push(input);
    }
    dialog.querySelector(".bp-error").textContent = "";
    pending = { dialog, sent: plain(breakpoints), inputs };
    send({ type: "breakpoints", breakpoints });
  });
  dialog.addEventListener("close", () => { pending = null; }, { once: true });
  dialog.showModal();
}

// A status or error frame from the server: true when it answered the set the dialog sent (the
// dialog then closed, or shows the refusal).
export function breakpointsAnswered(frame) {
  if (!pending) return false;
  if (frame.type === "status") {
    if (plain(frame.breakpoints) !== pending.sent) return false;
    const { dialog } = pending;
    pending = null;
    dialog.close();
    return true;
  }
  const field = frame.field || "";
  if (frame.type !== "error" || !field.startsWith("breakpoints")) return false;
  // "breakpoints[1].value: step 10 is already behind: ...": the input it names takes the focus.
  const index = Number((field.match(/^breakpoints\[(\d+)\]/) || [])[1]);
  const input = Number.isInteger(index) ? pending.inputs[index] : null;
  const reason = frame.message.startsWith(`${field}: `) ? frame.message.slice(field.length + 2) : frame.message;
  render(pending.dialog.querySelector(".bp-error"), html`Not set. ${withIds(reason[0].toUpperCase() + reason.slice(1))}`);
  if (input) { input.setAttribute("aria-invalid", "true"); input.setAttribute("aria-describedby", "bp-error"); input.focus(); }
  return true;
}

// The server refused a set, or said what became of a run to a breakpoint, outside the dialog:
// the words for the page's notice.
export function refusalText(frame) {
  const field = frame.field || "";
  const reason = field && frame.message.startsWith(`${field}: `) ? frame.message.slice(field.length + 2) : frame.message;
  return field.startsWith("breakpoints") ? `Breakpoints not set: ${reason}` : reason;
}
