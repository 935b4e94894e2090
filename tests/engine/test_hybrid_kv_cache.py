"""vLLM 0.33.0's hybrid KV cache manager, one rule per test: KV cache groups sharing one block pool,
a sliding window giving blocks back while a request runs, a prefix hit that must hold in every
group (the coordinator's fixed-point search), and Mamba's fixed state per request.

Blocks of 4 tokens and a handful of them, so each test can say which block goes where.
"""

import pytest

from scheduler_core.engine.block_pool import NULL_BLOCK_ID, BlockPool
from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.hybrid_kv_cache_manager import HybridKVCacheManager
from scheduler_core.engine.kv_cache import KVCache, KVCacheView
from scheduler_core.engine.kv_cache_coordinator import HybridKVCacheCoordinator
from scheduler_core.engine.kv_cache_groups import KVCacheGroupSpec
from scheduler_core.engine.kv_cache_manager import KVCacheManager
from scheduler_core.engine.kv_events import BlocksLeftWindow
from scheduler_core.engine.policies import VllmV1Scheduler
from scheduler_core.engine.request import Request
from scheduler_core.engine.single_type_kv_cache_manager import group_hash
from scheduler_core.errors import ConfigError

BLOCK_SIZE = 4
FULL = KVCacheGroupSpec()


def sliding(window):
    return KVCacheGroupSpec("sliding_window", window)


def manager(*groups, num_blocks=32, caching=True, in_flight=16, max_model_len=64) -> HybridKVCacheManager:
    return HybridKVCacheManager(groups, num_blocks, BLOCK_SIZE, max_model_len, caching, in_flight)


def request(rid, num_tokens, first_token=0, max_tokens=50):
    return Request(rid, list(range(first_token, first_token + num_tokens)), max_tokens)


def run_chunk(kv, req, num_new_tokens, **kwargs):
    """allocate_slots, then the step's tokens count as computed (as the scheduler advances them)."""
    blocks = kv.allocate_slots(req, num_new_tokens, **kwargs)
    assert blocks is not None
    req.num_computed_tokens += num_new_tokens
    return blocks


def test_default_engine_keeps_the_single_group_manager():
    scheduler = VllmV1Scheduler(EngineConfig())
    assert type(scheduler.kv_cache_manager) is KVCacheManager
    assert "kv_cache_groups" not in EngineConfig().to_dict()


def test_hybrid_manager_satisfies_the_kv_cache_protocol():
    assert isinstance(manager(FULL, sliding(8)), KVCache)


def test_each_group_takes_its_own_blocks_from_the_one_pool():
    kv = manager(FULL, sliding(8))
    req = request("a", 10)
    run_chunk(kv, req, 10)
    full_table, window_table = kv.get_group_block_ids("a")
    assert len(full_table) == len(window_table) == 3
    assert not set(full_table) & set(window_table)
    assert kv.num_free_blocks == 31 - 6


def test_sliding_window_gives_back_blocks_that_left_the_window_as_null_slots():
    kv = manager(FULL, sliding(5), caching=False)
    req = request("a", 12)
    run_chunk(kv, req, 12)
    assert NULL_BLOCK_ID not in kv.get_group_block_ids("a")[1]
    # The next allocate_slots sees 12 computed tokens: the next token attends to tokens 8..12, so
    # tokens 0..7 (blocks 0 and 1) left the window and go back before any new block is taken.
    free_before = kv.num_free_blocks
    run_chunk(kv, req, 1)
    window_table = kv.get_group_block_ids("a")[1]
    assert window_table[:2] == [NULL_BLOCK_ID, NULL_BLOCK_ID]
    assert kv.num_free_blocks == free_before + 2 - 2  # two given back, one new block in each group
    assert len(kv.get_group_block_ids("a")[0]) == 4  # full attention keeps every block


def test_blocks_leave_the_window_even_when_the_allocation_then_fails():
    kv = manager(FULL, sliding(5), caching=False, num_blocks=7)
    req = request("a", 12)
    run_chunk(kv, req, 12)  # 6 blocks: the pool is empty
    assert kv.allocate_slots(req, 8) is None  # 2 blocks back, but the chunk needs 2 + 2
    assert kv.num_free_blocks == 2
    assert kv.get_group_block_ids("a")[1][:2] == [NULL_BLOCK_ID, NULL_BLOCK_ID]


def test_in_flight_tokens_do_not_move_the_window():
    kv = manager(FULL, sliding(5), caching=False)
    req = request("a", 12)
    run_chunk(kv, req, 12)
    req.num_in_flight_tokens = 12  # async scheduling: the prompt's step is still running
    run_chunk(kv, req, 1)
    assert NULL_BLOCK_ID not in kv.get_group_block_ids("a")[1]


def test_admission_gate_counts_a_window_group_at_most_what_one_request_holds():
    # A 40-token prompt needs 10 blocks per group; the window group holds at most
    # cdiv(5 - 1 + 4, 4) + 1 = 3 at once (in flight: 4 tokens), so the gate asks for 10 + 3.
    kv = manager(FULL, sliding(5), caching=False, num_blocks=14, in_flight=4)
    req = request("a", 40)
    assert kv.allocate_slots(req, 4, full_sequence_must_fit=True) is not None
    kv_short = manager(FULL, sliding(5), caching=False, num_blocks=13, in_flight=4)
    assert kv_short.allocate_slots(request("b", 40), 4, full_sequence_must_fit=True) is None


def test_prefix_hit_holds_in_every_group_with_null_slots_below_the_window():
    kv = manager(FULL, sliding(8))
    first = request("a", 16)
    run_chunk(kv, first, 16)
    first_tables = kv.get_group_block_ids("a")
    kv.free(first)
    second = request("b", 16)
    hit, num_tokens = kv.get_computed_blocks(second)
    # 15 tokens may hit (the last is recomputed): 3 blocks. The window group needs only the
    # cdiv(8 - 1, 4) = 2 blocks before the hit's end; the first is a null slot.
    assert num_tokens == 12 and len(hit) == 3
    assert hit.blocks[0] == first_tables[0][:3]
    assert hit.blocks[1] == [NULL_BLOCK_ID] + first_tables[1][1:3]
    run_chunk(kv, second, 4, num_new_computed_tokens=12, new_computed_blocks=hit)
    assert kv.get_group_block_ids("b")[1][:3] == [NULL_BLOCK_ID] + first_tables[1][1:3]


def cache(pool, group_id, hashes, block_ids):
    """Cache free blocks under a group's keys, as a finished request leaves them (evictable)."""
    pool.cache_full_blocks(block_ids, [group_hash(h, group_id) for h in hashes])


def test_coordinator_shortens_the_hit_until_every_kind_agrees():
    # Full attention has 6 blocks cached; the window group (window 8: 2 blocks in a row needed)
    # lacks block 2; the chunked-local group (chunks of 8) lacks block 4. A window hit at 20 tokens
    # is cut to 16 by the chunk group, which the window group cannot end at (block 2 is missing):
    # it falls back to 8, where both agree. One round would have answered 16.
    pool = BlockPool(64, True)
    specs = (FULL, sliding(8), KVCacheGroupSpec("chunked_local", 8))
    coordinator = HybridKVCacheCoordinator(specs, pool, BLOCK_SIZE, 64, True, 16)
    hashes = [101, 102, 103, 104, 105, 106]
    cache(pool, 0, hashes, [1, 2, 3, 4, 5, 6])
    cache(pool, 1, [101, 102, 104, 105], [11, 12, 14, 15])
    cache(pool, 2, [101, 102, 103, 104, 106], [21, 22, 23, 24, 26])
    hit, num_tokens = coordinator.find_longest_cache_hit(hashes, 20)
    assert num_tokens == 8
    assert hit.blocks[0] == [1, 2]
    assert hit.blocks[1] == [11, 12]


def test_a_block_cached_in_one_group_never_serves_another():
    pool = BlockPool(16, True)
    coordinator = HybridKVCacheCoordinator((FULL, sliding(8)), pool, BLOCK_SIZE, 64, True, 16)
    cache(pool, 0, [7, 8, 9], [1, 2, 3])
    _, num_tokens = coordinator.find_longest_cache_hit([7, 8, 9], 12)
    assert num_tokens == 0


def test_mamba_group_holds_one_block_per_request_whatever_its_length():
    kv = manager(FULL, KVCacheGroupSpec("mamba"), caching=False)
    req = request("a", 30)
    run_chunk(kv, req, 30)
    run_chunk(kv, req, 10)
    full_table, state_table = kv.get_group_block_ids("a")
    assert len(full_table) == 10 and len(state_table) == 1


def test_mamba_with_prefix_caching_is_refused_by_name():
    with pytest.raises(ConfigError) as error:
        EngineConfig(kv_cache_groups=({"kind": "mamba"}, {"kind": "full_attention"}), enable_prefix_caching=True)
    assert error.value.field == "enable_prefix_caching"


def test_groups_have_one_spelling_whether_given_as_text_or_as_tables():
    tables = EngineConfig(kv_cache_groups=[{"kind": "full_attention"}, {"kind": "sliding_window", "window": 128}])
    text = EngineConfig(kv_cache_groups="full_attention, sliding_window:128")
    assert tables == text and text.kv_cache_groups == "full_attention,sliding_window:128"
    assert text.kv_cache_group_specs == (FULL, sliding(128))
    assert EngineConfig.from_dict(text.to_dict()) == text


def test_bad_window_is_refused_by_name():
    with pytest.raises(ConfigError) as error:
        EngineConfig(kv_cache_groups=({"kind": "sliding_window", "window": 0},))
    assert error.value.field == "kv_cache_groups.window"


def test_free_returns_every_group_and_the_view_sees_all_blocks():
    kv = manager(FULL, sliding(5))
    req = request("a", 12)
    run_chunk(kv, req, 12)
    assert len(KVCacheView(kv).block_table("a")) == 6
    kv.free(req)
    assert kv.num_free_blocks == 31
    assert kv.get_group_block_ids("a") == ([], [])


def test_the_view_shows_each_groups_table_with_its_null_slots():
    kv = manager(FULL, sliding(5), caching=False)
    req = request("a", 12)
    run_chunk(kv, req, 12)
    run_chunk(kv, req, 1)
    full_table, window_table = KVCacheView(kv).group_block_tables("a")
    assert len(full_table) == 4 and window_table[:2] == (NULL_BLOCK_ID, NULL_BLOCK_ID)
    single = KVCacheManager(16, BLOCK_SIZE, 64, False)
    single.allocate_slots(request("b", 6), 6)
    assert KVCacheView(single).group_block_tables("b") == (KVCacheView(single).block_table("b"),)


def test_blocks_left_window_is_an_event():
    kv = manager(FULL, sliding(5), caching=False)
    kv.enable_events()
    req = request("a", 12)
    run_chunk(kv, req, 12)
    kv.take_events()
    run_chunk(kv, req, 1)
    left = [event for event in kv.take_events() if isinstance(event, BlocksLeftWindow)]
    assert len(left) == 1 and left[0].group_id == 1 and len(left[0].to_head) == 2 and left[0].first_index == 0


def test_blocks_left_window_say_which_logical_blocks_they_were():
    # Window 5, blocks of 4: at 16 tokens computed, tokens 0-11 are out of the window, so the third
    # block (logical 2) leaves after the first two did.
    kv = manager(FULL, sliding(5), caching=False)
    kv.enable_events()
    req = request("a", 20)
    run_chunk(kv, req, 12)
    run_chunk(kv, req, 4)
    kv.take_events()
    run_chunk(kv, req, 1)
    (left,) = [event for event in kv.take_events() if isinstance(event, BlocksLeftWindow)]
    assert left.first_index == 2 and len(left.block_ids) == 1
    assert KVCacheView(kv).group_block_tables("a")[1][:3] == (NULL_BLOCK_ID,) * 3


def test_scheduler_runs_a_hybrid_workload_to_the_end_and_gets_every_block_back():
    config = EngineConfig(block_size=BLOCK_SIZE, num_gpu_blocks=24, max_num_seqs=4, max_num_batched_tokens=16,
                          max_model_len=64, kv_cache_groups=({"kind": "full_attention"}, {"kind": "sliding_window", "window": 6}))
    scheduler = VllmV1Scheduler(config)
    shared = list(range(100, 112))
    for i in range(6):
        scheduler.add_request(Request(f"r{i}", shared + [i] * (3 + i), 6 + i, arrival_time=float(i), arrival_index=i))
    for _ in range(300):
        if not scheduler.has_unfinished_requests():
            break
        output = scheduler.schedule()
        scheduler.update_from_output(output, 0.0)
    assert not scheduler.has_unfinished_requests()
    assert scheduler.kv_cache_manager.num_free_blocks == 23


def test_a_chunked_local_hit_keeps_its_null_slots_untouched():
    # Chunks of 5 tokens, blocks of 4: for a 16-token candidate the hit starts at block 3 (the
    # chunk holding token 15 starts at 15); block 3 is not cached, so the hit is 12 tokens of null
    # slots. Admitting it touches nothing: the null block is in no queue.
    pool = BlockPool(16, True)
    coordinator = HybridKVCacheCoordinator((KVCacheGroupSpec("chunked_local", 5),), pool, BLOCK_SIZE, 64, True, 16)
    hit, num_tokens = coordinator.find_longest_cache_hit([1, 2, 3, 4, 5], 16)
    assert hit.blocks == ([NULL_BLOCK_ID] * 3,) and num_tokens == 12
    free_before = pool.num_free_blocks
    assert coordinator.allocate_new_computed_blocks("a", hit, 12) == []
    assert pool.num_free_blocks == free_before
    assert coordinator.get_blocks("a") == ([NULL_BLOCK_ID] * 3,)
