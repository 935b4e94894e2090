"""What happened to the KV cache, as typed events on one queue that its owner drains.

The idea is vLLM's `kv_event_queue` (BlockStored / BlockRemoved, which routers read to track
prefix caches): the block pool and the KV cache manager append events as they act, and whoever
owns the engine (the simulation, once per step) drains them into the step record. The dashboard's
block diff and the decision trace both read that stream; nobody sets hooks on the allocator.

Off unless someone asks (`enable_events()`): then every place that would emit one is a single
`is not None` test, so headless runs and replay keep their speed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BlockStored:
    """A full block entered the prefix cache: a later request with this prefix can hit it. Where it
    came from (the request, its logical block index, the KV cache group) lets vLLM's own event be
    rebuilt from it, token ids and parent hash included (exports/vllm_kv_events.py)."""

    block_id: int
    block_hash: int
    request_id: str = ""
    block_index: int = 0
    group_id: int = 0


@dataclass(frozen=True, slots=True)
class BlockRemoved:
    """A cached block was evicted (taken from the free queue for new tokens): its prefix is gone."""

    block_id: int
    block_hash: int


@dataclass(frozen=True, slots=True)
class BlocksAllocated:
    """A request's block table grew by its prefix-cache hits, then new blocks from the free queue's
    head, in that order (as vLLM's `NewRequestData.block_ids` and `CachedRequestData.new_block_ids`
    tell the workers which blocks to write)."""

    request_id: str
    hit_blocks: tuple[int, ...]
    new_blocks: tuple[int, ...]
    # The hits that sat free in the queue and came off it; the other hits were in use: now shared.
    revived: tuple[int, ...]

    @property
    def block_ids(self) -> tuple[int, ...]:
        return self.hit_blocks + self.new_blocks


@dataclass(frozen=True, slots=True)
class BlocksFreed:
    """A request released its whole table (finished or preempted), tail first, and where each
    block went: to the free queue's head (no cached prefix: reused first), to its tail keeping a
    cached prefix (LRU), to its tail without one (versions that do not reuse those first), or
    nowhere, because another request still holds it."""

    request_id: str
    to_head: tuple[int, ...]
    to_tail_cached: tuple[int, ...]
    to_tail: tuple[int, ...]
    still_shared: tuple[int, ...]

    @property
    def block_ids(self) -> tuple[int, ...]:
        return self.to_head + self.to_tail_cached + self.to_tail + self.still_shared


@dataclass(frozen=True, slots=True)
class BlocksLeftWindow:
    """A running request gave back blocks that fell out of a sliding window or a local-attention
    chunk (vLLM's `remove_skipped_blocks`), tail first; its table in group `group_id` keeps the
    null block in their place, which were the logical blocks `first_index` on, one per block given
    back (they sit side by side: the table's null slots are always its head). Where each went, as
    in `BlocksFreed`."""

    request_id: str
    group_id: int
    first_index: int
    to_head: tuple[int, ...]
    to_tail_cached: tuple[int, ...]
    to_tail: tuple[int, ...]
    still_shared: tuple[int, ...]

    @property
    def block_ids(self) -> tuple[int, ...]:
        return self.to_head + self.to_tail_cached + self.to_tail + self.still_shared


@dataclass(frozen=True, slots=True)
class RegionReserved:
    """The contiguous allocator reserved a request's whole region of `max_model_len` slots."""

    request_id: str
    block_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RegionReleased:
    """The contiguous allocator took a request's region back."""

    request_id: str
    block_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HitBlockDropped:
    """A prefix-cache lookup matched this cached block last and gave it up: an EAGLE/MTP drafter
    recomputes it for its hidden states (`rule`: which rule dropped it, see eagle_hit_rule.py).
    The block stays cached; the request computes its tokens again in a block of its own."""

    request_id: str
    block_id: int
    rule: str

    @property
    def block_ids(self) -> tuple[int, ...]:
        return (self.block_id,)


KVEvent = (HitBlockDropped | BlockStored | BlockRemoved | BlocksAllocated | BlocksFreed | BlocksLeftWindow
           | RegionReserved | RegionReleased)
# Events that change one block's cached state only (the others change a request's block table).
CACHE_EVENTS = (BlockStored, BlockRemoved)


def take_events(queue: list[KVEvent] | None) -> tuple[KVEvent, ...]:
    """Everything on `queue` so far, oldest first, leaving it empty (the queue object stays, since
    the pool and its manager share it); `()` when events are off."""
    if not queue:
        return ()
    events = tuple(queue)
    queue.clear()
    return events
