// The event log: admissions (with prefix-cache hits), prefill chunks, preemptions and why,
// finishes, evictions. Clicking an event seeks the session to that step (presenter only) and
// selects its request.

const KINDS = { admitted: "admitted", resumed: "resumed", chunk: "prefill chunks", preempted: "preempted", finished: "finished", evicted: "evictions" };
const MAX_SHOWN = 150;

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
    if (item.dataset.request) onSelect(item.dataset.request, item.dataset.kind);
    onSeek(Number(item.dataset.step) + 1);
  });

  let shownArray = null; // the store.events array drawn from (a snapshot replaces it)
  let shownLastId = -1;
  let shownFilter = "";

  const item = (e) =>
    `<button class="event ${e.kind}" data-step="${e.step}" data-kind="${e.kind}" data-request="${e.request || ""}" ` +
    `title="Go to the end of step ${e.step + 1}${e.kind === "preempted" ? " and see why" : ""}">` +
    `<span class="at">${e.step + 1}</span><span class="what">${e.text}</span></button>`;

  function update() {
    const filter = [...hidden].join();
    const events = store.events;
    const lastId = events.length ? events[events.length - 1].id : 0;
    if (events === shownArray && filter === shownFilter && lastId === shownLastId) return;
    const incremental = events === shownArray && filter === shownFilter && list.querySelector(".event");
    if (incremental) { // newest first: put only the new events on top, drop the oldest rows
      const fresh = events.filter((e) => e.id > shownLastId && !hidden.has(e.kind)).slice(-MAX_SHOWN).reverse();
      list.insertAdjacentHTML("afterbegin", fresh.map(item).join(""));
      while (list.children.length > MAX_SHOWN) list.lastElementChild.remove();
    } else {
      const shown = [];
      for (let i = events.length - 1; i >= 0 && shown.length < MAX_SHOWN; i--) if (!hidden.has(events[i].kind)) shown.push(events[i]);
      list.innerHTML = shown.map(item).join("") || '<p class="muted">Nothing yet: events appear as the engine steps.</p>';
    }
    shownArray = events; shownLastId = lastId; shownFilter = filter;
  }
  return { update };
}
