// The latest state of the session, assembled from snapshot and delta frames. Panels read it
// on requestAnimationFrame; `dirty` says which parts changed since they last drew.

export function createStore() {
  return {
    session: null,        // static facts: scenario, pool size, budget, ...
    status: { playing: false, steps_per_s: 20, step: 0, done: false, breakpoints: [] },
    step: 0,
    clock: 0,
    done: false,
    requests: new Map(),  // id -> request view
    queues: { waiting: [], num_waiting: 0, running: [], swapped: [], finished: [], num_finished: 0, num_pending: 0 },
    tables: new Map(),    // id -> [physical block ids] (a hybrid model's: every group's, null slots left out)
    kvGroups: null,       // a hybrid model's KV cache groups [{kind, window, label}], else null
    groupTables: new Map(), // a hybrid model's: id -> its table per group, 0 (the null block) where a window gave one back
    blocks: null,         // { owner: Array<string|null>, ref: Int32Array, cached: Uint8Array, group: Uint8Array|null, n }
    seq: -1,              // the sequence number of the state held (a delta names the one it follows)
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

// The cells a request's progress repaints: its last filled block before and after, and those it
// filled in between (the grid draws a request's last block filled to its height), in each of its
// tables (a hybrid model's groups each hold the same tokens).
function markProgress(store, id, before, after) {
  const bs = store.session.block_size;
  for (const table of store.kvGroups ? store.groupTables.get(id) || [] : [store.tables.get(id) || []]) {
    const held = (computed) => Math.max(1, Math.min(table.length, Math.ceil(computed / bs)));
    const from = held(Math.min(before, after)) - 1, to = held(Math.max(before, after));
    for (let j = from; j < to; j++) store.kvDirty.add(table[j]);
  }
}

// Block tables arrive as ids, each table's length and one flat array of their blocks; a hybrid
// model's (app/kv_group_frames.py) as one length per group for each id, group after group. Yields
// [id, its blocks without null slots, its tables per group or null].
function* tablesOf(frame, numGroups) {
  let at = 0, lengths = 0;
  for (let i = 0; i < frame.table_ids.length; i++) {
    const groups = [];
    for (let g = 0; g < (numGroups || 1); g++) {
      const length = frame.table_lengths[lengths++];
      groups.push(Array.from(frame.table_blocks.subarray(at, at + length)));
      at += length;
    }
    yield numGroups ? [frame.table_ids[i], groups.flat().filter((block) => block !== 0), groups] : [frame.table_ids[i], groups[0], null];
  }
}

export function applySnapshot(store, frame) {
  store.session = frame.session;
  store.status = frame.status;
  store.step = frame.step;
  store.clock = frame.clock_s;
  store.done = frame.done;
  store.seq = frame.seq;
  store.requests = new Map(Object.entries(frame.requests));
  store.queues = frame.queues;
  store.kvGroups = frame.kv_groups || null;
  store.tables = new Map();
  store.groupTables = new Map();
  for (const [id, table, groups] of tablesOf(frame, store.kvGroups?.length)) {
    store.tables.set(id, table);
    if (groups) store.groupTables.set(id, groups);
  }
  const n = frame.num_blocks, ownerIndex = frame.block_owner, owner = new Array(n);
  for (let block = 0; block < n; block++) owner[block] = ownerIndex[block] >= 0 ? frame.owner_ids[ownerIndex[block]] : null;
  store.blocks = { n, owner, ref: frame.block_ref, cached: frame.block_cached, group: frame.block_group || null };
  store.points = frame.points;
  store.metrics = frame.metrics;
  store.lastRecord = frame.last_record;
  store.events = frame.events;
  store.lastEventId = frame.events.length ? frame.events[frame.events.length - 1].id : 0;
  store.kvDirty.clear();
  store.dirty.add("all");
}

// Returns false when the delta does not apply to the state we hold (the caller asks for a snapshot).
export function applyDelta(store, frame) {
  if (frame.base_seq !== store.seq || !store.blocks) return false;
  store.seq = frame.seq;
  store.step = frame.step;
  store.clock = frame.clock_s;
  store.done = frame.done;
  for (const [id, view] of Object.entries(frame.requests)) {
    const before = store.requests.get(id);
    if (before) markProgress(store, id, before.computed, view.computed);
    store.requests.set(id, view);
  }
  const progress = frame.progress;
  frame.progress_ids.forEach((id, i) => {
    const view = store.requests.get(id);
    if (view) markProgress(store, id, view.computed, progress[2 * i]);
    if (view) { view.computed = progress[2 * i]; view.output = progress[2 * i + 1]; }
  });
  for (const [id, table, groups] of tablesOf(frame, store.kvGroups?.length)) {
    // Repaint the blocks that joined or left the table, and the last one kept (it may be full now).
    const old = store.tables.get(id) || [];
    let same = 0;
    while (same < old.length && same < table.length && old[same] === table[same]) same += 1;
    for (let j = Math.max(0, same - 1); j < table.length; j++) store.kvDirty.add(table[j]);
    for (let j = same; j < old.length; j++) store.kvDirty.add(old[j]);
    if (table.length) store.tables.set(id, table); else store.tables.delete(id);
    if (groups && table.length) store.groupTables.set(id, groups); else store.groupTables.delete(id);
  }
  const b = store.blocks;
  frame.block_ids.forEach((block, i) => {
    const owner = frame.block_owner[i];
    b.owner[block] = owner >= 0 ? frame.owner_ids[owner] : null;
    b.ref[block] = frame.block_ref[i];
    b.cached[block] = frame.block_cached[i];
    if (b.group) b.group[block] = frame.block_group[i];
    store.kvDirty.add(block);
  });
  store.queues = frame.queues;
  // Forget requests no panel shows any more, so a long run keeps bounded memory.
  const q = frame.queues;
  if (store.requests.size > 4 * (q.waiting.length + q.running.length + q.swapped.length + q.finished.length) + 1000) {
    const visible = new Set([...q.waiting, ...q.running, ...q.swapped, ...q.finished]);
    if (store.selected) visible.add(store.selected);
    for (const id of store.requests.keys()) if (!visible.has(id)) store.requests.delete(id);
  }
  store.points.push(...frame.points);
  if (store.points.length > MAX_POINTS) store.points = store.points.filter((_, i) => i % 2 === 0 || i === store.points.length - 1);
  if (frame.metrics) store.metrics = frame.metrics;
  if (frame.last_record) store.lastRecord = frame.last_record;
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
