"""What a KV cache manager offers the scheduler, and the read-only view everyone above it reads.

Two allocators satisfy `KVCache`: the paged `KVCacheManager` (block tables over a shared block
pool, with prefix caching) and the contiguous baseline (`ContiguousKVCacheManager`, one region of
`max_model_len` per request), which has no per-block state: its `block_pool` is None. The
scheduler drives either one through this interface; the app, the lessons and the fleet view read
a `KVCacheView` (from `Simulation.kv_view()`) and the step records, never a manager's insides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from .block_pool import BlockPool
from .kv_events import KVEvent
from .request import Request


@runtime_checkable
class KVCache(Protocol):
    """The KV cache manager as the scheduler sees it (vLLM's `KVCacheManager` surface)."""

    block_size: int
    max_model_len: int
    enable_caching: bool
    # Ref counts, prefix hashes and the free queue; None for an allocator without per-block state.
    block_pool: BlockPool | None
    # request id -> its block table: logical block i -> physical block id (only the manager writes).
    req_to_blocks: dict[str, list[int]]
    # request id -> how many tokens (computed, new and lookahead) it may reach with nothing for
    # `allocate_slots` to do: it would return [] and change nothing (only the manager writes).
    req_to_room: dict[str, int]
    # The KV event queue (see kv_events.py); None while events are off.
    kv_events: list[KVEvent] | None

    @property
    def num_free_blocks(self) -> int: ...

    @property
    def num_total_blocks(self) -> int: ...

    @property
    def num_used_blocks(self) -> int: ...

    @property
    def usage(self) -> float: ...

    @property
    def num_shared_slots(self) -> int: ...

    def get_block_ids(self, request_id: str) -> list[int]: ...

    def get_group_block_ids(self, request_id: str) -> tuple[list[int], ...]: ...

    def num_blocks_holding(self, num_tokens: int, num_processed_tokens: int) -> int: ...

    def get_computed_blocks(self, request: Request) -> tuple[list[int], int]: ...

    def num_blocks_to_allocate(self, request_id: str, num_tokens: int, new_computed_blocks: Sequence[int]) -> int: ...

    def allocate_slots(self, request: Request, num_new_tokens: int, num_new_computed_tokens: int = 0,
                       new_computed_blocks: Sequence[int] = (), full_sequence_must_fit: bool = False,
                       num_lookahead_tokens: int = 0) -> list[int] | None: ...

    def cache_blocks(self, request: Request, num_tokens: int) -> None: ...

    def free(self, request: Request) -> None: ...

    def counters(self) -> tuple[int, int, int, int]: ...

    def enable_events(self) -> None: ...

    def take_events(self) -> tuple[KVEvent, ...]: ...


class KVCacheView:
    """A read-only look at a KV cache as it is now: the pool's size and usage, the block tables,
    and per block its ref count and whether it holds a cached prefix. An allocator without
    per-block state reports a reserved block as held once and nothing as cached."""

    __slots__ = ("_kv",)

    def __init__(self, kv: KVCache):
        self._kv = kv

    @property
    def has_block_state(self) -> bool:
        """False for the contiguous allocator: its blocks are reserved or free by whole regions."""
        return self._kv.block_pool is not None

    @property
    def num_blocks(self) -> int:
        return self._kv.num_total_blocks

    @property
    def num_free_blocks(self) -> int:
        return self._kv.num_free_blocks

    @property
    def usage(self) -> float:
        return self._kv.usage

    @property
    def block_tables(self) -> Mapping[str, Sequence[int]]:
        """request id -> its block table, for reading only."""
        return MappingProxyType(self._kv.req_to_blocks)

    def block_table(self, request_id: str) -> tuple[int, ...]:
        """Every block the request holds (with several KV cache groups: group after group, no null slots)."""
        return tuple(self._kv.get_block_ids(request_id))

    def group_block_tables(self, request_id: str) -> tuple[tuple[int, ...], ...]:
        """The request's table in each KV cache group, in group order; 0 (the null block) where a
        sliding-window or chunked-local group gave a block back. One group: its table alone."""
        return tuple(tuple(table) for table in self._kv.get_group_block_ids(request_id))

    def num_blocks_holding(self, num_tokens: int, num_processed_tokens: int) -> int:
        """Blocks the tables of a request hold once `num_tokens` have slots, the first
        `num_processed_tokens` of them processed (a window gives back what those leave behind)."""
        return self._kv.num_blocks_holding(num_tokens, num_processed_tokens)

    def ref_counts(self) -> list[int]:
        """Per block, how many tables hold it (a copy)."""
        pool = self._kv.block_pool
        if pool is not None:
            return pool.ref_cnt[:]
        ref = [0] * self.num_blocks
        for table in self._kv.req_to_blocks.values():
            for block_id in table:
                ref[block_id] = 1
        return ref

    def cached_flags(self) -> list[int]:
        """Per block, 1 if it holds a cached prefix (in use or evictable), else 0."""
        pool = self._kv.block_pool
        if pool is None:
            return [0] * self.num_blocks
        return [0 if block_hash is None else 1 for block_hash in pool.block_hash]

    def block_states(self, block_ids: Iterable[int]) -> dict[int, tuple[int, int]]:
        """Block id -> (ref count, cached) for just these blocks."""
        pool = self._kv.block_pool
        if pool is None:
            wanted, held = set(block_ids), set()
            for table in self._kv.req_to_blocks.values():
                held.update(wanted.intersection(table))
            return {block_id: (int(block_id in held), 0) for block_id in wanted}
        ref_cnt, block_hash = pool.ref_cnt, pool.block_hash
        return {block_id: (ref_cnt[block_id], int(block_hash[block_id] is not None)) for block_id in block_ids}

    def num_shared_blocks(self) -> int:
        """Blocks that more than one table holds (prefix sharing); 0 at once when none is shared."""
        pool = self._kv.block_pool
        if pool is None or not pool.num_shared_refs:
            return 0
        return sum(1 for ref in pool.ref_cnt if ref > 1)
