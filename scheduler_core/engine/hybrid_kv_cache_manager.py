"""vLLM V1's `KVCacheManager` for a model with several KV cache groups (or one that is not full attention).

The scheduler drives it through the same `KVCache` interface as the single-group
`KVCacheManager`, which stays the engine's default and fast path: one full-attention group, where
most decode steps need no call at all. Here every running request goes through `allocate_slots`
every step, as in vLLM, because that is where a sliding-window group gives back the blocks that
left its window (so `req_to_room` stays empty: there is never room to skip the call).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ..utils import cdiv
from .block_pool import NULL_BLOCK_ID, BlockPool, BlockPoolGauges
from .kv_cache_coordinator import HybridKVCacheCoordinator, KVCacheBlocks
from .kv_cache_groups import KVCacheGroupSpec
from .kv_events import BlocksAllocated, BlocksFreed, BlocksLeftWindow, KVEvent, take_events
from .request import Request


class HybridKVCacheManager(BlockPoolGauges):
    """Block tables per KV cache group over one shared pool (vLLM's `KVCacheManager` with a
    `HybridKVCacheCoordinator`)."""

    def __init__(self, groups: Sequence[KVCacheGroupSpec], num_gpu_blocks: int, block_size: int, max_model_len: int,
                 enable_caching: bool, max_in_flight_tokens: int, unhashed_blocks_reused_first: bool = True,
                 usage_excludes_null_block: bool = True):
        self.block_size = block_size
        self.max_model_len = max_model_len
        self.enable_caching = enable_caching
        self.usage_excludes_null_block = usage_excludes_null_block
        self.block_pool = BlockPool(num_gpu_blocks, enable_caching, unhashed_blocks_reused_first)
        self.coordinator = HybridKVCacheCoordinator(groups, self.block_pool, block_size, max_model_len,
                                                    enable_caching, max_in_flight_tokens)
        # Never any room to skip allocate_slots (see the module's docstring).
        self.req_to_room: dict[str, int] = {}
        self.num_hit_blocks_total = 0
        self.kv_events: list[KVEvent] | None = None

    def __deepcopy__(self, memo: dict) -> "HybridKVCacheManager":
        clone = copy.copy(self)
        clone.block_pool = copy.deepcopy(self.block_pool, memo)
        clone.coordinator = copy.copy(self.coordinator)
        clone.coordinator.block_pool = clone.block_pool
        managers = []
        for manager in self.coordinator.managers:
            manager_clone = copy.copy(manager)
            manager_clone.block_pool = clone.block_pool
            manager_clone.req_to_blocks = {rid: table[:] for rid, table in manager.req_to_blocks.items()}
            manager_clone.num_cached_block = dict(manager.num_cached_block)
            managers.append(manager_clone)
        clone.coordinator.managers = tuple(managers)
        clone.req_to_room = {}
        clone.kv_events = copy.deepcopy(self.kv_events, memo)
        memo[id(self)] = clone
        return clone

    # -- its tables (the KVCache interface; the gauges are BlockPoolGauges) -------------------
    @property
    def req_to_blocks(self) -> dict[str, list[int]]:
        """request id -> every block it holds, group after group, without null slots (for views)."""
        tables: dict[str, list[int]] = {}
        for manager in self.coordinator.managers:
            for rid, table in manager.req_to_blocks.items():
                tables.setdefault(rid, []).extend(block_id for block_id in table if block_id)
        return tables

    def get_block_ids(self, request_id: str) -> list[int]:
        """The request's blocks, group after group, without null slots (its own tables only)."""
        return [block_id for table in self.coordinator.get_blocks(request_id) for block_id in table if block_id]

    def get_group_block_ids(self, request_id: str) -> tuple[list[int], ...]:
        """The request's table in each group, null slots (0) included."""
        return tuple(table[:] for table in self.coordinator.get_blocks(request_id))

    def num_blocks_holding(self, num_tokens: int, num_processed_tokens: int) -> int:
        """Blocks a request's tables hold over all groups, null slots not counted, once `num_tokens`
        have slots and the first `num_processed_tokens` are processed: each group's blocks up to the
        last token, less the leading ones its window gave back for those (`remove_skipped_blocks`,
        which allocate_slots runs on the processed tokens before it allocates)."""
        num_tokens = min(num_tokens, self.max_model_len)
        total = 0
        for manager in self.coordinator.managers:
            blocks = cdiv(num_tokens, manager.block_size)
            total += blocks - min(manager.get_num_skipped_tokens(num_processed_tokens) // manager.block_size, blocks)
        return total

    # -- events ------------------------------------------------------------------------------
    def enable_events(self) -> None:
        if self.kv_events is None:
            self.kv_events = self.block_pool.kv_events = []

    def take_events(self) -> tuple[KVEvent, ...]:
        return take_events(self.kv_events)

    # -- the scheduler's calls ---------------------------------------------------------------
    def get_computed_blocks(self, request: Request) -> tuple[KVCacheBlocks, int]:
        """The longest prefix cached in every group, and its tokens (the last token is always computed)."""
        if not self.enable_caching:
            return self.coordinator.empty_blocks(), 0
        block_hashes = request.update_block_hashes(self.block_size, request.num_tokens)
        return self.coordinator.find_longest_cache_hit(block_hashes, request.num_tokens - 1)

    def num_blocks_to_allocate(self, request_id: str, num_tokens: int, new_computed_blocks) -> int:
        """For the decision trace: the blocks `num_tokens` would take, given this hit."""
        hit = new_computed_blocks if isinstance(new_computed_blocks, KVCacheBlocks) else self.coordinator.empty_blocks()
        return self.coordinator.get_num_blocks_to_allocate(request_id, num_tokens, hit, len(hit) * self.block_size)

    def allocate_slots(self, request: Request, num_new_tokens: int, num_new_computed_tokens: int = 0,
                       new_computed_blocks: Sequence[int] | KVCacheBlocks = (), full_sequence_must_fit: bool = False,
                       num_lookahead_tokens: int = 0) -> list[int] | None:
        """vLLM's `allocate_slots` in its order: the whole-context admission gate (each window group
        counting at most what a request holds at once), then the blocks that left a window go back
        (even if this call then fails), then the chunk's blocks over all groups, or None."""
        coordinator, pool, request_id = self.coordinator, self.block_pool, request.request_id
        hit = new_computed_blocks if isinstance(new_computed_blocks, KVCacheBlocks) else coordinator.empty_blocks()
        num_local_computed_tokens = request.num_computed_tokens + num_new_computed_tokens
        total_computed_tokens = min(num_local_computed_tokens, self.max_model_len)
        if full_sequence_must_fit:
            full_num_tokens = min(request.num_tokens, self.max_model_len)
            if coordinator.get_num_blocks_to_allocate(request_id, full_num_tokens, hit, total_computed_tokens,
                                                      apply_admission_cap=True) > pool.num_free_blocks:
                return None
        num_tokens_need_slot = min(total_computed_tokens + num_new_tokens + num_lookahead_tokens, self.max_model_len)
        # Tokens still in flight (async scheduling) are not processed yet: their window has not moved.
        self._remove_skipped_blocks(request_id, max(0, total_computed_tokens - request.num_in_flight_tokens))
        if coordinator.get_num_blocks_to_allocate(request_id, num_tokens_need_slot, hit,
                                                  num_local_computed_tokens) > pool.num_free_blocks:
            return None
        touched = [] if hit.is_empty() else coordinator.allocate_new_computed_blocks(request_id, hit, num_local_computed_tokens)
        self.num_hit_blocks_total += len(touched)
        new_blocks = [block_id for group in coordinator.allocate_new_blocks(request_id, num_tokens_need_slot)
                      for block_id in group]
        if self.kv_events is not None and (new_blocks or touched):
            revived = tuple(block_id for block_id in touched if pool.ref_cnt[block_id] == 1)
            self.kv_events.append(BlocksAllocated(request_id, tuple(touched), tuple(new_blocks), revived))
        if self.enable_caching:
            coordinator.cache_blocks(request, min(total_computed_tokens + num_new_tokens, request.num_tokens))
        return new_blocks

    def _remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int) -> None:
        for group_id, blocks in self.coordinator.remove_skipped_blocks(request_id, processed_computed_tokens):
            if self.kv_events is not None:
                # Given back tail first from the window's first block down to the first null slot,
                # so the blocks given back end where the table's leading null slots end.
                table = self.coordinator.managers[group_id].req_to_blocks[request_id]
                window_start = next((i for i, block_id in enumerate(table) if block_id != NULL_BLOCK_ID), len(table))
                self.kv_events.append(BlocksLeftWindow(request_id, group_id, window_start - len(blocks),
                                                       *self._where_freed(blocks)))

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        self.coordinator.cache_blocks(request, num_tokens)

    def free(self, request: Request) -> None:
        blocks = self.coordinator.free(request.request_id)
        if self.kv_events is not None:
            self.kv_events.append(BlocksFreed(request.request_id, *self._where_freed(blocks)))

    def _where_freed(self, blocks: list[int]) -> tuple[tuple[int, ...], ...]:
        """(to the queue's head, to its tail with a cached prefix, to its tail without one, still
        held by another request), after freeing."""
        pool = self.block_pool
        head, tail_cached, tail, shared = [], [], [], []
        for block_id in blocks:
            if pool.ref_cnt[block_id] > 0:
                shared.append(block_id)
            elif pool.block_hash[block_id] is None and pool.unhashed_blocks_reused_first:
                head.append(block_id)
            else:
                (tail if pool.block_hash[block_id] is None else tail_cached).append(block_id)
        return tuple(head), tuple(tail_cached), tuple(tail), tuple(shared)

    def counters(self) -> tuple[int, int, int, int]:
        pool = self.block_pool
        return pool.num_allocated_total, pool.num_freed_total, pool.num_evicted_total, self.num_hit_blocks_total
