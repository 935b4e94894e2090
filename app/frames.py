"""What the browser receives: versioned snapshot and delta frames built from the simulation.

A snapshot carries everything a panel draws; a delta carries one or more steps' changes (the
step records, the requests and blocks they touched, new chart points) and the sequence number
the client uses to notice a gap (then it asks for a snapshot).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scheduler_core.request import Request
from scheduler_core.simulation import Simulation
from scheduler_core.step_record import StepRecord

PROTOCOL_VERSION = 1
# Queues are long under overload; frames carry the head of each and the count.
MAX_QUEUE_IDS = 200
MAX_RECENT_FINISHED = 100


def request_view(request: Request) -> dict:
    return {
        "id": request.request_id,
        "status": request.status.value,
        "prompt": request.num_prompt_tokens,
        "computed": request.num_computed_tokens,
        "output": request.num_output_tokens,
        "max_tokens": request.max_tokens,
        "priority": request.priority,
        "arrival_s": request.arrival_time,
        "first_scheduled_s": request.first_scheduled_time,
        "first_token_s": request.token_times[0] if request.token_times else None,
        "finish_s": request.finish_time,
        "preemptions": request.num_preemptions,
        "cached": max(request.num_cached_tokens, 0),
        # Stable per request for the whole run: the browser derives its colour from it.
        "color": request.arrival_index,
    }


def record_view(record: StepRecord) -> dict:
    return {
        "step": record.step,
        "clock_s": record.clock_s_before,
        "step_s": record.step_s,
        "scheduled": [[c.request_id, c.num_tokens, c.num_computed_before, c.kind] for c in record.scheduled],
        "arrived": record.arrived,
        "admitted": record.admitted,
        "resumed": record.resumed,
        "preempted": record.preempted,
        "finished": record.finished,
        "cached_tokens": record.cached_tokens,
        "swapped_out": record.swapped_out,
        "swapped_in": record.swapped_in,
        "blocks_allocated": record.num_blocks_allocated,
        "blocks_freed": record.num_blocks_freed,
        "blocks_evicted": record.num_blocks_evicted,
        "blocks_hit": record.num_blocks_hit,
        "running": record.num_running,
        "waiting": record.num_waiting,
        "swapped": record.num_swapped,
        "free_blocks": record.num_free_blocks,
        "kv_usage": record.kv_usage,
        "cost": record.cost_breakdown,
    }


def point_view(record: StepRecord) -> list:
    """One chart sample: [clock_s, running, waiting, kv_usage, prefill tokens, decode tokens, step_s]."""
    return [
        round(record.clock_s_after, 6), record.num_running, record.num_waiting, round(record.kv_usage, 5),
        record.num_prefill_tokens, record.num_decode_tokens, round(record.step_s, 7),
    ]


def queues_view(sim: Simulation) -> dict:
    scheduler = sim.scheduler
    waiting = []
    for request in scheduler.waiting:
        if len(waiting) == MAX_QUEUE_IDS:
            break
        waiting.append(request.request_id)
    finished = list(sim.finished_requests)[-MAX_RECENT_FINISHED:]
    return {
        "waiting": waiting,
        "num_waiting": len(scheduler.waiting),
        "running": [r.request_id for r in scheduler.running],
        "swapped": [r.request_id for r in scheduler.swapped],
        "finished": finished,
        "num_finished": len(sim.finished_requests),
        "num_pending": sim.num_pending,
    }


def visible_requests(sim: Simulation, queues: dict) -> dict[str, dict]:
    ids = queues["waiting"] + queues["running"] + queues["swapped"] + queues["finished"]
    return {rid: request_view(sim.request(rid)) for rid in ids}


def block_owners(sim: Simulation) -> dict[int, str]:
    """Physical block -> the first request whose table holds it (shared blocks have several)."""
    owners: dict[int, str] = {}
    for rid, table in sim.scheduler.kv_cache_manager.req_to_blocks.items():
        for block_id in table:
            owners.setdefault(block_id, rid)
    return owners


def blocks_view(sim: Simulation) -> dict:
    """The whole pool: per block its owner (index into `owner_ids`, -1 for none), ref count and
    whether it holds a cached prefix."""
    kv = sim.scheduler.kv_cache_manager
    owners = block_owners(sim)
    owner_ids = sorted(set(owners.values()))
    index = {rid: i for i, rid in enumerate(owner_ids)}
    num_blocks = kv.num_total_blocks
    owner = [-1] * num_blocks
    for block_id, rid in owners.items():
        owner[block_id] = index[rid]
    pool = getattr(kv, "block_pool", None)
    ref = list(pool.ref_cnt) if pool else [1 if o >= 0 else 0 for o in owner]
    cached = [0 if h is None else 1 for h in pool.block_hash] if pool else [0] * num_blocks
    return {"num_blocks": num_blocks, "owner_ids": owner_ids, "owner": owner, "ref": ref, "cached": cached}


def changed_blocks_view(sim: Simulation, block_ids: Iterable[int]) -> list[list]:
    """[block id, owner request id or None, ref count, cached] for each block that changed."""
    block_ids = sorted(set(block_ids))
    if not block_ids:
        return []
    kv = sim.scheduler.kv_cache_manager
    owners = block_owners(sim)
    pool = getattr(kv, "block_pool", None)
    return [
        [b, owners.get(b), pool.ref_cnt[b] if pool else int(b in owners), int(pool is not None and pool.block_hash[b] is not None)]
        for b in block_ids
    ]


def finite(value):
    """The value with NaN and infinities replaced by None: JSON has no spelling for them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def metrics_view(sim: Simulation) -> dict:
    metrics = sim.metrics
    return {
        "report": finite(metrics.report()),
        "histograms": {"ttft_s": metrics.ttft.bins(), "itl_s": metrics.itl.bins(), "e2e_s": metrics.e2e.bins()},
    }
