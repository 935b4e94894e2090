// The event log: admissions (with prefix-cache hits), prefill chunks, preemptions and why,
// finishes, evictions. Clicking an event seeks the session to the end of its step (presenter only)
// and selects its request. Steps are numbered as everywhere else: "step N" is the state after N
// engine iterations, so an event of iteration k shows k + 1.
// Repeats are coalesced for a room: evictions close together become one line ("14 cached blocks
// evicted, steps 2850–2858"), so they never push preemptions and finishes out of view; so are
// many requests admitted (or finished) in one step ("31 requests finished (req-00003, …, req-00251)").

import { fmtInt, plural } from "../colors.js";
import { el as h } from "../dom.js";

const KINDS = { admitted: "admitted", resumed: "resumed", chunk: "prefill chunks", preempted: "preempted", finished: "finished", evicted: "evictions" };
const MAX_SHOWN = 150;
const MERGE_STEPS = 20; // evictions within this many steps of the last eviction line join it
// More than this many requests admitted (or resumed, finished, chunked) in one step share a line:
// a batch turning over at 256 requests is then a few lines a step, not hundreds.
const MAX_SINGLE_LINES = 3;
const GROUPS = { admitted: "requests admitted", resumed: "requests resumed", finished: "requests finished", chunk: "prefill chunks" };

export function mount(el, store, { onSeek, onSelect }) {
  const hidden = new Set(["chunk"]);
  const list = h("div", { class: "list" });
  el.replaceChildren(h("div", { class: "filters" }, Object.entries(KINDS).map(([k, label]) =>
    h("label", {}, h("input", { type: "checkbox", "data-kind": k, checked: !hidden.has(k) }), ` ${label}`))), list);
  el.querySelector(".filters").addEventListener("change", (event) => {
    const kind = event.target.dataset.kind;
    if (event.target.checked) hidden.delete(kind); else hidden.add(kind);
    event.target.blur();
    store.dirty.add("events");
  });
  list.addEventListener("click", (event) => {
    const item = event.target.closest(".event");
    if (!item) return;
    if (item.dataset.request) onSelect(item.dataset.request, item.dataset.kind);
    onSeek(Number(item.dataset.step));
    item.blur();
  });

  let shownArray = null; // the store.events array the rows were built from (a snapshot replaces it)
  let shownLastId = -1;
  let shownFilter = "";
  let rows = []; // oldest first: { kind, step, to, request, text, blocks }

  // One event into the row model; an eviction joins the latest eviction line if it is recent.
  function add(e) {
    const step = e.step + 1;
    if (e.kind === "evicted") {
      const blocks = Number.parseInt(e.text, 10) || 0;
      const index = rows.findLastIndex((r) => r.kind === "evicted");
      if (index >= 0 && step - rows[index].to <= MERGE_STEPS) {
        const [group] = rows.splice(index, 1);
        rows.push({ ...group, to: step, blocks: group.blocks + blocks, el: null });
      } else {
        rows.push({ kind: "evicted", step, to: step, request: "", blocks });
      }
      return;
    }
    const last = rows[rows.length - 1];
    if (GROUPS[e.kind] && last && last.group && last.kind === e.kind && last.step === step) {
      rows[rows.length - 1] = { ...last, count: last.count + 1, lastRequest: e.request, el: null };
      return;
    }
    const tail = rows.slice(-MAX_SINGLE_LINES);
    if (GROUPS[e.kind] && tail.length === MAX_SINGLE_LINES && tail.every((r) => r.kind === e.kind && r.step === step && !r.group)) {
      rows.splice(-MAX_SINGLE_LINES, MAX_SINGLE_LINES,
        { kind: e.kind, step, to: step, request: tail[0].request, group: true, count: MAX_SINGLE_LINES + 1, lastRequest: e.request });
      return;
    }
    rows.push({ kind: e.kind, step, to: step, request: e.request || "", text: e.text });
  }

  function text(row) {
    if (row.group) return `${fmtInt(row.count)} ${GROUPS[row.kind]} (${row.request}, …, ${row.lastRequest})`;
    if (row.kind !== "evicted") return row.text;
    const steps = row.step === row.to ? `step ${fmtInt(row.step)}` : `steps ${fmtInt(row.step)}–${fmtInt(row.to)}`;
    return `${plural(row.blocks, "cached block")} evicted from the prefix cache, ${steps}`;
  }

  // Built as elements: a request id or an event's text is shown as text, whatever it holds.
  const item = (row) =>
    h("button", { class: `event ${row.kind}`, "data-step": row.to, "data-kind": row.kind, "data-request": row.request,
      title: `Go to step ${fmtInt(row.to)}${row.kind === "preempted" ? " and see why" : ""}` },
    h("span", { class: "at" }, fmtInt(row.to)), h("span", { class: "what" }, text(row)));

  // A row's element is made once: a step that adds two events adds two lines, it does not
  // rebuild the other 148 (each rebuild dirtied the layout of the whole log).
  function element(row) {
    if (!row.el) row.el = item(row);
    return row.el;
  }

  function update() {
    const filter = [...hidden].join();
    const events = store.events;
    const lastId = events.length ? events[events.length - 1].id : 0;
    if (events === shownArray && filter === shownFilter && lastId === shownLastId) return;
    const incremental = events === shownArray && filter === shownFilter;
    if (!incremental) rows = [];
    for (const e of events) {
      if ((incremental && e.id <= shownLastId) || hidden.has(e.kind)) continue;
      add(e);
    }
    if (rows.length > MAX_SHOWN) rows = rows.slice(-MAX_SHOWN);
    if (!rows.length) list.replaceChildren(h("p", { class: "muted" }, "Nothing yet: events appear as the engine steps."));
    else {
      const wanted = rows.slice().reverse().map(element); // newest first
      const keep = new Set(wanted);
      for (const child of [...list.children]) if (!keep.has(child)) child.remove();
      let cursor = list.firstChild;
      for (const line of wanted) {
        if (line === cursor) cursor = cursor.nextSibling;
        else list.insertBefore(line, cursor);
      }
    }
    shownArray = events; shownLastId = lastId; shownFilter = filter;
  }
  return { update };
}
