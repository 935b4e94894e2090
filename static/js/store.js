// The latest state of the session, assembled from snapshot and delta frames. Panels read it
// on requestAnimationFrame; `dirty` says which parts changed since they last drew.

export function createStore() {
  return {
    session: null,        // static facts: scenario, pool size, budget, ...
    status: { playing: false, steps_per_s: 20, step: 0, done: false, breakpoints: [] },
    step: 0,
    clock: 0,
    done: false,
    seq: -1,
    requests: new Map(),  // id -> request view
    queues: { waiting: [], num_waiting: 0, running: [], swapped: [], finished: [], num_finished: 0, num_pending: 0 },
    tables: new Map(),    // id -> [physical block ids]
    blocks: null,         // { owner: Array<string|null>, ref: Int32Array, cached: Uint8Array, n }
    points: [],           // [clock, running, waiting, kv, prefill, decode, step_s]
    metrics: null,
    lastRecord: null,
    events: [],
    lastEventId: 0,
    selected: null,       // request id
    kvDirty: new Set(),   // blocks to repaint since the KV grid last drew (the deltas name them)
    dirty: new Set(["all"]),
  };
}

const MAX_POINTS = 6000;
const MAX_EVENTS = 1500;

export function applySnapshot(store, frame) {
  store.session = frame.session;
  store.status = frame.status;
  store.step = frame.step;
  store.clock = frame.clock_s;
  store.done = frame.done;
  store.seq = frame.seq;
  store.requests = new Map(Object.entries(frame.requests));
  store.queues = frame.queues;
  store.tables = new Map(Object.entries(frame.tables));
  const b = frame.blocks;
  const owner = new Array(b.num_blocks).fill(null);
  b.owner.forEach((index, block) => { if (index >= 0) owner[block] = b.owner_ids[index]; });
  store.blocks = { n: b.num_blocks, owner, ref: Int32Array.from(b.ref), cached: Uint8Array.from(b.cached) };
  store.points = frame.points;
  store.metrics = frame.metrics;
  store.lastRecord = frame.last_record;
  store.events = frame.events;
  store.lastEventId = frame.events.length ? frame.events[frame.events.length - 1].id : 0;
  store.dirty.add("all");
}

// Returns false when the delta does not follow the state we hold (the caller asks for a snapshot).
export function applyDelta(store, frame) {
  if (frame.seq !== store.seq + 1 || !store.blocks) return false;
  store.seq = frame.seq;
  store.step = frame.step;
  store.clock = frame.clock_s;
  store.done = frame.done;
  for (const [id, view] of Object.entries(frame.requests)) store.requests.set(id, view);
  for (const [id, computed, output] of frame.progress) {
    const view = store.requests.get(id);
    if (view) { view.computed = computed; view.output = output; }
  }
  for (const [id, computed, output] of frame.progress) {
    const view = store.requests.get(id);
    if (view) { view.computed = computed; view.output = output; }
    // Its last block fills up, and the one before it may have just become full.
    const table = store.tables.get(id);
    if (table) for (const block of table.slice(-2)) store.kvDirty.add(block);
  }
  for (const [id, table] of Object.entries(frame.tables)) {
    if (table.length) store.tables.set(id, table); else store.tables.delete(id);
    for (const block of table) store.kvDirty.add(block);
  }
  for (const [block, owner, ref, cached] of frame.blocks) {
    store.blocks.owner[block] = owner;
    store.blocks.ref[block] = ref;
    store.blocks.cached[block] = cached;
    store.kvDirty.add(block);
  }
  store.queues = frame.queues;
  // Forget requests no panel shows any more, so a long run keeps bounded memory.
  const visible = new Set([...frame.queues.waiting, ...frame.queues.running, ...frame.queues.swapped, ...frame.queues.finished]);
  if (store.selected) visible.add(store.selected);
  if (store.requests.size > 4 * visible.size + 1000) {
    for (const id of store.requests.keys()) if (!visible.has(id)) store.requests.delete(id);
  }
  store.points.push(...frame.points);
  if (store.points.length > MAX_POINTS) store.points = store.points.filter((_, i) => i % 2 === 0 || i === store.points.length - 1);
  if (frame.metrics) store.metrics = frame.metrics;
  if (frame.records.length) store.lastRecord = frame.records[frame.records.length - 1];
  store.dirty.add("state");
  return true;
}

export function applyEvents(store, frame) {
  const fresh = frame.events.filter((e) => e.id > store.lastEventId);
  if (!fresh.length && !frame.dropped) return;
  if (frame.dropped) store.events.push({ id: store.lastEventId, step: store.step, kind: "dropped", text: `${frame.dropped} events skipped (this viewer fell behind)` });
  store.events.push(...fresh);
  if (fresh.length) store.lastEventId = fresh[fresh.length - 1].id;
  if (store.events.length > MAX_EVENTS) store.events.splice(0, store.events.length - MAX_EVENTS);
  store.dirty.add("events");
}
