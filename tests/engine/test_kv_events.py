"""The KV cache's typed event stream, drained into each step's record, and the read-only view.

The app redraws only what changed from these events and reads everything else through
`Simulation.kv_view()`; so the events must say exactly how the block tables and the prefix cache
changed, step by step, whichever allocator and engine loop runs.
"""

import copy

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.contiguous import ContiguousKVCacheManager
from scheduler_core.engine.kv_cache import KVCache
from scheduler_core.engine.kv_cache_manager import KVCacheManager
from scheduler_core.engine.kv_events import (
    BlockRemoved,
    BlocksAllocated,
    BlocksFreed,
    BlockStored,
    RegionReleased,
    RegionReserved,
)
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import synthetic_workload

# A pool too small for the burst, so requests are preempted; shared prefixes, so blocks are hit.
ENGINES = {
    "paged-prefix-caching": dict(enable_prefix_caching=True),
    "paged-async": dict(enable_prefix_caching=True, async_scheduling=True),
    "paged-v0-swap": dict(policy="vllm-v0", preemption_mode="swap", num_cpu_blocks=64, enable_prefix_caching=False),
    "contiguous": dict(kv_allocator="contiguous", num_gpu_blocks=400, enable_prefix_caching=False),
}


def simulation(engine: str) -> Simulation:
    config = EngineConfig(**{"num_gpu_blocks": 160, "max_num_seqs": 16, "max_num_batched_tokens": 1024,
                             "max_model_len": 1024, **ENGINES[engine]})
    caching = config.enable_prefix_caching
    workload = synthetic_workload(40, arrival_rate=float("inf"), prompt_mean=200, output_mean=200, seed=3,
                                  max_prompt_len=400, max_output_len=400, shared_prefix_len=64 if caching else 0,
                                  num_shared_prefixes=4 if caching else 1)
    return Simulation(config, workload)


def apply_table_events(tables: dict[str, list[int]], events) -> None:
    """What a worker does with the record: grow a table by the blocks it gained, drop a released one."""
    for event in events:
        if isinstance(event, (BlocksAllocated, RegionReserved)):
            tables.setdefault(event.request_id, []).extend(event.block_ids)
        elif isinstance(event, (BlocksFreed, RegionReleased)):
            tables.pop(event.request_id, None)


def test_events_are_off_unless_asked():
    sim = simulation("paged-prefix-caching")
    assert sim.scheduler.kv_cache_manager.kv_events is None
    assert all(record.kv_events == () for record in sim.records(max_steps=50))


@pytest.mark.parametrize("engine", list(ENGINES))
def test_each_step_drains_the_queue_into_its_record(engine):
    sim = simulation(engine)
    sim.enable_kv_events()
    kv = sim.scheduler.kv_cache_manager
    num_events = 0
    for record in sim.records():
        assert kv.kv_events == [], f"step {record.step}: events left on the queue after the step"
        num_events += len(record.kv_events)
    assert num_events > 0


@pytest.mark.parametrize("engine", list(ENGINES))
def test_the_records_block_table_changes_rebuild_the_managers_tables(engine):
    sim = simulation(engine)
    sim.enable_kv_events()
    tables: dict[str, list[int]] = {}
    num_preempted = 0
    for record in sim.records():
        apply_table_events(tables, record.kv_events)
        assert tables == {rid: list(table) for rid, table in sim.kv_view().block_tables.items() if table}, \
            f"step {record.step}"
        num_preempted += len(record.preempted)
    # The paged engines run out of blocks, so tables are also released by preemption mid-run.
    assert num_preempted > 0 or engine == "contiguous"
    assert tables == {}


def test_stored_and_removed_blocks_follow_the_prefix_cache():
    sim = simulation("paged-prefix-caching")
    sim.enable_kv_events()
    cached: dict[int, int] = {}
    num_hits = num_evictions = 0
    for record in sim.records():
        for event in record.kv_events:
            if isinstance(event, BlockStored):
                assert event.block_id not in cached
                cached[event.block_id] = event.block_hash
            elif isinstance(event, BlockRemoved):
                assert cached.pop(event.block_id) == event.block_hash
                num_evictions += 1
            elif isinstance(event, BlocksAllocated):
                num_hits += len(event.hit_blocks)
        flags = sim.kv_view().cached_flags()
        assert set(cached) == {block_id for block_id, flag in enumerate(flags) if flag}, f"step {record.step}"
    assert num_hits > 0 and num_evictions > 0


def test_a_freed_table_says_where_each_block_went():
    sim = simulation("paged-prefix-caching")
    sim.enable_kv_events()
    for record in sim.records():
        ref = sim.kv_view().ref_counts()
        for event in record.kv_events:
            if isinstance(event, BlocksFreed) and event.request_id in record.finished:
                assert all(ref[b] == 0 for b in event.to_head + event.to_tail_cached + event.to_tail)
                assert len(set(event.block_ids)) == len(event.block_ids)


def test_a_restored_snapshot_keeps_one_queue_for_pool_and_manager():
    sim = simulation("paged-prefix-caching")
    sim.enable_kv_events()
    list(sim.records(max_steps=30))
    state = sim.snapshot()
    tables = {rid: list(table) for rid, table in sim.kv_view().block_tables.items() if table}
    list(sim.records(max_steps=20))
    sim.restore(state)
    kv = sim.scheduler.kv_cache_manager
    assert kv.kv_events is kv.block_pool.kv_events == []
    for record in sim.records(max_steps=40):
        apply_table_events(tables, record.kv_events)
        assert tables == {rid: list(t) for rid, t in sim.kv_view().block_tables.items() if t}
        assert kv.kv_events == []
    clone = copy.deepcopy(kv)
    assert clone.kv_events is clone.block_pool.kv_events and clone.kv_events is not kv.kv_events


def test_both_allocators_satisfy_the_kv_cache_protocol():
    paged = KVCacheManager(64, 16, 1024, enable_caching=True)
    contiguous = ContiguousKVCacheManager(64, 16, 256)
    assert isinstance(paged, KVCache) and isinstance(contiguous, KVCache)
    assert paged.block_pool is not None and contiguous.block_pool is None


def test_the_view_of_an_allocator_without_block_state_shows_reservations_only():
    sim = simulation("contiguous")
    list(sim.records(max_steps=10))
    view = sim.kv_view()
    assert not view.has_block_state
    held = {b for table in view.block_tables.values() for b in table}
    assert held and view.ref_counts() == [int(b in held) for b in range(view.num_blocks)]
    assert view.cached_flags() == [0] * view.num_blocks and view.num_shared_blocks() == 0
    assert view.block_states([0, min(held)]) == {0: (0, 0), min(held): (1, 0)}


def test_the_view_cannot_change_the_cache():
    sim = simulation("paged-prefix-caching")
    list(sim.records(max_steps=10))
    view = sim.kv_view()
    rid = next(iter(view.block_tables))
    with pytest.raises(TypeError):
        view.block_tables[rid] = []  # type: ignore[index]
    view.ref_counts()[1] = 99
    assert sim.kv_view().ref_counts()[1] != 99
    assert view.block_table(rid) == tuple(sim.scheduler.kv_cache_manager.get_block_ids(rid))
