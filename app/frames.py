"""What the browser receives: versioned snapshot and delta frames built from the simulation.

A snapshot carries everything a panel draws; a delta carries one or more steps' changes (the
last step's record, the requests and blocks they touched, new chart points) and the sequence
number it applies on top of (`base_seq`), which the client checks to notice a gap (then it asks
for a snapshot). Deltas a viewer has not been sent yet merge into one, so a page that draws
slower than the simulation steps gets fewer, not bigger, frames. Both go out as binary frames
(app/wire.py): the block pool and the block tables as typed arrays, the rest as JSON.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.kv_cache import KVCacheView
from scheduler_core.engine.kv_cache_groups import KVCacheGroupSpec
from scheduler_core.engine.kv_events import CACHE_EVENTS, KVEvent
from scheduler_core.engine.request import Request
from scheduler_core.engine.step_record import StepRecord
from scheduler_core.sim.simulation import Simulation

from . import wire
from .kv_group_frames import NO_GROUP, GroupTables, block_group_array, block_groups, group_tables, groups_header

PROTOCOL_VERSION = 2
# Queues are long under overload; frames carry the head of each and the count.
MAX_QUEUE_IDS = 200
MAX_RECENT_FINISHED = 100
# A hybrid engine's KV cache groups, or None for the one full-attention group.
KVGroups = tuple[KVCacheGroupSpec, ...] | None


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
        "aborted": record.aborted,
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
        "front_end_s": record.front_end_s,
        "scheduled_spec_decode_tokens": record.scheduled_spec_decode_tokens,
        "num_accepted_tokens": record.num_accepted_tokens,
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
    # The latest finished, without listing all of them (the dict keeps finishing order).
    finished = list(islice(reversed(sim.finished_requests), MAX_RECENT_FINISHED))[::-1]
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


def block_owners(kv: KVCacheView) -> dict[int, str]:
    """Physical block -> the first request whose table holds it (shared blocks have several)."""
    owners: dict[int, str] = {}
    for rid, table in kv.block_tables.items():
        for block_id in table:
            owners.setdefault(block_id, rid)
    return owners


def blocks_view(kv: KVCacheView, owners: dict[int, str] | None = None) -> dict:
    """The whole pool: per block its owner (index into `owner_ids`, -1 for none), ref count and
    whether it holds a cached prefix."""
    owners = block_owners(kv) if owners is None else owners
    owner_ids = sorted(set(owners.values()))
    index = {rid: i for i, rid in enumerate(owner_ids)}
    owner = [-1] * kv.num_blocks
    for block_id, rid in owners.items():
        owner[block_id] = index[rid]
    return {"num_blocks": kv.num_blocks, "owner_ids": owner_ids, "owner": owner, "ref": kv.ref_counts(),
            "cached": kv.cached_flags()}


def changed_blocks_view(kv: KVCacheView, block_ids: Iterable[int], kv_groups: KVGroups = None) -> dict[int, tuple]:
    """Block id -> (owner request id or None, ref count, cached) for each block that changed; for a
    hybrid engine a fourth field, the group holding it (kv_group_frames.py)."""
    block_ids = set(block_ids)
    if not block_ids:
        return {}
    # The first table holding each block, as block_owners() finds it, for these blocks only: a
    # set intersection per table instead of a Python loop over every block of every table.
    owners: dict[int, str] = {}
    for rid, table in kv.block_tables.items():
        for block_id in block_ids.intersection(table):
            owners.setdefault(block_id, rid)
    if kv_groups is not None:
        groups = block_groups(kv, owners)
        return {b: (owners.get(b), *state, groups.get(b, NO_GROUP)) for b, state in kv.block_states(block_ids).items()}
    return {b: (owners.get(b), *state) for b, state in kv.block_states(block_ids).items()}


def tables_view(kv: KVCacheView, request_ids: Iterable[str], kv_groups: KVGroups = None) -> dict[str, list[int] | GroupTables]:
    """request id -> its block table now; for a hybrid engine, its table per group."""
    if kv_groups is not None:
        return group_tables(kv, request_ids)
    return {rid: list(kv.block_table(rid)) for rid in request_ids}


class KVChanges:
    """The blocks and block tables that changed since viewers were last sent them, gathered from
    the step records' KV events; a delta sends their state after its last step."""

    def __init__(self) -> None:
        self.block_ids: set[int] = set()
        self.request_ids: set[str] = set()

    def add(self, events: Iterable[KVEvent]) -> None:
        block_ids, request_ids = self.block_ids, self.request_ids
        for event in events:
            # Most events are one block entering or leaving the prefix cache: test for those first.
            if isinstance(event, CACHE_EVENTS):
                block_ids.add(event.block_id)
            else:
                block_ids.update(event.block_ids)
                request_ids.add(event.request_id)

    def take(self) -> tuple[set[int], set[str]]:
        """The changes so far; afterwards there are none."""
        changes = self.block_ids, self.request_ids
        self.block_ids, self.request_ids = set(), set()
        return changes


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


def tables_arrays(tables: Mapping[str, Sequence[int]], grouped: bool = False) -> tuple[list[str], dict[str, array]]:
    """Block tables as ids and two flat arrays: each table's length, then all their blocks. Grouped
    (a hybrid engine's tables, one per group): a length per group for each id, group after group."""
    lengths, blocks = array("i"), array("i")
    for table in tables.values():
        for group_table in (table if grouped else (table,)):
            lengths.append(len(group_table))
            blocks.extend(group_table)
    return list(tables), {"table_lengths": lengths, "table_blocks": blocks}


def snapshot_kv(kv: KVCacheView, kv_groups: KVGroups = None) -> tuple[dict, dict[str, array]]:
    """The block tables and the whole pool, as a snapshot's header fields and arrays: per block its
    owner (index into `owner_ids`, -1 for none), ref count and whether it holds a cached prefix;
    for a hybrid engine the groups, each table per group and each block's group too."""
    tables = kv.block_tables if kv_groups is None else group_tables(kv, kv.block_tables)
    table_ids, table_arrays = tables_arrays(tables, grouped=kv_groups is not None)
    owners = block_owners(kv)
    view = blocks_view(kv, owners)
    header = {"table_ids": table_ids, "num_blocks": view["num_blocks"], "owner_ids": view["owner_ids"]}
    arrays = {**table_arrays, "block_owner": array("i", view["owner"]), "block_ref": array("i", view["ref"]),
              "block_cached": array("B", view["cached"])}
    if kv_groups is not None:
        header["kv_groups"] = groups_header(kv_groups)
        arrays["block_group"] = block_group_array(kv, owners)
    return header, arrays


def kv_groups_of(engine: EngineConfig) -> KVGroups:
    """The groups the frames name: None for the one full-attention group (today's payload)."""
    return engine.kv_cache_group_specs if engine.is_hybrid else None


class Delta:
    """The changes of one or more consecutive steps, ready to merge with later ones or to encode.

    `requests` hold whole views (their status changed), `progress` only (computed, output) for the
    others that ran; a later whole view replaces earlier progress, later progress updates an
    earlier view. Tables, blocks and queues: the latest wins; points add up.
    """

    def __init__(self, envelope: dict, from_step: int, num_steps: int, last_record: dict | None, requests: dict,
                 progress: dict, tables: dict, blocks: dict, queues: dict, points: list, metrics: dict | None,
                 kv_groups: KVGroups = None):
        self.envelope = envelope  # v, type, seq, step, clock_s, done
        self.base_seq = envelope["seq"] - 1
        self.from_step, self.num_steps = from_step, num_steps
        self.last_record, self.requests, self.progress = last_record, requests, progress
        self.tables, self.blocks, self.queues, self.points, self.metrics = tables, blocks, queues, points, metrics
        self.kv_groups = kv_groups  # a hybrid engine's: tables per group, blocks with their group
        self._encoded: bytes | None = None

    @property
    def seq(self) -> int:
        return self.envelope["seq"]

    def merged(self, later: "Delta") -> "Delta":
        """This delta followed by `later`, as one (neither is changed: both may be shared)."""
        requests, progress = dict(self.requests), dict(self.progress)
        for rid, view in later.requests.items():
            requests[rid] = view
            progress.pop(rid, None)
        for rid, counts in later.progress.items():
            if rid in requests:
                requests[rid] = {**requests[rid], "computed": counts[0], "output": counts[1]}
            else:
                progress[rid] = counts
        merged = Delta(later.envelope, self.from_step, self.num_steps + later.num_steps,
                       later.last_record or self.last_record, requests, progress, {**self.tables, **later.tables},
                       {**self.blocks, **later.blocks}, later.queues, self.points + later.points,
                       later.metrics or self.metrics, later.kv_groups)
        merged.base_seq = self.base_seq
        return merged

    def encode(self) -> bytes:
        if self._encoded is None:
            table_ids, table_arrays = tables_arrays(self.tables, grouped=self.kv_groups is not None)
            owner_ids = sorted({state[0] for state in self.blocks.values() if state[0] is not None})
            index = {rid: i for i, rid in enumerate(owner_ids)}
            block_ids = sorted(self.blocks)
            header = {
                **self.envelope, "base_seq": self.base_seq, "from_step": self.from_step, "last_record": self.last_record,
                "requests": self.requests, "progress_ids": list(self.progress), "table_ids": table_ids,
                "owner_ids": owner_ids, "queues": self.queues, "points": self.points,
            }
            if self.metrics is not None:
                header["metrics"] = self.metrics
            arrays = {
                "progress": array("i", [n for counts in self.progress.values() for n in counts]),
                **table_arrays,
                "block_ids": array("i", block_ids),
                "block_owner": array("i", [index.get(self.blocks[b][0], -1) for b in block_ids]),
                "block_ref": array("i", [self.blocks[b][1] for b in block_ids]),
                "block_cached": array("B", [self.blocks[b][2] for b in block_ids]),
            }
            if self.kv_groups is not None:
                arrays["block_group"] = array("B", [self.blocks[b][3] for b in block_ids])
            self._encoded = wire.encode(header, arrays)
        return self._encoded
