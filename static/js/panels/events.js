// The event log: admissions (with prefix-cache hits), prefill chunks, preemptions and why,
// finishes, evictions. Clicking an event seeks the session to that step (presenter only) and
// selects its request.

const KINDS = { admitted: "admitted", resumed: "resumed", chunk: "prefill chunks", preempted: "preempted", finished: "finished", evicted: "evictions" };
const MAX_SHOWN = 400;

export function mount(el, store, { onSeek, onSelect }) {
  const hidden = new Set(["chunk"]);
  el.innerHTML = `<div class="filters">${Object.entries(KINDS).map(([k, label]) =>
    `<label><input type="checkbox" data-kind="${k}" ${hidden.has(k) ? "" : "checked"}> ${label}</label>`).join("")}</div><div class="list"></div>`;
  const list = el.querySelector(".list");
  el.querySelector(".filters").addEventListener("change", (event) => {
    const kind = event.target.dataset.kind;
    if (event.target.checked) hidden.delete(kind); else hidden.add(kind);
    store.dirty.add("events");
  });
  list.addEventListener("click", (event) => {
    const item = event.target.closest(".event");
    if (!item) return;
    if (item.dataset.request) onSelect(item.dataset.request);
    onSeek(Number(item.dataset.step) + 1);
  });

  function update() {
    const shown = [];
    for (let i = store.events.length - 1; i >= 0 && shown.length < MAX_SHOWN; i--) {
      const e = store.events[i];
      if (!hidden.has(e.kind)) shown.push(e);
    }
    const stick = list.scrollTop < 4;
    list.innerHTML = shown.map((e) =>
      `<button class="event ${e.kind}" data-step="${e.step}" data-request="${e.request || ""}" title="Go to step ${e.step + 1}">` +
      `<span class="at">${e.step}</span><span class="what">${e.text}</span></button>`).join("") ||
      '<p class="muted">Nothing yet: events appear as the engine steps.</p>';
    if (stick) list.scrollTop = 0;
  }
  return { update };
}
