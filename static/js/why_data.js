// The reasons behind past steps, fetched from the server (GET /api/sessions/ID/steps/N/why) and
// kept for a few steps: the Why? tab and the inspector ask about the same step.

const MAX_KEPT = 16;
const kept = new Map(); // `${session}/${step}` -> Promise of the answer (null if none)

export function reasonsOf(sessionId, step) {
  const key = `${sessionId}/${step}`;
  if (!kept.has(key)) {
    const answer = fetch(`/api/sessions/${sessionId}/steps/${step}/why`).then((r) => (r.ok ? r.json() : null)).catch(() => null);
    kept.set(key, answer);
    if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value);
  }
  return kept.get(key);
}

// What the step did to the pool, per kind, as block id lists (for the grid and the lists).
export function blockDiff(answer) {
  const d = answer.decisions;
  const flat = (map) => Object.values(map).flat();
  return {
    step: answer.step,
    allocated: flat(d.allocated),
    freed: d.frees.flatMap((f) => [...f.to_head, ...f.to_tail_cached, ...f.to_tail]),
    evicted: d.evicted,
    shared: [...flat(d.newly_shared), ...flat(d.revived)],
  };
}
