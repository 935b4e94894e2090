"""Properties of the BlockPool under random sequences of allocations, prefix-cache hits and frees.

A scenario is a pool size and a list of operations. `run` applies them while remembering which
holder (a stand-in for a request's block table) holds which block, and yields one `Step` per
operation with the pool's state just before it, so each test states one rule about every step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.engine.block_pool import NULL_BLOCK_ID, BlockPool

# Hundreds of random operation sequences per property: most of a second each.
pytestmark = pytest.mark.slow


class Operation(NamedTuple):
    """allocate `number` blocks; cache a held block under hash `number`; hit hash `number`; free a holder."""

    kind: str
    holder_pick: int
    block_pick: int
    number: int


OPERATIONS = st.builds(
    Operation,
    st.sampled_from(["allocate", "cache", "hit", "free"]),
    st.integers(0, 7),
    st.integers(0, 7),
    # Few hashes, so blocks often cache the same prefix and hits often find a free cached block.
    st.integers(0, 3),
)


@dataclass
class Scenario:
    num_blocks: int
    unhashed_blocks_reused_first: bool
    operations: list[Operation]


@st.composite
def scenarios(draw, unhashed_blocks_reused_first=None) -> Scenario:
    if unhashed_blocks_reused_first is None:
        unhashed_blocks_reused_first = draw(st.booleans())
    return Scenario(
        # Small pools, so allocations run the pool dry and reach cached blocks at the head.
        num_blocks=draw(st.integers(2, 10)),
        unhashed_blocks_reused_first=unhashed_blocks_reused_first,
        operations=draw(st.lists(OPERATIONS, min_size=10, max_size=60)),
    )


PROPERTY = settings(max_examples=200, deadline=None)


def free_queue(pool: BlockPool) -> list[int]:
    """pool.free_queue_order(), once the links are known to reach the tail: a corrupted queue fails
    the test instead of hanging it."""
    block_id, num_steps = pool.next_free[pool.head], 0
    while block_id != pool.tail:
        num_steps += 1
        assert num_steps <= pool.num_blocks, "the free queue's links form a cycle"
        block_id = pool.next_free[block_id]
    return pool.free_queue_order()


@dataclass
class Snapshot:
    ref_cnt: list[int]
    block_hash: list[int | None]
    free_queue: list[int]
    num_free_blocks: int
    cached: dict[int, list[int]]

    @classmethod
    def of(cls, pool: BlockPool) -> Snapshot:
        return cls(
            list(pool.ref_cnt),
            list(pool.block_hash),
            free_queue(pool),
            pool.num_free_blocks,
            pool.cached_block_hash_to_block.as_lists(),
        )


@dataclass
class Step:
    """One applied operation, the pool before and after it, and the blocks it moved."""

    operation: Operation
    before: Snapshot
    pool: BlockPool
    holders: list[list[int]]
    # allocate: the blocks handed out; free: the blocks released, in the order passed; cache, hit: the block.
    blocks: list[int]
    raised: bool = False

    @property
    def kind(self) -> str:
        return self.operation.kind


def new_pool(scenario: Scenario) -> BlockPool:
    return BlockPool(
        scenario.num_blocks, enable_caching=True, unhashed_blocks_reused_first=scenario.unhashed_blocks_reused_first
    )


def run(scenario: Scenario, pool: BlockPool | None = None) -> Iterator[Step]:
    """Apply a scenario's operations to `pool` (a fresh one by default), yielding a Step after each one
    that did something."""
    if pool is None:
        pool = new_pool(scenario)
    holders: list[list[int]] = []
    for operation in scenario.operations:
        before = Snapshot.of(pool)
        blocks: list[int] = []
        raised = False
        if operation.kind == "allocate":
            try:
                blocks = pool.get_new_blocks(operation.number)
            except ValueError:
                raised = True
            else:
                holders.append(blocks)
        elif operation.kind == "cache":
            # Only a held, not yet cached block gets a hash, as in KVCacheManager.cache_blocks.
            if not holders:
                continue
            holder = holders[operation.holder_pick % len(holders)]
            uncached = [b for b in holder if pool.block_hash[b] is None]
            if not uncached:
                continue
            block_id = uncached[operation.block_pick % len(uncached)]
            pool.cache_full_blocks([block_id], [operation.number])
            blocks = [block_id]
        elif operation.kind == "hit":
            block_id = pool.get_cached_block(operation.number)
            if block_id is None:
                continue
            # A request never hits a block it already holds; such a hit starts a new holder.
            candidates = [h for h in holders if block_id not in h]
            if operation.holder_pick < len(candidates):
                holder = candidates[operation.holder_pick]
            else:
                holder = []
                holders.append(holder)
            pool.touch([block_id])
            holder.append(block_id)
            blocks = [block_id]
        elif operation.kind == "free":
            if not holders:
                continue
            holder = holders.pop(operation.holder_pick % len(holders))
            # KVCacheManager.free passes a block table tail first.
            blocks = list(reversed(holder))
            pool.free_blocks(blocks)
        yield Step(operation, before, pool, holders, blocks, raised)


# -- accounting ---------------------------------------------------------------------------------
@PROPERTY
@given(scenarios())
def test_free_and_used_blocks_add_up_to_the_usable_blocks(scenario):
    """Every block but the null block is either free or in use, never both or neither."""
    for step in run(scenario):
        pool = step.pool
        num_used = sum(1 for count in pool.ref_cnt if count > 0)
        assert pool.num_free_blocks + num_used == pool.num_blocks - 1


@PROPERTY
@given(scenarios())
def test_null_block_is_never_handed_out(scenario):
    """Block 0 is reserved: never allocated, never referenced, never in the free queue."""
    for step in run(scenario):
        assert NULL_BLOCK_ID not in step.blocks
        assert step.pool.ref_cnt[NULL_BLOCK_ID] == 0
        assert NULL_BLOCK_ID not in free_queue(step.pool)


@PROPERTY
@given(scenarios())
def test_ref_count_equals_the_number_of_holders(scenario):
    """A block's ref_cnt is how many holders hold it."""
    for step in run(scenario):
        held = Counter(block_id for holder in step.holders for block_id in holder)
        assert step.pool.ref_cnt == [held[block_id] for block_id in range(step.pool.num_blocks)]


# -- the free queue -----------------------------------------------------------------------------
@PROPERTY
@given(scenarios())
def test_free_queue_holds_exactly_the_unreferenced_blocks_once(scenario):
    """free_queue_order() lists each ref_cnt-0 block once, and its length is num_free_blocks."""
    for step in run(scenario):
        pool = step.pool
        order = free_queue(pool)
        unreferenced = {b for b in range(pool.num_blocks) if pool.ref_cnt[b] == 0 and b != NULL_BLOCK_ID}
        assert len(order) == len(set(order)) == pool.num_free_blocks
        assert set(order) == unreferenced


@PROPERTY
@given(scenarios())
def test_free_queue_links_agree_in_both_directions(scenario):
    """Walking the free queue backwards from the tail gives the forward order reversed."""
    for step in run(scenario):
        pool = step.pool
        backwards = []
        block_id = pool.prev_free[pool.tail]
        while block_id != pool.head and len(backwards) <= pool.num_blocks:
            backwards.append(block_id)
            block_id = pool.prev_free[block_id]
        assert backwards[::-1] == free_queue(pool)


# -- allocation ---------------------------------------------------------------------------------
@PROPERTY
@given(scenarios())
def test_new_blocks_come_from_the_head_of_the_free_queue(scenario):
    """get_new_blocks(n) hands out the first n blocks of the free queue, in queue order."""
    for step in run(scenario):
        if step.kind == "allocate" and not step.raised:
            n = len(step.blocks)
            assert step.blocks == step.before.free_queue[:n]
            assert free_queue(step.pool) == step.before.free_queue[n:]


@PROPERTY
@given(scenarios())
def test_new_blocks_were_unreferenced_and_get_one_reference(scenario):
    """A block handed out by get_new_blocks had ref_cnt 0 and leaves with ref_cnt 1."""
    for step in run(scenario):
        if step.kind == "allocate":
            for block_id in step.blocks:
                assert step.before.ref_cnt[block_id] == 0
                assert step.pool.ref_cnt[block_id] == 1


@PROPERTY
@given(scenarios())
def test_asking_for_more_blocks_than_are_free_raises_and_changes_nothing(scenario):
    """get_new_blocks raises ValueError exactly when n exceeds num_free_blocks, and leaves the pool as it was."""
    for step in run(scenario):
        if step.kind == "allocate":
            assert step.raised == (step.operation.number > step.before.num_free_blocks)
            if step.raised:
                assert Snapshot.of(step.pool) == step.before


# -- the prefix cache ---------------------------------------------------------------------------
@PROPERTY
@given(scenarios())
def test_taking_a_cached_block_evicts_its_hash(scenario):
    """A cached block handed out again loses its hash and leaves cached_block_hash_to_block."""
    for step in run(scenario):
        if step.kind == "allocate":
            for block_id in step.blocks:
                old_hash = step.before.block_hash[block_id]
                assert step.pool.block_hash[block_id] is None
                if old_hash is not None:
                    assert block_id not in step.pool.cached_block_hash_to_block.blocks(old_hash)


@PROPERTY
@given(scenarios())
def test_hash_map_lists_exactly_the_blocks_with_that_hash(scenario):
    """cached_block_hash_to_block.blocks(h) lists, once each, the blocks whose block_hash is h; no empty lists."""
    for step in run(scenario):
        pool = step.pool
        expected: dict[int, set[int]] = {}
        for block_id, block_hash in enumerate(pool.block_hash):
            if block_hash is not None:
                expected.setdefault(block_hash, set()).add(block_id)
        actual = pool.cached_block_hash_to_block.as_lists()
        assert {h: set(holders) for h, holders in actual.items()} == expected
        assert all(len(holders) == len(set(holders)) for holders in actual.values())
        assert pool.num_cached_blocks == sum(len(ids) for ids in expected.values())


@PROPERTY
@given(scenarios())
def test_hit_serves_the_oldest_block_with_that_hash(scenario):
    """get_cached_block returns the first block cached under a hash that is still cached."""
    for step in run(scenario):
        if step.kind == "hit":
            block_id = step.blocks[0]
            assert step.before.cached[step.before.block_hash[block_id]][0] == block_id


@PROPERTY
@given(scenarios())
def test_hit_on_a_free_cached_block_takes_it_off_the_free_queue(scenario):
    """touch() on a ref_cnt-0 block removes it from the free queue and keeps the others' order."""
    for step in run(scenario):
        if step.kind == "hit":
            block_id = step.blocks[0]
            assert step.pool.ref_cnt[block_id] == step.before.ref_cnt[block_id] + 1
            expected = [b for b in step.before.free_queue if b != block_id]
            assert free_queue(step.pool) == expected
            assert step.pool.block_hash[block_id] == step.before.block_hash[block_id]


# -- freeing (LRU order) ------------------------------------------------------------------------
def newly_free(step: Step) -> list[int]:
    """Blocks of a free step whose last reference it dropped, in the order they were passed."""
    return [b for b in step.blocks if step.pool.ref_cnt[b] == 0]


@PROPERTY
@given(scenarios(unhashed_blocks_reused_first=True))
def test_freed_uncached_blocks_go_to_the_front_and_cached_ones_to_the_tail(scenario):
    """With unhashed_blocks_reused_first, unhashed blocks are reused first and cached ones evicted last (LRU)."""
    for step in run(scenario):
        if step.kind == "free":
            freed = newly_free(step)
            unhashed = [b for b in freed if step.pool.block_hash[b] is None]
            hashed = [b for b in freed if step.pool.block_hash[b] is not None]
            assert free_queue(step.pool) == unhashed + step.before.free_queue + hashed


@PROPERTY
@given(scenarios(unhashed_blocks_reused_first=False))
def test_freed_blocks_all_go_to_the_tail_without_unhashed_reuse_first(scenario):
    """Without unhashed_blocks_reused_first, every freed block joins the tail, in the order freed."""
    for step in run(scenario):
        if step.kind == "free":
            assert free_queue(step.pool) == step.before.free_queue + newly_free(step)


@PROPERTY
@given(scenarios())
def test_freeing_keeps_cached_hashes_hittable(scenario):
    """A freed block keeps its hash: it stays in the prefix cache until reallocated."""
    for step in run(scenario):
        if step.kind == "free":
            assert step.pool.block_hash == step.before.block_hash
            assert step.pool.cached_block_hash_to_block.as_lists() == step.before.cached


@PROPERTY
@given(scenarios())
def test_freeing_every_holder_returns_every_block(scenario):
    """Once every holder has freed its blocks, all num_blocks - 1 usable blocks are free again."""
    pool = new_pool(scenario)
    holders: list[list[int]] = []
    for step in run(scenario, pool):
        holders = step.holders
    for holder in holders:
        pool.free_blocks(reversed(holder))
    assert pool.num_free_blocks == pool.num_blocks - 1
    assert all(count == 0 for count in pool.ref_cnt)
    assert sorted(free_queue(pool)) == list(range(1, pool.num_blocks))
