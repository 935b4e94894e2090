// The reasons behind past steps, fetched from the server (GET /api/sessions/ID/steps/N/why) and
// kept for a few steps: the Why? tab and the inspector ask about the same step. A server too busy
// to replay the step now (429) or out of time for it (503) is not an answer: nothing is kept, and
// the Why? tab says so and asks again after the server's Retry-After.

const MAX_KEPT = 16;
const kept = new Map(); // `${session}/${step}` -> Promise of {answer} (null if none), {busy: s} or {failed: text}

const retryAfterS = (response) => Math.min(60, Math.max(1, parseInt(response.headers.get("Retry-After"), 10) || 2));
const detailOf = (response) => response.json().then((body) => String(body.detail ?? response.statusText)).catch(() => response.statusText);

// {answer} (the step's reasons, or null if it has none), {busy: seconds to wait} or {failed: why}.
export function whyOf(sessionId, step) {
  const key = `${sessionId}/${step}`;
  if (!kept.has(key)) {
    const reply = fetch(`/api/sessions/${sessionId}/steps/${step}/why`).then(async (response) => {
      if (response.status === 429) return forget(key, { busy: retryAfterS(response) });
      if (response.status === 503) return forget(key, { failed: await detailOf(response) });
      return { answer: response.ok ? await response.json() : null };
    }).catch(() => forget(key, { failed: "the server could not be reached" }));
    kept.set(key, reply);
    if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value);
  }
  return kept.get(key);
}

function forget(key, reply) {
  kept.delete(key);
  return reply;
}

// The step's reasons, or null (none, or not now: the inspector shows them when they come).
export const reasonsOf = (sessionId, step) => whyOf(sessionId, step).then((reply) => reply.answer ?? null);

// What the step did to the pool, per kind, as block id lists (for the grid and the lists).
export function blockDiff(answer) {
  const d = answer.decisions;
  const flat = (map) => Object.values(map).flat();
  return {
    step: answer.step,
    allocated: flat(d.allocated),
    // Blocks a sliding window gave back while their request ran are freed too (a hybrid model's).
    freed: [...d.frees, ...(d.left_window || [])].flatMap((f) => [...f.to_head, ...f.to_tail_cached, ...f.to_tail]),
    evicted: d.evicted,
    shared: [...flat(d.newly_shared), ...flat(d.revived)],
  };
}
