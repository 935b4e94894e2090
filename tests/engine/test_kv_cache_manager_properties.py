"""Properties of the KV cache managers under random request lifecycles.

`Lifecycle` drives a KVCacheManager the way scheduler_core/engine/policies/vllm_v1.py does: admit a
waiting request (prefix-cache lookup, then allocate_slots with the hit blocks), schedule a chunk
of a running one, sample a token once its context is computed, and free a request when it
finishes or is preempted (by recompute, or by swapping out and later back in). Prompts come from
a tiny vocabulary and a few shared prefixes, so block hashes collide on purpose. Each test states
one rule and checks it after every operation.

The last section checks the contiguous allocator (the pre-PagedAttention baseline) the same way.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.engine.block_pool import NULL_BLOCK_ID, BlockPool
from scheduler_core.engine.contiguous import ContiguousKVCacheManager
from scheduler_core.engine.kv_cache_manager import KVCacheManager
from scheduler_core.engine.request import Request
from scheduler_core.utils import cdiv

# Hundreds of random lifecycles per property: most of a second each, half a minute in all.
pytestmark = pytest.mark.slow

PROPERTY = settings(max_examples=100, deadline=None)

prefix_caching = pytest.mark.parametrize("enable_caching", [True, False], ids=["prefix_caching", "no_prefix_caching"])

# Token 1 is also the token every simulated decode samples, so outputs collide with prompts too.
TOKENS = st.integers(0, 2)


def free_queue(pool: BlockPool) -> list[int]:
    """pool.free_queue_order(), once the links are known to reach the tail: a corrupted queue fails
    the test instead of hanging it."""
    block_id, num_steps = pool.next_free[pool.head], 0
    while block_id != pool.tail:
        num_steps += 1
        assert num_steps <= pool.num_blocks, "the free queue's links form a cycle"
        block_id = pool.next_free[block_id]
    return pool.free_queue_order()


class Operation(NamedTuple):
    """Apply `kind` (a Lifecycle method) to the `pick`-th eligible request; `budget` caps the chunk."""

    kind: str
    pick: int
    budget: int


# Weighted towards the operations that move requests forward.
KINDS = [
    "admit", "admit", "schedule", "schedule", "schedule", "schedule", "sample", "sample", "sample",
    "preempt", "finish", "swap_out", "swap_in",
]


@dataclass
class Scenario:
    block_size: int
    num_blocks: int
    max_model_len: int
    unhashed_blocks_reused_first: bool
    full_sequence_must_fit: bool
    prompts: list[list[int]]
    max_tokens: list[int]
    operations: list[Operation]


@st.composite
def scenarios(draw) -> Scenario:
    block_size = draw(st.sampled_from([1, 2, 4]))
    shared_prefixes = draw(st.lists(st.lists(TOKENS, min_size=1, max_size=12), min_size=1, max_size=3))
    num_requests = draw(st.integers(1, 6))
    prompts = []
    for _ in range(num_requests):
        prefix = draw(st.sampled_from(shared_prefixes + [[]]))
        suffix = draw(st.lists(TOKENS, min_size=0 if prefix else 1, max_size=6))
        prompts.append(prefix + suffix)
    longest_prompt = max(map(len, prompts))
    operations = draw(
        st.lists(
            st.builds(
                Operation,
                st.sampled_from(KINDS),
                st.integers(0, 5),
                st.integers(1, 12),
            ),
            min_size=30,
            max_size=100,
        )
    )
    return Scenario(
        block_size=block_size,
        num_blocks=draw(st.integers(2, 16)),
        # Close to the longest prompt, so some requests finish by length rather than max_tokens
        # (add_request accepts a prompt of exactly max_model_len tokens).
        max_model_len=draw(st.integers(longest_prompt, longest_prompt + 8)),
        unhashed_blocks_reused_first=draw(st.booleans()),
        full_sequence_must_fit=draw(st.booleans()),
        prompts=prompts,
        max_tokens=[draw(st.integers(1, 10)) for _ in prompts],
        operations=operations,
    )


@dataclass
class Snapshot:
    ref_cnt: list[int]
    block_hash: list[int | None]
    free_queue: list[int]
    cached: dict[int, list[int]]
    tables: dict[str, list[int]]

    @classmethod
    def of(cls, kv: KVCacheManager) -> Snapshot:
        pool = kv.block_pool
        return cls(
            list(pool.ref_cnt),
            list(pool.block_hash),
            free_queue(pool),
            pool.cached_block_hash_to_block.as_lists(),
            {rid: list(table) for rid, table in kv.req_to_blocks.items()},
        )


@dataclass
class Step:
    """One applied operation on one request, with the manager's state just before it."""

    kind: str
    request: Request
    before: Snapshot
    # admit / schedule / swap_in: what allocate_slots returned (None: the pool was too short) and was asked.
    new_blocks: list[int] | None = None
    num_new_tokens: int = 0
    hits: list[int] | None = None


class Lifecycle:
    """Requests moving through waiting -> running (<-> swapped) -> finished, with the KV calls the scheduler makes."""

    def __init__(self, scenario: Scenario, enable_caching: bool):
        self.scenario = scenario
        self.kv = KVCacheManager(
            scenario.num_blocks,
            scenario.block_size,
            scenario.max_model_len,
            enable_caching,
            unhashed_blocks_reused_first=scenario.unhashed_blocks_reused_first,
        )
        self.waiting = [
            Request(f"r{i}", prompt, max_tokens, arrival_index=i)
            for i, (prompt, max_tokens) in enumerate(zip(scenario.prompts, scenario.max_tokens))
        ]
        self.requests = {request.request_id: request for request in self.waiting}
        self.running: list[Request] = []
        self.swapped: list[Request] = []
        self.finished: list[Request] = []

    def run(self) -> Iterator[Step]:
        """Apply the scenario's operations, yielding a Step after each one that applied to someone."""
        for operation in self.scenario.operations:
            step = getattr(self, operation.kind)(operation.pick, operation.budget)
            if step is not None:
                yield step

    def admit(self, pick: int, token_budget: int) -> Step | None:
        """vllm_v1._schedule_waiting for one request: prefix-cache lookup, then allocate with the hits."""
        if not self.waiting:
            return None
        kv, request = self.kv, self.waiting[pick % len(self.waiting)]
        before = Snapshot.of(kv)
        hits, num_hit_tokens = kv.get_computed_blocks(request)
        num_new_tokens = min(request.num_tokens - num_hit_tokens, token_budget)
        new_blocks = kv.allocate_slots(
            request,
            num_new_tokens,
            len(hits) * self.scenario.block_size,
            hits,
            full_sequence_must_fit=self.scenario.full_sequence_must_fit,
        )
        if new_blocks is not None:
            self.waiting.remove(request)
            self.running.append(request)
            # _admit sets the hit tokens as computed; _finish_schedule then adds the scheduled chunk.
            request.num_computed_tokens = num_hit_tokens + num_new_tokens
        return Step("admit", request, before, new_blocks, num_new_tokens, hits)

    def schedule(self, pick: int, token_budget: int) -> Step | None:
        """A running request's next chunk (or decode token), capped as vllm_v1.schedule caps it."""
        candidates = [r for r in self.running if r.num_computed_tokens < r.num_tokens]
        if not candidates:
            return None
        request = candidates[pick % len(candidates)]
        num_new_tokens = min(
            request.num_tokens - request.num_computed_tokens,
            token_budget,
            self.scenario.max_model_len - 1 - request.num_computed_tokens,
        )
        if num_new_tokens <= 0:
            return None
        before = Snapshot.of(self.kv)
        new_blocks = self.kv.allocate_slots(request, num_new_tokens)
        if new_blocks is not None:
            request.num_computed_tokens += num_new_tokens
        return Step("schedule", request, before, new_blocks, num_new_tokens)

    def sample(self, pick: int, _budget: int) -> Step | None:
        """A request whose whole context is computed samples a token; it may finish (update_from_output)."""
        candidates = [r for r in self.running if r.num_computed_tokens == r.num_tokens]
        if not candidates:
            return None
        request = candidates[pick % len(candidates)]
        before = Snapshot.of(self.kv)
        request.num_output_tokens += 1
        if request.num_output_tokens >= request.max_tokens or request.num_tokens >= self.scenario.max_model_len:
            self._free(request)
            self.finished.append(request)
        return Step("sample", request, before)

    def preempt(self, pick: int, _budget: int) -> Step | None:
        """Recompute preemption: the request's blocks go back and it waits again from token 0."""
        if not self.running:
            return None
        request = self.running[pick % len(self.running)]
        before = Snapshot.of(self.kv)
        self._free(request)
        request.num_computed_tokens = 0
        self.waiting.insert(0, request)
        return Step("preempt", request, before)

    def swap_out(self, pick: int, _budget: int) -> Step | None:
        """Swap preemption (Scheduler._preempt in swap mode): the blocks go back, the computed tokens stay."""
        if not self.running:
            return None
        request = self.running[pick % len(self.running)]
        before = Snapshot.of(self.kv)
        self._free(request)
        self.swapped.append(request)
        return Step("swap_out", request, before)

    def swap_in(self, _pick: int, token_budget: int) -> Step | None:
        """Scheduler._try_swap_in for the oldest swapped request: fresh blocks for its context and next chunk."""
        if not self.swapped:
            return None
        request = self.swapped[0]
        num_new_tokens = min(request.num_tokens - request.num_computed_tokens, token_budget)
        before = Snapshot.of(self.kv)
        new_blocks = self.kv.allocate_slots(request, num_new_tokens)
        if new_blocks is not None:
            self.swapped.remove(request)
            self.running.append(request)
            request.num_computed_tokens += num_new_tokens
        return Step("swap_in", request, before, new_blocks, num_new_tokens)

    def finish(self, pick: int, _budget: int) -> Step | None:
        """A running request ends early (stop string, abort): its blocks go back for good."""
        if not self.running:
            return None
        request = self.running[pick % len(self.running)]
        before = Snapshot.of(self.kv)
        self._free(request)
        self.finished.append(request)
        return Step("finish", request, before)

    def _free(self, request: Request) -> None:
        self.kv.free(request)
        self.running.remove(request)


ALLOCATING = ("admit", "schedule", "swap_in")


def content_hashes(request: Request, block_size: int) -> list[int]:
    """The chained hashes of the request's full blocks, recomputed from scratch from its tokens."""
    tokens = [request.token_id(position) for position in range(request.num_tokens)]
    return Request("probe", tokens, 1).update_block_hashes(block_size, len(tokens))


def lifecycle_steps(scenario: Scenario, enable_caching: bool) -> Iterator[tuple[Lifecycle, Step]]:
    lifecycle = Lifecycle(scenario, enable_caching)
    for step in lifecycle.run():
        yield lifecycle, step


# -- sharing and reference counts ---------------------------------------------------------------
@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_blocks_are_shared_only_through_the_prefix_cache(enable_caching, scenario):
    """Two block-table slots hold the same block only if it is cached under both slots' prefix hash."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        pool = lifecycle.kv.block_pool
        slots: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for request_id, table in lifecycle.kv.req_to_blocks.items():
            for index, block_id in enumerate(table):
                slots[block_id].append((request_id, index))
        for block_id, holders in slots.items():
            if len(holders) == 1:
                continue
            assert enable_caching, f"block {block_id} shared without prefix caching: {holders}"
            assert pool.block_hash[block_id] is not None
            for request_id, index in holders:
                request_hashes = content_hashes(lifecycle.requests[request_id], scenario.block_size)
                assert index == holders[0][1], f"block {block_id} at different positions: {holders}"
                assert request_hashes[index] == pool.block_hash[block_id]


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_ref_count_equals_the_number_of_block_tables_holding_the_block(enable_caching, scenario):
    """A block's ref_cnt is the number of block tables it appears in."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        held = Counter(block_id for table in lifecycle.kv.req_to_blocks.values() for block_id in table)
        ref_cnt = lifecycle.kv.block_pool.ref_cnt
        assert ref_cnt == [held[block_id] for block_id in range(scenario.num_blocks)]


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_free_and_used_blocks_add_up_to_the_usable_blocks(enable_caching, scenario):
    """num_free_blocks plus the blocks some table holds is num_blocks - 1 (the null block is neither)."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        held = {block_id for table in lifecycle.kv.req_to_blocks.values() for block_id in table}
        assert NULL_BLOCK_ID not in held
        assert lifecycle.kv.num_free_blocks + len(held) == scenario.num_blocks - 1


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_free_queue_holds_exactly_the_unreferenced_blocks(enable_caching, scenario):
    """The pool's free queue lists every ref_cnt-0 usable block once, and nothing else."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        pool = lifecycle.kv.block_pool
        order = free_queue(pool)
        unreferenced = [b for b in range(1, scenario.num_blocks) if pool.ref_cnt[b] == 0]
        assert len(order) == pool.num_free_blocks
        assert sorted(order) == unreferenced


# -- block tables -------------------------------------------------------------------------------
@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_only_running_requests_hold_block_tables(enable_caching, scenario):
    """A request has a block table exactly while it is running; finishing, preemption or swapping drops it."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        assert set(lifecycle.kv.req_to_blocks) == {request.request_id for request in lifecycle.running}


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_block_table_covers_exactly_the_computed_tokens(enable_caching, scenario):
    """After allocate and advance, a table has ceil(num_computed_tokens / block_size) blocks."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        for request in lifecycle.running:
            table = lifecycle.kv.get_block_ids(request.request_id)
            assert len(table) == cdiv(request.num_computed_tokens, scenario.block_size), request


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_within_its_room_allocate_slots_has_nothing_to_do(enable_caching, scenario):
    """req_to_room never runs ahead (the v1 scheduler skips allocate_slots within it): allocating a
    running request's tokens up to its room returns [] and changes no table, block or cached count."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        kv = lifecycle.kv
        assert set(kv.req_to_room) == set(kv.req_to_blocks)
        for request in lifecycle.running:
            num_new_tokens = kv.req_to_room[request.request_id] - request.num_computed_tokens
            if num_new_tokens <= 0:
                continue
            clone = copy.deepcopy(kv)
            assert clone.allocate_slots(request, num_new_tokens) == []
            assert Snapshot.of(clone) == Snapshot.of(kv)
            assert clone.num_cached_block == kv.num_cached_block


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_failed_allocation_changes_nothing(enable_caching, scenario):
    """allocate_slots returning None leaves ref counts, free queue, prefix cache and tables as they were."""
    for lifecycle, step in lifecycle_steps(scenario, enable_caching):
        if step.kind in ALLOCATING and step.new_blocks is None:
            assert Snapshot.of(lifecycle.kv) == step.before


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_allocation_fails_only_when_the_free_blocks_fall_short(enable_caching, scenario):
    """allocate_slots returns None only if the blocks it must take (new ones and free hits) exceed the free ones."""
    block_size = scenario.block_size
    for _, step in lifecycle_steps(scenario, enable_caching):
        if step.kind not in ALLOCATING or step.new_blocks is not None:
            continue
        request, before = step.request, step.before
        hits = step.hits or []
        num_held = len(before.tables.get(request.request_id, []))
        num_free_hits = sum(1 for block_id in hits if before.ref_cnt[block_id] == 0)
        num_tokens = request.num_computed_tokens + len(hits) * block_size + step.num_new_tokens
        if step.kind == "admit" and scenario.full_sequence_must_fit:
            num_tokens = max(num_tokens, request.num_tokens)
        num_needed = cdiv(num_tokens, block_size) - num_held - len(hits) + num_free_hits
        assert num_needed > len(before.free_queue)


# -- the prefix cache ---------------------------------------------------------------------------
@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_cached_block_hash_matches_the_tokens_it_holds(enable_caching, scenario):
    """Every cached block in a table carries the hash of its owner's tokens up to and including that block."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching):
        pool = lifecycle.kv.block_pool
        for request in lifecycle.running:
            expected = content_hashes(request, scenario.block_size)
            for index, block_id in enumerate(lifecycle.kv.get_block_ids(request.request_id)):
                if pool.block_hash[block_id] is not None:
                    assert pool.block_hash[block_id] == expected[index], (request, index)


@PROPERTY
@given(scenario=scenarios())
def test_with_prefix_caching_exactly_the_full_scheduled_blocks_are_cached(scenario):
    """With prefix caching, a table's block is in the prefix cache iff all its tokens are scheduled."""
    for lifecycle, _ in lifecycle_steps(scenario, enable_caching=True):
        pool = lifecycle.kv.block_pool
        for request in lifecycle.running:
            num_full_blocks = request.num_computed_tokens // scenario.block_size
            for index, block_id in enumerate(lifecycle.kv.get_block_ids(request.request_id)):
                assert (pool.block_hash[block_id] is not None) == (index < num_full_blocks), (request, index)


@PROPERTY
@given(scenario=scenarios())
def test_without_prefix_caching_no_block_is_ever_cached_or_hit(scenario):
    """With prefix caching off, no block gets a hash and no admission finds a hit."""
    for lifecycle, step in lifecycle_steps(scenario, enable_caching=False):
        pool = lifecycle.kv.block_pool
        assert all(block_hash is None for block_hash in pool.block_hash)
        assert pool.cached_block_hash_to_block == {}
        if step.kind == "admit":
            assert step.hits == []


@PROPERTY
@given(scenario=scenarios())
def test_admission_hits_the_longest_cached_prefix_but_not_the_last_token(scenario):
    """get_computed_blocks returns the cached blocks of the longest cached prefix, leaving >= 1 token to compute."""
    block_size = scenario.block_size
    for _, step in lifecycle_steps(scenario, enable_caching=True):
        if step.kind != "admit":
            continue
        request, hits = step.request, step.hits
        expected = content_hashes(request, block_size)
        max_hit_blocks = (request.num_tokens - 1) // block_size
        assert len(hits) <= max_hit_blocks
        for index, block_id in enumerate(hits):
            assert block_id in step.before.cached.get(expected[index], [])
        if len(hits) < max_hit_blocks:
            assert expected[len(hits)] not in step.before.cached


@PROPERTY
@given(scenario=scenarios())
def test_admitted_request_starts_its_table_with_the_hit_blocks(scenario):
    """A successful admission puts the prefix-cache hits, in order, at the head of the new block table."""
    for lifecycle, step in lifecycle_steps(scenario, enable_caching=True):
        if step.kind == "admit" and step.new_blocks is not None:
            table = lifecycle.kv.get_block_ids(step.request.request_id)
            assert table[: len(step.hits)] == step.hits
            assert table[len(step.hits) :] == step.new_blocks


@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_freed_table_enters_the_free_queue_tail_first(enable_caching, scenario):
    """free() releases a table from its last block to its first, so a prefix chain's tail is evicted first."""
    for lifecycle, step in lifecycle_steps(scenario, enable_caching):
        table = step.before.tables.get(step.request.request_id, [])
        if step.request.request_id in lifecycle.kv.req_to_blocks or not table:
            continue  # still running: nothing was freed
        pool = lifecycle.kv.block_pool
        released = [block_id for block_id in reversed(table) if pool.ref_cnt[block_id] == 0]
        reused_first = [b for b in released if scenario.unhashed_blocks_reused_first and pool.block_hash[b] is None]
        evicted_last = [b for b in released if b not in reused_first]
        assert free_queue(pool) == reused_first + step.before.free_queue + evicted_last


# -- nothing leaks ------------------------------------------------------------------------------
@prefix_caching
@PROPERTY
@given(scenario=scenarios())
def test_freeing_every_request_returns_every_block(enable_caching, scenario):
    """Once every request is freed, all num_blocks - 1 usable blocks are free and no ref count is left."""
    lifecycle = Lifecycle(scenario, enable_caching)
    for _ in lifecycle.run():
        pass
    for request in list(lifecycle.running) + lifecycle.waiting + lifecycle.swapped:
        lifecycle.kv.free(request)
    pool = lifecycle.kv.block_pool
    assert lifecycle.kv.num_free_blocks == scenario.num_blocks - 1
    assert all(count == 0 for count in pool.ref_cnt)
    assert lifecycle.kv.req_to_blocks == {}
    assert sorted(free_queue(pool)) == list(range(1, scenario.num_blocks))


# -- the contiguous allocator -------------------------------------------------------------------
@dataclass
class ContiguousScenario:
    num_blocks: int
    block_size: int
    max_model_len: int
    # (admit?, which of twelve requests): admit calls allocate_slots, else free.
    operations: list[tuple[bool, int]]

    def new_manager(self) -> ContiguousKVCacheManager:
        return ContiguousKVCacheManager(self.num_blocks, self.block_size, self.max_model_len)


@st.composite
def contiguous_scenarios(draw) -> ContiguousScenario:
    block_size = draw(st.sampled_from([1, 2, 4]))
    max_model_len = draw(st.integers(1, 4 * block_size))
    blocks_per_request = cdiv(max_model_len, block_size)
    # Room for a handful of regions plus a remainder, so frees leave holes of different sizes.
    num_regions, remainder = draw(st.integers(1, 8)), draw(st.integers(0, blocks_per_request - 1))
    return ContiguousScenario(
        num_blocks=1 + num_regions * blocks_per_request + remainder,
        block_size=block_size,
        max_model_len=max_model_len,
        operations=draw(st.lists(st.tuples(st.booleans(), st.integers(0, 11)), min_size=20, max_size=80)),
    )


@dataclass
class ContiguousStep:
    kv: ContiguousKVCacheManager
    kind: str
    request: Request
    extents_before: list[tuple[int, int]]
    held_before: bool
    # admit: what allocate_slots returned.
    region: list[int] | None = None


def contiguous_steps(scenario: ContiguousScenario, kv: ContiguousKVCacheManager) -> Iterator[ContiguousStep]:
    """Admit (allocate_slots) or free one of twelve requests per operation, yielding a step after each."""
    requests = [Request(f"r{i}", [0], 1) for i in range(12)]
    for admit, pick in scenario.operations:
        request = requests[pick]
        held_before = request.request_id in kv.req_to_blocks
        step = ContiguousStep(kv, "admit" if admit else "free", request, list(kv.free_extents), held_before)
        if admit:
            step.region = kv.allocate_slots(request, 1)
        else:
            kv.free(request)
        yield step


CONTIGUOUS_PROPERTY = settings(max_examples=200, deadline=None)


@CONTIGUOUS_PROPERTY
@given(scenario=contiguous_scenarios())
def test_contiguous_regions_never_overlap(scenario):
    """Reserved regions are runs of blocks_per_request consecutive usable blocks, pairwise disjoint."""
    for step in contiguous_steps(scenario, scenario.new_manager()):
        kv = step.kv
        seen: set[int] = set()
        for region in kv.req_to_blocks.values():
            assert len(region) == kv.blocks_per_request
            assert region == list(range(region[0], region[0] + len(region)))
            assert region[0] >= 1 and region[-1] < kv.num_total_blocks
            assert seen.isdisjoint(region)
            seen.update(region)


@CONTIGUOUS_PROPERTY
@given(scenario=contiguous_scenarios())
def test_contiguous_free_extents_are_sorted_disjoint_and_merged(scenario):
    """Free extents are sorted by start, non-empty, and no two overlap or touch (neighbours are merged)."""
    for step in contiguous_steps(scenario, scenario.new_manager()):
        extents = step.kv.free_extents
        assert all(length > 0 for _, length in extents)
        for (start, length), (next_start, _) in zip(extents, extents[1:]):
            assert start + length < next_start, extents


@CONTIGUOUS_PROPERTY
@given(scenario=contiguous_scenarios())
def test_contiguous_free_extents_and_regions_partition_the_usable_blocks(scenario):
    """Every usable block is in exactly one free extent or one region; num_free_blocks counts the extents."""
    for step in contiguous_steps(scenario, scenario.new_manager()):
        kv = step.kv
        free = [b for start, length in kv.free_extents for b in range(start, start + length)]
        reserved = [b for region in kv.req_to_blocks.values() for b in region]
        assert kv.num_free_blocks == sum(length for _, length in kv.free_extents)
        assert sorted(free + reserved) == list(range(1, kv.num_total_blocks))


@CONTIGUOUS_PROPERTY
@given(scenario=contiguous_scenarios())
def test_contiguous_admission_reserves_the_first_extent_that_fits(scenario):
    """A new request gets the start of the first free extent long enough, or None if no extent is."""
    for step in contiguous_steps(scenario, scenario.new_manager()):
        if step.kind != "admit" or step.held_before:
            continue
        fitting = [start for start, length in step.extents_before if length >= step.kv.blocks_per_request]
        if step.region is None:
            assert fitting == []
        else:
            assert step.region[0] == fitting[0]


@CONTIGUOUS_PROPERTY
@given(scenario=contiguous_scenarios())
def test_contiguous_admitted_request_needs_no_new_blocks(scenario):
    """allocate_slots for a request that already holds its region returns [] and changes nothing."""
    for step in contiguous_steps(scenario, scenario.new_manager()):
        if step.kind == "admit" and step.held_before:
            assert step.region == []
            assert step.kv.free_extents == step.extents_before


@CONTIGUOUS_PROPERTY
@given(scenario=contiguous_scenarios())
def test_contiguous_freeing_everything_restores_one_extent(scenario):
    """Once every request is freed, the free list is the single extent (1, num_blocks - 1)."""
    kv = scenario.new_manager()
    for _ in contiguous_steps(scenario, kv):
        pass
    for request_id in list(kv.req_to_blocks):
        kv.free(Request(request_id, [0], 1))
    assert kv.free_extents == [(1, kv.num_total_blocks - 1)]
    assert kv.num_free_blocks == kv.num_total_blocks - 1
