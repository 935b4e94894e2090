"""The paged KV cache's physical blocks: ref counts, prefix-cache hashes and the LRU free queue.

Block state lives in flat lists indexed by block id rather than in one object per block: every
operation stays O(1) per block touched, and a snapshot of the pool is a handful of list copies.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from itertools import repeat

from .kv_events import BlockRemoved, BlockStored, KVEvent

NULL_BLOCK_ID = 0


class BlockHashToBlockMap(dict):
    """Prefix hash -> the cached blocks holding that prefix (vLLM's `BlockHashToBlockMap`).

    Almost always one block, stored bare: a list per hash would cost an allocation for every
    block cached and another for every eviction, the prefix cache's hottest path. Duplicates
    happen when two requests compute the same block before either is cached; then the value is
    a list of block ids, oldest first, and the first one serves hits. `in` and `len` are the
    dict's own (over hashes).
    """

    def get_one_block(self, block_hash: int) -> int | None:
        blocks = self.get(block_hash)
        return blocks[0] if type(blocks) is list else blocks

    def insert(self, block_hash: int, block_id: int) -> None:
        blocks = self.get(block_hash)
        if blocks is None:
            self[block_hash] = block_id
        elif type(blocks) is list:
            blocks.append(block_id)
        else:
            self[block_hash] = [blocks, block_id]

    def pop_block(self, block_hash: int, block_id: int) -> None:
        """Forget one block under `block_hash` (it holds that hash now)."""
        blocks = self.pop(block_hash)  # one lookup in the common case (order of hashes is no concern)
        if type(blocks) is list:
            blocks.remove(block_id)
            self[block_hash] = blocks[0] if len(blocks) == 1 else blocks

    def blocks(self, block_hash: int) -> list[int]:
        """The blocks under `block_hash`, oldest first (empty if none)."""
        blocks = self.get(block_hash)
        if blocks is None:
            return []
        return blocks[:] if type(blocks) is list else [blocks]

    def block_ids(self) -> list[int]:
        """Every cached block, hash by hash."""
        return [block_id for block_hash in self for block_id in self.blocks(block_hash)]

    def as_lists(self) -> dict[int, list[int]]:
        """hash -> its blocks as a list, for snapshots and tests."""
        return {block_hash: self.blocks(block_hash) for block_hash in self}

    def copy(self) -> "BlockHashToBlockMap":
        clone = BlockHashToBlockMap(self)
        for block_hash, blocks in self.items():
            if type(blocks) is list:
                clone[block_hash] = blocks[:]
        return clone


class BlockPool:
    """`num_blocks` KV blocks, of which block 0 is vLLM's reserved null block (never handed out).

    Free blocks wait in a doubly linked queue: allocation takes from the head, frees go to the
    tail, so the least recently used cached block is evicted first. With prefix caching, a freed
    full block keeps its hash while it waits and can be hit again until it is reallocated.
    """

    def __init__(self, num_blocks: int, enable_caching: bool, unhashed_blocks_reused_first: bool = True):
        self.num_blocks = num_blocks
        self.enable_caching = enable_caching
        self.unhashed_blocks_reused_first = unhashed_blocks_reused_first
        self.ref_cnt = [0] * num_blocks
        # Hash of the full block's prefix while it is in the prefix cache, else None.
        self.block_hash: list[int | None] = [None] * num_blocks
        # hash -> the block(s) holding that prefix (see BlockHashToBlockMap).
        self.cached_block_hash_to_block = BlockHashToBlockMap()
        # The free queue's links; `head` and `tail` are sentinel slots past the real blocks.
        self.head = num_blocks
        self.tail = num_blocks + 1
        self.next_free = list(range(1, num_blocks + 1)) + [0, -1]
        self.prev_free = list(range(-1, num_blocks - 1)) + [-1, num_blocks - 1]
        self.next_free[num_blocks - 1] = self.tail
        self.prev_free[0] = self.head
        self.num_free_blocks = num_blocks
        # Take the null block out of the queue: an empty pool reports num_blocks - 1 free.
        self._remove_from_free_queue(NULL_BLOCK_ID)
        # Running totals; a step record reports their change over the step.
        self.num_allocated_total = 0
        self.num_freed_total = 0
        self.num_evicted_total = 0
        # References beyond the first, summed over blocks: how many token slots prefix sharing saves.
        self.num_shared_refs = 0
        # The KV event queue this pool appends BlockStored / BlockRemoved to, shared with its
        # KV cache manager, which owns it (None: events are off, nothing is recorded).
        self.kv_events: list[KVEvent] | None = None

    def __deepcopy__(self, memo: dict) -> "BlockPool":
        # Every field holds immutable values (ints, None), so slices are deep copies, and far
        # cheaper than copy.deepcopy visiting each element: snapshots are taken while playing.
        clone = copy.copy(self)
        clone.ref_cnt = self.ref_cnt[:]
        clone.block_hash = self.block_hash[:]
        clone.next_free = self.next_free[:]
        clone.prev_free = self.prev_free[:]
        clone.cached_block_hash_to_block = self.cached_block_hash_to_block.copy()
        # Through the memo, so the clone shares its queue with its manager's clone.
        clone.kv_events = copy.deepcopy(self.kv_events, memo)
        memo[id(self)] = clone
        return clone

    # -- the free queue ---------------------------------------------------------------------
    def _remove_from_free_queue(self, block_id: int) -> None:
        prev_id = self.prev_free[block_id]
        next_id = self.next_free[block_id]
        self.next_free[prev_id] = next_id
        self.prev_free[next_id] = prev_id
        self.num_free_blocks -= 1

    def _append_to_free_queue(self, block_ids: list[int]) -> None:
        next_free, prev_free = self.next_free, self.prev_free
        last = prev_free[self.tail]
        for block_id in block_ids:
            next_free[last] = block_id
            prev_free[block_id] = last
            last = block_id
        next_free[last] = self.tail
        prev_free[self.tail] = last
        self.num_free_blocks += len(block_ids)

    def _prepend_to_free_queue(self, block_ids: list[int]) -> None:
        next_free, prev_free = self.next_free, self.prev_free
        first = next_free[self.head]
        last = self.head
        for block_id in block_ids:
            next_free[last] = block_id
            prev_free[block_id] = last
            last = block_id
        next_free[last] = first
        prev_free[first] = last
        self.num_free_blocks += len(block_ids)

    def free_queue_order(self) -> list[int]:
        """Free block ids from the next to be allocated to the last (O(free blocks); for views)."""
        order = []
        block_id = self.next_free[self.head]
        while block_id != self.tail:
            order.append(block_id)
            block_id = self.next_free[block_id]
        return order

    # -- allocation -------------------------------------------------------------------------
    def get_new_blocks(self, num_blocks: int) -> list[int]:
        """Take `num_blocks` from the head of the free queue, evicting any cached prefix they hold."""
        if num_blocks > self.num_free_blocks:
            raise ValueError(f"cannot get {num_blocks} free blocks from the pool ({self.num_free_blocks} free)")
        next_free, ref_cnt, block_hash = self.next_free, self.ref_cnt, self.block_hash
        cached, kv_events = self.cached_block_hash_to_block, self.kv_events
        taken = []
        block_id = next_free[self.head]
        for _ in range(num_blocks):
            taken.append(block_id)
            ref_cnt[block_id] = 1
            evicted_hash = block_hash[block_id]
            if evicted_hash is not None:
                # The block still held a cached prefix: evict it (inline, not a method: with prefix
                # caching most blocks taken are evicted ones, and a call each costs 1% of a replay).
                cached.pop_block(evicted_hash, block_id)
                block_hash[block_id] = None
                self.num_evicted_total += 1
                if kv_events is not None:
                    kv_events.append(BlockRemoved(block_id, evicted_hash))
            block_id = next_free[block_id]
        next_free[self.head] = block_id
        self.prev_free[block_id] = self.head
        self.num_free_blocks -= num_blocks
        self.num_allocated_total += num_blocks
        return taken

    def touch(self, block_ids: Iterable[int]) -> None:
        """Take a reference on prefix-cache hits; a hit on a free cached block takes it off the queue."""
        ref_cnt = self.ref_cnt
        for block_id in block_ids:
            if ref_cnt[block_id] == 0:
                self._remove_from_free_queue(block_id)
            else:
                self.num_shared_refs += 1
            ref_cnt[block_id] += 1

    def free_blocks(self, ordered_block_ids: Iterable[int]) -> None:
        """Drop one reference from each block; blocks nobody uses any more return to the queue.

        The order is eviction order (callers pass a request's blocks tail first, so a chain's
        tail is evicted before its head). Blocks without a hash can never be hit again, so they
        go to the front to be reused first; cached blocks go to the back (LRU).
        """
        ref_cnt, block_hash = self.ref_cnt, self.block_hash
        reuse_first: list[int] = []
        reuse_last: list[int] = []
        for block_id in ordered_block_ids:
            ref_cnt[block_id] -= 1
            if ref_cnt[block_id] > 0:
                self.num_shared_refs -= 1
            else:
                if self.unhashed_blocks_reused_first and block_hash[block_id] is None:
                    reuse_first.append(block_id)
                else:
                    reuse_last.append(block_id)
        self._prepend_to_free_queue(reuse_first)
        self._append_to_free_queue(reuse_last)
        self.num_freed_total += len(reuse_first) + len(reuse_last)

    # -- the prefix cache -------------------------------------------------------------------
    def get_cached_block(self, block_hash: int) -> int | None:
        return self.cached_block_hash_to_block.get_one_block(block_hash)

    def cache_full_blocks(self, block_ids: Sequence[int], block_hashes: Sequence[int], request_id: str = "",
                          block_indices: Sequence[int] = (), group_id: int = 0) -> None:
        """Enter newly full blocks into the prefix cache, each under its prefix's hash (in one call
        per request and step, as vLLM's `cache_full_blocks`: a decode fills a block every
        `block_size` steps, a prefill chunk many at once). The request, the blocks' indices in its
        table and the group only go into the events."""
        cached, pool_block_hash, kv_events = self.cached_block_hash_to_block, self.block_hash, self.kv_events
        if kv_events is not None:
            kv_events.extend(BlockStored(block_id, block_hash, request_id, index, group_id)
                             for block_id, block_hash, index in zip(block_ids, block_hashes, block_indices or repeat(0)))
        for block_id, block_hash in zip(block_ids, block_hashes):
            pool_block_hash[block_id] = block_hash
            if block_hash in cached:
                cached.insert(block_hash, block_id)
            else:
                cached[block_hash] = block_id  # the common case, inline: no duplicate

    @property
    def num_cached_blocks(self) -> int:
        return len(self.cached_block_hash_to_block.block_ids())

    def usage(self, exclude_null_block: bool = True) -> float:
        """Fraction of blocks in use; evictable cached blocks count as free, as in vLLM."""
        total = self.num_blocks - 1 if exclude_null_block else self.num_blocks
        # vLLM reports 0 for a pool that is only the null block.
        return 1.0 - self.num_free_blocks / total if total else 0.0


class BlockPoolGauges:
    """The pool's figures as a paged KV cache manager reports them (the `KVCache` gauges), for
    a manager with a `block_pool`, a `block_size` and `usage_excludes_null_block`."""

    block_pool: BlockPool
    block_size: int
    usage_excludes_null_block: bool

    @property
    def num_free_blocks(self) -> int:
        return self.block_pool.num_free_blocks

    @property
    def num_total_blocks(self) -> int:
        return self.block_pool.num_blocks

    @property
    def usage(self) -> float:
        return self.block_pool.usage(self.usage_excludes_null_block)

    @property
    def num_used_blocks(self) -> int:
        return self.block_pool.num_blocks - 1 - self.block_pool.num_free_blocks

    @property
    def num_shared_slots(self) -> int:
        """Token slots that prefix sharing saves: every reference to a block beyond its first."""
        return self.block_pool.num_shared_refs * self.block_size
