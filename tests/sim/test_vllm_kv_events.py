"""The block pool as vLLM's KV events: what a subscriber learns from the batches is what is cached.

A router keeps, per engine, the set of block hashes it was told are cached: BlockStored adds, BlockRemoved
takes away, AllBlocksCleared empties. After every step that set must be exactly the pool's cached
blocks, under the hashes vLLM would give their prefixes.
"""

import copy
from collections import Counter

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.kv_events import BlockStored as EngineBlockStored
from scheduler_core.engine.request import Request
from scheduler_core.engine.single_type_kv_cache_manager import group_hash
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.engine.vllm_block_hash import VllmBlockHasher, external_block_hash
from scheduler_core.exports.vllm_kv_events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    KVEventBatcher,
    cached_blocks,
    known_requests,
)
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import synthetic_workload


class KVEventBatchless:
    """What a step without cache changes publishes: nothing (vLLM sends no empty batch)."""

    events = ()


def simulation(**engine) -> Simulation:
    # A pool small enough that cached prefixes are evicted, prompts that share prefixes.
    config = EngineConfig(**{"block_size": 16, "num_gpu_blocks": 120, "max_num_seqs": 8, "max_num_batched_tokens": 512,
                             "max_model_len": 1024, **engine})
    workload = synthetic_workload(30, arrival_rate=40.0, prompt_mean=150, output_mean=60, seed=5, max_prompt_len=400,
                                  max_output_len=200, shared_prefix_len=64, num_shared_prefixes=3)
    sim = Simulation(config, workload)
    sim.enable_kv_events()
    return sim


class Subscriber:
    """What a KV-aware router keeps of one engine: how many cached blocks hold each (group, hash)."""

    def __init__(self):
        self.cached: Counter = Counter()
        self.num_stored = self.num_removed = 0

    def apply(self, batch) -> None:
        for event in batch.events:
            if isinstance(event, BlockStored):
                self.cached.update((event.group_idx, h) for h in event.block_hashes)
                self.num_stored += len(event.block_hashes)
            elif isinstance(event, BlockRemoved):
                key = (event.group_idx, event.block_hashes[0])
                assert self.cached[key] > 0, "a block removed that was never stored"
                self.cached[key] -= 1
                self.num_removed += 1
            else:
                assert isinstance(event, AllBlocksCleared)
                self.cached.clear()
        self.cached = +self.cached


def vllm_hash_of(request: Request, num_blocks: int, block_size: int, hasher: VllmBlockHasher) -> int:
    parent = None
    for i in range(num_blocks):
        parent = hasher.hash_block_tokens(parent, [request.token_id(p) for p in range(i * block_size, (i + 1) * block_size)])
    return external_block_hash(parent)


def pool_as_vllm_hashes(sim: Simulation) -> Counter:
    """The pool's cached blocks under vLLM's hashes, worked out from scratch: each block's prefix
    found among the requests by the engine's own hash, then hashed from its tokens."""
    config, hasher = sim.config, VllmBlockHasher(sim.config.prefix_caching_hash_algo)
    num_groups = len(config.kv_cache_group_specs)
    where = {}
    for request in known_requests(sim):
        for index, block_hash in enumerate(request.block_hashes):
            for group_id in range(num_groups):
                key = block_hash if num_groups == 1 else group_hash(block_hash, group_id)
                where.setdefault(key, (request, index, group_id))
    expected = Counter()
    for key in cached_blocks(sim).values():
        request, index, group_id = where[key]
        expected[(group_id, vllm_hash_of(request, index + 1, config.block_size, hasher))] += 1
    return expected


def test_a_subscriber_holds_exactly_the_pools_cached_blocks_after_every_step():
    sim = simulation()
    batcher, subscriber = KVEventBatcher(sim.config, sim.request), Subscriber()
    for record in sim.records(max_steps=400):
        batch = batcher.batch(record, record.clock_s_after)
        if batch is not None:
            subscriber.apply(batch)
        if record.step % 25 == 0:
            assert subscriber.cached == pool_as_vllm_hashes(sim)
    assert subscriber.cached == pool_as_vllm_hashes(sim)
    assert subscriber.num_stored > 100 and subscriber.num_removed > 20  # the pool was too small: evictions


def test_stored_blocks_carry_vllms_hashes_tokens_and_parent():
    sim = simulation()
    batcher, hasher = KVEventBatcher(sim.config, sim.request), VllmBlockHasher()
    num_checked = 0
    for record in sim.records(max_steps=200):
        engine_stores = [e for e in record.kv_events if isinstance(e, EngineBlockStored)]
        batch = batcher.batch(record, 0.0)
        stored = [e for e in (batch.events if batch else []) if isinstance(e, BlockStored)]
        assert sum(len(e.block_hashes) for e in stored) == len(engine_stores)
        for event in stored:
            assert event.block_size == 16 and event.medium == "GPU" and event.group_idx == 0
            assert event.kv_cache_spec_kind == "full_attention" and event.extra_keys == [None] * len(event.block_hashes)
            assert len(event.token_ids) == 16 * len(event.block_hashes)
        for engine_event in engine_stores:
            request, index = sim.request(engine_event.request_id), engine_event.block_index
            expected = vllm_hash_of(request, index + 1, 16, hasher)
            event = next(e for e in stored if expected in e.block_hashes)
            position = event.block_hashes.index(expected)
            parent = event.parent_block_hash if position == 0 else event.block_hashes[position - 1]
            assert parent == (vllm_hash_of(request, index, 16, hasher) if index else None)
            tokens = event.token_ids[16 * position:16 * (position + 1)]
            assert tokens == [request.token_id(p) for p in range(16 * index, 16 * index + 16)]
            num_checked += 1
    assert num_checked > 50


def test_one_event_per_request_and_step_as_cache_full_blocks():
    config = EngineConfig(block_size=4, num_gpu_blocks=32, max_model_len=64, max_num_seqs=4, max_num_batched_tokens=64)
    sim = Simulation(config, [Request("r0", list(range(10)), 4)])
    sim.enable_kv_events()
    batch = KVEventBatcher(sim.config, sim.request).batch(sim.step(), 1.5)
    (event,) = batch.events
    assert event.token_ids == list(range(8)) and event.parent_block_hash is None and len(event.block_hashes) == 2


def test_sha256_cbor_changes_every_hash():
    hashes = {}
    for algo in ("sha256", "sha256_cbor"):
        sim = simulation(prefix_caching_hash_algo=algo)
        batcher = KVEventBatcher(sim.config, sim.request)
        hashes[algo] = {h for r in sim.records(max_steps=50) for e in (batcher.batch(r, 0.0) or KVEventBatchless).events
                        if isinstance(e, BlockStored) for h in e.block_hashes}
    assert hashes["sha256"] and not hashes["sha256"] & hashes["sha256_cbor"]


def test_hybrid_groups_carry_their_group_kind_and_window():
    sim = simulation(kv_cache_groups="full_attention,sliding_window:64")
    batcher, subscriber = KVEventBatcher(sim.config, sim.request), Subscriber()
    kinds = set()
    for record in sim.records(max_steps=300):
        batch = batcher.batch(record, 0.0)
        if batch is None:
            continue
        subscriber.apply(batch)
        for event in batch.events:
            if isinstance(event, BlockStored):
                kinds.add((event.group_idx, event.kv_cache_spec_kind, event.kv_cache_spec_sliding_window))
            elif isinstance(event, BlockRemoved):
                assert event.group_idx in (0, 1)
    assert kinds == {(0, "full_attention", None), (1, "sliding_window", 64)}
    assert subscriber.cached == pool_as_vllm_hashes(sim)


def test_lookahead_hashes_carry_their_lookahead_tokens():
    sim = simulation(speculative_config=SpeculativeConfig("eagle", 3))
    batcher = KVEventBatcher(sim.config, sim.request)
    assert batcher.num_lookahead_tokens == 1
    for record in sim.records(max_steps=100):
        for event in (batcher.batch(record, 0.0) or KVEventBatchless).events:
            if isinstance(event, BlockStored):
                assert len(event.lookahead_token_ids) == len(event.block_hashes)
                assert all(len(tokens) == 1 for tokens in event.lookahead_token_ids)
                return
    pytest.fail("no block was stored")


def test_a_resync_after_a_step_back_tells_what_is_cached_then():
    sim = simulation()
    batcher, subscriber = KVEventBatcher(sim.config, sim.request), Subscriber()
    for record in sim.records(max_steps=60):
        subscriber.apply(batcher.batch(record, 0.0) or KVEventBatchless)
    state = sim.snapshot()
    earlier = copy.deepcopy(subscriber.cached)
    for record in sim.records(max_steps=60):
        subscriber.apply(batcher.batch(record, 0.0) or KVEventBatchless)
    assert subscriber.cached != earlier
    sim.restore(state)
    resync = batcher.resync(cached_blocks(sim), known_requests(sim), 0.0)
    assert isinstance(resync.events[0], AllBlocksCleared)
    subscriber.apply(resync)
    assert subscriber.cached == earlier
    # ... and the steps after it go on from there.
    for record in sim.records(max_steps=40):
        subscriber.apply(batcher.batch(record, 0.0) or KVEventBatchless)
    assert subscriber.cached == pool_as_vllm_hashes(sim)


def test_two_blocks_holding_one_prefix_are_two_stores_and_survive_a_resync():
    # A full hit still computes the last token, so "b" recomputes the last block of the prompt "a"
    # cached: two blocks under one hash (vLLM's duplicates in `BlockHashToBlockMap`).
    config = EngineConfig(block_size=4, num_gpu_blocks=32, max_model_len=64, max_num_seqs=4, max_num_batched_tokens=64)
    sim = Simulation(config, [Request("a", list(range(20)), 50), Request("b", list(range(20)), 50, arrival_time=0.5)])
    sim.enable_kv_events()
    batcher, subscriber = KVEventBatcher(config, sim.request), Subscriber()
    for record in sim.records(max_steps=60):
        subscriber.apply(batcher.batch(record, 0.0) or KVEventBatchless)
        if 2 in subscriber.cached.values():
            break
    assert 2 in subscriber.cached.values() and subscriber.cached == pool_as_vllm_hashes(sim)
    resynced = Subscriber()
    resynced.apply(batcher.resync(cached_blocks(sim), known_requests(sim), 0.0))
    assert resynced.cached == subscriber.cached
