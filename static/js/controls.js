// The top bar: transport buttons, speed, breakpoints, scenario picker, configuration form
// (built from the served JSON Schema), share and export links, theme, and the keyboard.

import { openBreakpoints } from "./breakpoints_dialog.js";
import { askBeforeDiscarding, numberOf, pasteVllmLine } from "./config_form_input.js";
import { html, render } from "./dom.js";
import { modelLines } from "./model_lines.js";
import { downloadExport } from "./sessions.js";
import { setAttr, setProp } from "./writes.js";

const SPEEDS = [1, 2, 5, 10, 20, 50, 100, 250, 1000];
// Engine settings the server derives from the model and hardware (the pool from memory, vLLM's KV cache
// groups and a Mamba hybrid's block size from the layers): a new model, GPU, TP or memory share empties
// them, so they follow it instead of carrying the old session's values (a 422 on kv_cache_groups).
const DERIVED = ["num_gpu_blocks", "kv_cache_groups", "block_size"];

export function mount(store, { send, sessionId, canControl, onTheme }) {
  const $ = (id) => document.getElementById(id);
  const play = $("play");

  for (const id of ["reset", "step-back", "play", "step", "speed", "breakpoints-button"]) $(id).disabled = !canControl;
  $("role").textContent = canControl ? "presenter" : "view only";

  play.addEventListener("click", togglePlay);
  $("step").addEventListener("click", () => send({ type: "step", n: 1 }));
  $("step-back").addEventListener("click", () => send({ type: "step_back", n: 1 }));
  $("reset").addEventListener("click", () => send({ type: "reset" }));
  $("speed").addEventListener("change", (event) => {
    const value = event.target.value;
    send(value.startsWith("x") ? { type: "speed", time_ratio: Number(value.slice(1)) } : { type: "speed", steps_per_s: Number(value) });
    event.target.blur(); // Space and the arrows drive the session again, not the menu
    toast(`speed ${event.target.selectedOptions[0].textContent}`);
  });
  // A control used with the mouse (a button, a chip, a tab) hands the keyboard back to the page,
  // so Space plays again; inside a dialog focus stays where the dialog put it.
  document.addEventListener("click", (event) => {
    const control = event.target.closest("button, a, input[type=checkbox]");
    if (control && event.detail > 0 && !control.closest("dialog")) control.blur();
  });
  for (const dialog of document.querySelectorAll("dialog")) {
    dialog.addEventListener("close", () => { if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur(); });
  }
  $("scenario-picker").addEventListener("change", (event) => { if (event.target.value) location.href = `/?${event.target.value}`; });
  $("theme").addEventListener("click", () => onTheme());
  $("help").addEventListener("click", () => $("help-dialog").showModal());
  $("share").addEventListener("click", async () => {
    const origin = store.session && store.session.origin ? `?${store.session.origin}` : "";
    const link = `${location.origin}/s/${sessionId}/view${origin}`;
    try { await navigator.clipboard.writeText(link); $("share").textContent = "Copied"; } catch { prompt("View link:", link); }
    setTimeout(() => { $("share").textContent = "Share"; }, 2000);
  });
  // Exports need the control token, sent as a header (never in a link), so only the presenter has them.
  $("export").disabled = !canControl;
  $("export").addEventListener("click", () => $("export-dialog").showModal());
  for (const [id, name] of [["export-metrics-json", "metrics.json"], ["export-metrics-csv", "metrics.csv"],
    ["export-steps", "steps.jsonl"], ["export-trace", "trace.json"]]) {
    $(id).href = "#";
    $(id).addEventListener("click", (event) => { event.preventDefault(); downloadExport(sessionId, name); });
  }
  $("configure").addEventListener("click", () => openConfigForm(store, $("config-dialog")));
  $("breakpoints-button").addEventListener("click", () => openBreakpoints(store, $("breakpoints-dialog"), send));

  let toastTimer = null;
  function toast(text) {
    const el = $("toast");
    el.textContent = text;
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { el.hidden = true; }, 2200);
  }
  function togglePlay() {
    if (!canControl) return;
    if (store.done && !store.status.playing) { toast("the run has finished: Home resets it"); return; }
    send({ type: store.status.playing ? "pause" : "play" });
    toast(store.status.playing ? "paused" : "playing");
  }
  function runToBreakpoint() {
    const set = store.status.breakpoints || [];
    if (!set.length) { toast("B: no breakpoint set. Open Breakpoints to add one"); return; }
    send({ type: "run_to_breakpoint" });
    toast(`running to the next breakpoint (${set.map((b) => b.kind).join(", ")})`);
  }
  let lesson = null; // next / prev / claims / check of a guided lesson
  function changeSpeed(direction) {
    const current = store.status.steps_per_s;
    const index = SPEEDS.findIndex((s) => s >= current);
    const next = SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, (index < 0 ? SPEEDS.length - 1 : index) + direction))];
    send({ type: "speed", steps_per_s: next });
    toast(`speed ${next}/s`);
  }
  const stepBy = (n) => { send({ type: n > 0 ? "step" : "step_back", n: Math.abs(n) }); toast(n > 0 ? `step +${n}` : `step −${-n}`); };

  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, select, textarea, dialog") || event.ctrlKey || event.metaKey || event.altKey) return;
    // A focused button or chip answers Space and Enter itself.
    if ((event.key === " " || event.key === "Enter") && event.target.closest("button, a, [role=button]")) return;
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    const control = {
      " ": togglePlay,
      ArrowRight: () => stepBy(event.shiftKey ? 10 : 1),
      ArrowLeft: () => stepBy(event.shiftKey ? -10 : -1),
      Home: () => { send({ type: "reset" }); toast("back to step 0"); },
      "+": () => changeSpeed(1), "=": () => changeSpeed(1), "-": () => changeSpeed(-1),
      b: runToBreakpoint,
      // In a lesson the caption bar itself says which beat N / P went to: a toast would only
      // cover the KV and chart legends beneath it for two seconds.
      n: () => { if (!(lesson && lesson.next())) toast("N: no lesson in this session"); },
      p: () => { if (!(lesson && lesson.prev())) toast("P: no lesson in this session"); },
    };
    const anyone = {
      "?": () => $("help-dialog").showModal(),
      t: () => { onTheme(); toast(`${document.documentElement.dataset.theme} theme`); },
      w: () => { if (!lesson || !lesson.claims()) toast("W: no lesson in this session"); },
      q: () => { if (!lesson || !lesson.check()) toast("Q: no lesson in this session"); },
      // Esc also hands the keyboard back to the page: a chip or a grid left focused would keep
      // taking Space (a chip toggles its selection), and Space would never play again.
      Escape: () => {
        store.selected = null; store.dirty.add("selection");
        if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
      },
    };
    const action = anyone[key] || control[key];
    if (!action) return;
    event.preventDefault();
    if (!anyone[key] && !canControl) { toast("view only: the presenter drives this session"); return; }
    action();
  });

  return {
    toast,
    lessonKeys(keys) { lesson = keys; },
    update() {
      const s = store.status;
      // Called every frame while playing: each property is written only when it changes.
      setProp(play, "textContent", s.playing ? "❚❚ Pause" : "▶ Play");
      setAttr(play, "aria-label", s.playing ? "Pause" : "Play");
      setProp(play, "disabled", !canControl || (store.done && !s.playing));
      setProp($("step"), "disabled", !canControl || store.done);
      setProp($("step-counter"), "value", store.step.toLocaleString("en-US"));
      setProp($("sim-clock"), "value", `${store.clock.toFixed(3)} s`);
      setProp($("run-state"), "textContent", store.done ? "finished" : s.playing ? "playing" : "paused");
      const speed = $("speed");
      if (document.activeElement !== speed) {
        setProp(speed, "value", s.time_ratio ? `x${s.time_ratio}` : String(SPEEDS.find((v) => v >= s.steps_per_s) || SPEEDS[SPEEDS.length - 1]));
      }
      setProp($("breakpoints-button"), "textContent", s.breakpoints && s.breakpoints.length ? `Breakpoints (${s.breakpoints.length})` : "Breakpoints");
    },
  };
}

// -- the configuration form, built from the JSON Schema -------------------------------------
// `given`: the settings to show instead of the session's (a pasted `vllm serve` line's).
async function openConfigForm(store, dialog, given = null, note = "") {
  const schema = await (await fetch("/api/schema")).json();
  const current = given || (store.session ? store.session.scenario : {});
  const defs = schema.$defs || {};
  const field = (path, name, spec, value) => {
    const id = `cfg-${path}-${name}`;
    const title = spec.description || spec.title || name;
    const choices = spec.enum || (spec.anyOf && spec.anyOf.find((s) => s.enum) || {}).enum;
    let input;
    // A choice that may be left unset (vllm_version) offers the server's default first.
    const unset = spec.anyOf && spec.anyOf.some((s) => s.type === "null") ? html`<option value="" ${value == null ? "selected" : ""}>(default)</option>` : "";
    if (choices) input = html`<select id="${id}" data-path="${path}" data-name="${name}">${unset}${choices.map((c) => html`<option ${c === value ? "selected" : ""}>${c}</option>`)}</select>`;
    else if (spec.type === "boolean" || (spec.anyOf && spec.anyOf.some((s) => s.type === "boolean"))) input = html`<input type="checkbox" id="${id}" data-path="${path}" data-name="${name}" data-type="boolean" ${value ? "checked" : ""}>`;
    else if (spec.type === "integer" || spec.type === "number" || (spec.anyOf && spec.anyOf.some((s) => s.type === "integer" || s.type === "number")))
      input = html`<input type="number" step="any" id="${id}" data-path="${path}" data-name="${name}" data-type="number" value="${value ?? ""}">`;
    else input = html`<input type="text" id="${id}" data-path="${path}" data-name="${name}" value="${value ?? ""}" placeholder="${spec.default ? "(default)" : ""}">`;
    return html`<label for="${id}" title="${title}"><span>${name}</span>${input}</label>`;
  };
  const section = (path, refName, values) => {
    const props = defs[refName].properties;
    // Nested tables (compat, speculative_config) are not form fields: the session's values are kept.
    const fields = Object.entries(props).filter(([, spec]) => !spec.$ref && !(spec.anyOf || []).some((s) => s.$ref)).map(([n, spec]) => field(path, n, spec, values[n]));
    return html`<fieldset><legend>${path}</legend><div class="form-grid">${fields}</div></fieldset>`;
  };
  const top = Object.entries(schema.properties).filter(([n]) => ["model", "gpu", "vllm_version", "tensor_parallel_size", "data_parallel_size", "enable_expert_parallel", "gpu_memory_utilization", "kv_cache_dtype"].includes(n))
    .map(([n, spec]) => field("top", n, spec, current[n]));
  render(dialog, html`<h2 id="config-title">Configuration</h2><p class="muted">Starts a new session with these settings; the URL then captures them.</p>
    <form method="dialog"><div class="vllm-line"><label for="cfg-vllm-line"><span>a <code>vllm serve</code> line</span>
    <input type="text" id="cfg-vllm-line" placeholder="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 128"></label>
    <button type="button" id="cfg-vllm-apply">Apply</button><span class="muted" id="cfg-vllm-note">${note}</span></div>
    <fieldset><legend>model and hardware</legend><div class="form-grid">${top}</div>
    <div class="startup-lines" aria-live="polite"><span class="muted">vLLM at startup, per GPU:</span><pre id="cfg-startup"></pre><p id="cfg-capacity" class="capacity-warning" hidden></p></div>
    <div class="model-summary" aria-live="polite"><span class="muted">The model:</span><div id="cfg-model"></div></div></fieldset>
    ${section("engine", "EngineModel", current.engine || {})}${section("workload", "WorkloadModel", current.workload || {})}
    <p class="form-error" role="alert"></p>
    <button value="cancel">Cancel</button> <button id="cfg-submit" value="ok" class="primary">Start session</button></form>`);
  // Prefix caching left to the server once the model changes, unless the user ticked the box: unset, a
  // Mamba hybrid runs without it (vLLM's align mode is not modelled) and the startup lines say why.
  const caching = dialog.querySelector("#cfg-engine-enable_prefix_caching");
  let problems = []; // number fields the browser could not read, from the last formScenario()
  const formScenario = () => {
    const scenario = { engine: { ...(current.engine || {}) }, workload: { ...(current.workload || {}) } };
    delete scenario.engine.compat;
    problems = [];
    for (const input of dialog.querySelectorAll("[data-path]")) {
      const { path, name, type } = input.dataset;
      let value = type === "boolean" ? input.checked : input.value;
      if (type === "number") value = numberOf(input);
      if (value && value.problem) { problems.push(value.problem); continue; }
      if (value === null || value === "") continue; // left empty: the server's default (kv_cache_groups, say)
      if (path === "top") scenario[name] = value; else scenario[path][name] = value;
    }
    // Emptied, a derived setting is the server's: an empty block count sizes the KV cache from GPU memory, as vLLM does.
    for (const name of DERIVED) if (dialog.querySelector(`#cfg-engine-${name}`).value === "") delete scenario.engine[name];
    if (caching.dataset.unset) delete scenario.engine.enable_prefix_caching;
    return scenario;
  };
  // The server allows each client a few validations a second and every change is one: a 429 is waited
  // out as its Retry-After says (twice at most), so quick edits end on their answer, not on "too many".
  const validate = async (scenario) => {
    for (let attempt = 0; ; attempt++) {
      const response = await fetch("/api/scenarios/validate", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ scenario }) });
      if (response.status !== 429 || attempt === 2) return response;
      await new Promise((resume) => setTimeout(resume, 1000 * Number(response.headers.get("retry-after") || 1)));
    }
  };
  const errorText = (body) => Array.isArray(body.detail) ? body.detail.map((d) => `${d.loc.filter((l) => l !== "body").join(".")}: ${d.msg}`).join("; ") : body.detail;
  // The startup lines vLLM would log (KV cache size, maximum concurrency), refreshed as settings change.
  let validations = 0;
  const showStartup = async (event) => {
    const target = event ? event.target : null;
    if (target === caching) { delete caching.dataset.unset; caching.dataset.touched = "1"; }
    // New hardware, model or memory share: the old block count, groups and block size mean nothing any
    // more (a release keeps them: only its rules change).
    if (target && target.dataset.path === "top" && target.dataset.name !== "vllm_version") {
      for (const name of DERIVED) dialog.querySelector(`#cfg-engine-${name}`).value = "";
      if (!caching.dataset.touched) caching.dataset.unset = "1";
    }
    const asked = ++validations;
    const scenario = formScenario();
    // The error line is written only when there is something to say, never emptied as a change begins:
    // the change event of a field fires as its user clicks Start session, and an emptied line would move
    // the button from under the pointer before the click lands.
    if (problems.length) { dialog.querySelector(".form-error").textContent = problems.join("; "); return; }
    const response = await validate(scenario);
    const body = await response.json();
    if (asked !== validations) return; // a later change's answer is on its way: this one is stale
    if (response.ok) dialog.querySelector(".form-error").textContent = ""; // the settings as they are now are valid
    dialog.querySelector("#cfg-startup").textContent = response.ok ? body.memory.startup_lines.join("\n") : errorText(body);
    // Clients x mean context beyond the KV cache: the run can only preempt (the core's KVCapacity rule).
    const capacity = dialog.querySelector("#cfg-capacity");
    capacity.textContent = response.ok ? body.capacity.warning : "";
    capacity.hidden = !capacity.textContent;
    render(dialog.querySelector("#cfg-model"), response.ok ? modelLines(body.model) : html``);
    if (!response.ok) return;
    // What the server decided for what the form leaves to it: shown, not sent.
    for (const name of DERIVED) dialog.querySelector(`#cfg-engine-${name}`).placeholder = String(body.engine[name]);
    if (caching.dataset.unset) caching.checked = body.engine.enable_prefix_caching;
  };
  dialog.querySelector("form").addEventListener("change", showStartup);
  askBeforeDiscarding(dialog, dialog.querySelector("form"), (text) => { dialog.querySelector(".form-error").textContent = text; },
    Boolean(given));
  // Enter in the line applies it (a form's implicit submission would close the dialog).
  dialog.querySelector("#cfg-vllm-line").addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); dialog.querySelector("#cfg-vllm-apply").click(); }
  });
  showStartup();
  dialog.querySelector("#cfg-submit").addEventListener("click", async (event) => {
    event.preventDefault();
    const scenario = formScenario();
    if (problems.length) { dialog.querySelector(".form-error").textContent = problems.join("; "); return; }
    const check = await validate(scenario);
    if (!check.ok) {
      dialog.querySelector(".form-error").textContent = errorText(await check.json());
      return;
    }
    location.href = `/?config=${encodeURIComponent(JSON.stringify(scenario))}`;
  });
  dialog.querySelector("#cfg-vllm-apply").addEventListener("click", async () => {
    const line = await pasteVllmLine(dialog.querySelector("#cfg-vllm-line").value, formScenario());
    if (line.error) { dialog.querySelector(".form-error").textContent = line.error; return; }
    openConfigForm(store, dialog, line.scenario, line.ignored.length ? `ignored: ${line.ignored.join(" ")}` : "applied");
  });
  if (!dialog.open) dialog.showModal();
}
