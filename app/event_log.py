"""The event log's lines for one step: admissions, resumptions, prompt chunks, preemptions, finishes, evictions."""

from __future__ import annotations

from scheduler_core.engine.step_record import StepRecord
from scheduler_core.utils import plural


def events_of(record: StepRecord, scheduling_order: str) -> list[dict]:
    """The step's story for the event log, each line tagged with its step so a click can seek."""
    step, events = record.step, []
    for rid in record.admitted:
        hit = record.cached_tokens.get(rid, 0)
        events.append({"step": step, "kind": "admitted", "request": rid,
                       "text": f"{rid} admitted" + (f", {plural(hit, 'prompt token')} hit the prefix cache" if hit else "")})
    for rid in record.resumed:
        events.append({"step": step, "kind": "resumed", "request": rid, "text": f"{rid} resumed after preemption"})
    for chunk in record.scheduled:
        if chunk.kind == "prefill":
            events.append({"step": step, "kind": "chunk", "request": chunk.request_id,
                           "text": f"{chunk.request_id} prefill chunk of {plural(chunk.num_tokens, 'token')} "
                                   f"(from token {chunk.num_computed_before:,})"})
    why = "lowest priority" if scheduling_order == "priority" else "newest running request"
    for rid in record.preempted:
        swapped = any(r == rid for r, _ in record.swapped_out)
        events.append({"step": step, "kind": "preempted", "request": rid,
                       "text": f"{rid} preempted: out of KV blocks, {why}; "
                               + ("KV swapped to CPU" if swapped else "KV freed, will recompute")})
    for rid in record.finished:
        events.append({"step": step, "kind": "finished", "request": rid, "text": f"{rid} finished"})
    for rid in record.aborted:
        events.append({"step": step, "kind": "aborted", "request": rid, "text": f"{rid} aborted (client disconnected)"})
    if record.num_blocks_evicted:
        events.append({"step": step, "kind": "evicted", "request": None,
                       "text": f"{plural(record.num_blocks_evicted, 'cached block')} evicted from the prefix cache"})
    return events
