"""PagedAttention's allocator: per-request block tables over a shared block pool, with prefix caching.

A request holds only the blocks its tokens need, taken one block at a time as it grows, so the
only waste is the unfilled tail of its last block. Full blocks are hashed by their prefix and
shared between requests with the same prefix.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ..utils import cdiv
from .block_pool import BlockPool, BlockPoolGauges
from .eagle_hit_rule import NO_EAGLE, EagleHitRule
from .kv_events import BlocksAllocated, BlocksFreed, HitBlockDropped, KVEvent, take_events
from .request import Request


class KVCacheManager(BlockPoolGauges):
    """vLLM V1's `KVCacheManager` for one full-attention KV cache group."""

    def __init__(
        self,
        num_gpu_blocks: int,
        block_size: int,
        max_model_len: int,
        enable_caching: bool,
        unhashed_blocks_reused_first: bool = True,
        usage_excludes_null_block: bool = True,
        eagle_rule: EagleHitRule = NO_EAGLE,
    ):
        self.block_size = block_size
        # An EAGLE/MTP drafter's cut of every prefix-cache hit (eagle_hit_rule.py).
        self.eagle_rule = eagle_rule
        self.num_hash_lookahead_tokens = eagle_rule.num_hash_lookahead_tokens
        self.max_model_len = max_model_len
        self.enable_caching = enable_caching
        self.usage_excludes_null_block = usage_excludes_null_block
        self.block_pool = BlockPool(num_gpu_blocks, enable_caching, unhashed_blocks_reused_first)
        # request id -> its block table: logical block i -> physical block id.
        self.req_to_blocks: dict[str, list[int]] = {}
        # request id -> how many leading blocks of its table are already in the prefix cache.
        self.num_cached_block: dict[str, int] = {}
        # request id -> how many tokens (computed, new and lookahead) its table can reach with
        # nothing for `allocate_slots` to do: no block to take and, with prefix caching, none filled
        # to cache (it may lag behind that, never run ahead). Most decode steps stay within it, so
        # the scheduler compares before calling.
        self.req_to_room: dict[str, int] = {}
        # Prefix-cache hits handed out, in blocks (a step record reports the change).
        self.num_hit_blocks_total = 0
        # The KV event queue, shared with the block pool (None: off; see `enable_events`).
        self.kv_events: list[KVEvent] | None = None

    def __deepcopy__(self, memo: dict) -> "KVCacheManager":
        clone = copy.copy(self)
        clone.block_pool = copy.deepcopy(self.block_pool, memo)
        clone.req_to_blocks = {rid: table[:] for rid, table in self.req_to_blocks.items()}
        clone.num_cached_block = dict(self.num_cached_block)
        clone.req_to_room = dict(self.req_to_room)
        clone.kv_events = copy.deepcopy(self.kv_events, memo)  # the pool's clone shares it (memo)
        memo[id(self)] = clone
        return clone

    def get_block_ids(self, request_id: str) -> list[int]:
        return self.req_to_blocks.get(request_id, [])

    def get_group_block_ids(self, request_id: str) -> tuple[list[int], ...]:
        """The request's table per KV cache group: here the one group's."""
        return (self.req_to_blocks.get(request_id, [])[:],)

    def num_blocks_holding(self, num_tokens: int, num_processed_tokens: int) -> int:
        """Blocks in the table of a request whose KV holds `num_tokens` (a block at a time): full
        attention keeps every block, however many tokens are processed."""
        return cdiv(min(num_tokens, self.max_model_len), self.block_size)

    def enable_events(self) -> None:
        """From now on, append a typed event to the KV event queue for every table change, cached
        block and eviction (for the dashboard's block diff and the decision trace)."""
        if self.kv_events is None:
            self.kv_events = self.block_pool.kv_events = []

    def take_events(self) -> tuple[KVEvent, ...]:
        """The events since the last call, oldest first (`()` while events are off)."""
        return take_events(self.kv_events)

    def get_computed_blocks(self, request: Request) -> tuple[list[int], int]:
        """The longest run of cached full blocks that prefixes the request, and its token count.

        A full hit still leaves the last token to compute: the model needs its logits to sample.
        With an EAGLE/MTP drafter under the drop rule the last matched block is recomputed too,
        for the hidden states the drafter reads (a `HitBlockDropped` event says so).
        """
        if not self.enable_caching:
            return [], 0
        max_cache_hit_length = request.num_tokens - 1
        block_hashes = request.update_block_hashes(self.block_size, request.num_tokens, self.num_hash_lookahead_tokens)
        hits = []
        for block_hash in block_hashes[: max_cache_hit_length // self.block_size]:
            block_id = self.block_pool.get_cached_block(block_hash)
            if block_id is None:
                break
            hits.append(block_id)
        if hits and self.eagle_rule.drops_last_block:
            dropped = hits.pop()
            if self.kv_events is not None:
                self.kv_events.append(HitBlockDropped(request.request_id, dropped, self.eagle_rule.drop_rule))
        return hits, len(hits) * self.block_size

    def num_blocks_to_allocate(self, request_id: str, num_tokens: int, new_computed_blocks: Sequence[int]) -> int:
        """New blocks needed to hold `num_tokens`, counting hits that sit evictable in the free queue:
        touching them takes them out of the free queue just as an allocation would."""
        num_existing = len(self.req_to_blocks.get(request_id, ()))
        num_new = max(cdiv(num_tokens, self.block_size) - len(new_computed_blocks) - num_existing, 0)
        if not new_computed_blocks:  # every running request's allocation: no generator to build
            return num_new
        ref_cnt = self.block_pool.ref_cnt
        return num_new + sum(1 for block_id in new_computed_blocks if ref_cnt[block_id] == 0)

    def allocate_slots(
        self,
        request: Request,
        num_new_tokens: int,
        num_new_computed_tokens: int = 0,
        new_computed_blocks: Sequence[int] = (),
        full_sequence_must_fit: bool = False,
        num_lookahead_tokens: int = 0,
    ) -> list[int] | None:
        """Give the request slots for `num_new_tokens` more tokens; None if the pool is too short.

        `full_sequence_must_fit` is vLLM 0.33's admission gate: the free blocks must cover the
        request's whole current context, not just this chunk. `num_lookahead_tokens` are slots past
        the new tokens that a speculative drafter writes KV into.
        """
        request_id = request.request_id
        req_blocks = self.req_to_blocks.get(request_id)
        if (req_blocks is not None and not new_computed_blocks and not num_new_computed_tokens and not full_sequence_must_fit
                and request.num_computed_tokens + num_new_tokens + num_lookahead_tokens <= len(req_blocks) * self.block_size):
            # The table's last block still has room (most decode steps): nothing to take from the pool,
            # and a block to cache only when these tokens fill one.
            if self.enable_caching:
                num_tokens = request.num_computed_tokens + num_new_tokens
                if num_tokens >= (self.num_cached_block[request_id] + 1) * self.block_size:
                    self.cache_blocks(request, min(num_tokens, request.num_tokens))
            return []
        num_computed_tokens = min(request.num_computed_tokens + num_new_computed_tokens, self.max_model_len)
        free = self.block_pool.num_free_blocks
        if full_sequence_must_fit:
            full_num_tokens = min(request.num_tokens, self.max_model_len)
            if self.num_blocks_to_allocate(request_id, full_num_tokens, new_computed_blocks) > free:
                return None
        num_tokens_need_slot = min(num_computed_tokens + num_new_tokens + num_lookahead_tokens, self.max_model_len)
        if self.num_blocks_to_allocate(request_id, num_tokens_need_slot, new_computed_blocks) > free:
            return None

        if req_blocks is None:
            req_blocks = self.req_to_blocks[request_id] = []
            self.num_cached_block[request_id] = 0
        if new_computed_blocks:
            self.block_pool.touch(new_computed_blocks)
            req_blocks.extend(new_computed_blocks)
            self.num_cached_block[request_id] = len(req_blocks)
            self.num_hit_blocks_total += len(new_computed_blocks)
        num_new_blocks = cdiv(num_tokens_need_slot, self.block_size) - len(req_blocks)
        new_blocks = self.block_pool.get_new_blocks(num_new_blocks) if num_new_blocks > 0 else []
        req_blocks.extend(new_blocks)
        if self.kv_events is not None and (new_blocks or new_computed_blocks):
            # A hit whose ref count is now 1 came off the free queue; above 1 it is newly shared.
            ref_cnt = self.block_pool.ref_cnt
            revived = tuple(block_id for block_id in new_computed_blocks if ref_cnt[block_id] == 1)
            self.kv_events.append(BlocksAllocated(request_id, tuple(new_computed_blocks), tuple(new_blocks), revived))
        if self.enable_caching:
            # Blocks become hittable as soon as they are scheduled, before the model runs: the
            # step that computes them finishes before any later step could read them.
            self.cache_blocks(request, min(num_computed_tokens + num_new_tokens, request.num_tokens))
        self._update_room(request_id)
        return new_blocks

    def _update_room(self, request_id: str) -> None:
        """`req_to_room` once allocate_slots changed the table: up to its slots and, with prefix caching,
        one token short of filling its first block not cached yet. Blocks cached later (by the fast
        path above, or after an async update) leave it lagging, which only costs a call."""
        room = len(self.req_to_blocks[request_id]) * self.block_size
        if self.enable_caching:
            room = min(room, (self.num_cached_block[request_id] + 1) * self.block_size - 1)
        self.req_to_room[request_id] = room

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        request_id = request.request_id
        num_cached = self.num_cached_block.get(request_id, 0)
        num_full = num_tokens // self.block_size
        if num_cached >= num_full:
            return
        lookahead = self.num_hash_lookahead_tokens
        block_hashes = request.update_block_hashes(self.block_size, num_tokens, lookahead)
        if lookahead:  # a block whose next tokens are not known yet has no hash, and waits
            num_full = min(num_full, len(block_hashes))
            if num_cached >= num_full:
                return
        self.block_pool.cache_full_blocks(self.req_to_blocks[request_id][num_cached:num_full], block_hashes[num_cached:num_full],
                                          request_id, range(num_cached, num_full))
        self.num_cached_block[request_id] = num_full

    def free(self, request: Request) -> None:
        """Release a request's blocks, tail first, so a chain's tail is evicted before its head."""
        blocks = self.req_to_blocks.pop(request.request_id, [])
        self.num_cached_block.pop(request.request_id, None)
        self.req_to_room.pop(request.request_id, None)
        self.block_pool.free_blocks(reversed(blocks))
        if self.kv_events is not None:
            self.kv_events.append(self._freed(request.request_id, blocks[::-1]))

    def _freed(self, request_id: str, blocks: list[int]) -> BlocksFreed:
        """Where each block of a table just released (tail first) went (only while events are on)."""
        pool = self.block_pool
        head, cached, tail, shared = [], [], [], []
        for block_id in blocks:
            if pool.ref_cnt[block_id] > 0:
                shared.append(block_id)
            elif pool.block_hash[block_id] is not None:
                cached.append(block_id)
            elif pool.unhashed_blocks_reused_first:
                head.append(block_id)
            else:
                tail.append(block_id)
        return BlocksFreed(request_id, tuple(head), tuple(cached), tuple(tail), tuple(shared))

    def counters(self) -> tuple[int, int, int, int]:
        """Running totals of blocks allocated, freed, evicted from the prefix cache, and hit."""
        pool = self.block_pool
        return pool.num_allocated_total, pool.num_freed_total, pool.num_evicted_total, self.num_hit_blocks_total


class SwapSpace:
    """CPU memory that holds the KV blocks of requests preempted by swapping (vLLM V0's swap_space)."""

    def __init__(self, num_cpu_blocks: int):
        self.num_cpu_blocks = num_cpu_blocks
        self.num_free_blocks = num_cpu_blocks
        self.swapped_blocks: dict[str, int] = {}

    def can_swap_out(self, num_blocks: int) -> bool:
        return num_blocks <= self.num_free_blocks

    def swap_out(self, request_id: str, num_blocks: int) -> None:
        self.swapped_blocks[request_id] = num_blocks
        self.num_free_blocks -= num_blocks

    def swap_in(self, request_id: str) -> int:
        num_blocks = self.swapped_blocks.pop(request_id)
        self.num_free_blocks += num_blocks
        return num_blocks

    def free(self, request_id: str) -> None:
        """A swapped request finished from outside (aborted): its CPU copy is dropped."""
        self.num_free_blocks += self.swapped_blocks.pop(request_id)
