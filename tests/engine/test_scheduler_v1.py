"""The vllm-v1 policy, one rule per test: docs/vllm-reference.md's "One V1 scheduling step" and
"KV cache manager and block pool", driven step by step the way scheduler_core/sim/replay.py does.

Pools are tiny (blocks of 4 tokens, a handful of blocks) so each test can say exactly which
request needs which block in which step.
"""

import itertools

import pytest

from scheduler_core.engine.config import EngineConfig, VllmCompat
from scheduler_core.engine.policies import VllmV1Scheduler
from scheduler_core.engine.request import Request, RequestStatus

BLOCK_SIZE = 4
_token_offsets = itertools.count(1)


def make_scheduler(compat: dict | None = None, **settings) -> VllmV1Scheduler:
    """A small engine: 4-token blocks, prefix caching off unless a test turns it on."""
    config = dict(
        block_size=BLOCK_SIZE,
        num_gpu_blocks=64,
        max_num_seqs=8,
        max_num_batched_tokens=32,
        max_model_len=64,
        enable_prefix_caching=False,
    )
    config.update(settings)
    return VllmV1Scheduler(EngineConfig(**config, compat=VllmCompat(**(compat or {}))))


def make_request(request_id, num_prompt_tokens=None, max_tokens=100, priority=0, prompt=None) -> Request:
    """A request with a prompt no other request shares (unless `prompt` is given); arrival order = creation order."""
    index = next(_token_offsets)
    if prompt is None:
        prompt = list(range(index * 10_000, index * 10_000 + num_prompt_tokens))
    return Request(request_id, prompt, max_tokens, arrival_time=float(index), priority=priority, arrival_index=index)


def add(scheduler, *requests):
    for request in requests:
        scheduler.add_request(request)
    return requests


def step(scheduler, now=0.0):
    """One engine iteration: schedule, then postprocess the fake model's output."""
    output = scheduler.schedule(now)
    result = scheduler.update_from_output(output, now)
    return output, result


def run_until_done(scheduler, max_steps=500):
    """Step until every request has finished; a scheduler that never gets there fails instead of hanging."""
    outputs = []
    while scheduler.has_unfinished_requests():
        assert len(outputs) < max_steps, f"requests still unfinished after {max_steps} steps"
        outputs.append(step(scheduler)[0])
    return outputs


def ids(requests):
    return [request.request_id for request in requests]


def block_table(scheduler, request_id):
    return scheduler.kv_cache_manager.get_block_ids(request_id)


def block_table_lengths(scheduler, request_id, num_steps):
    """How many blocks the request holds after each of the next `num_steps` steps."""
    lengths = []
    for _ in range(num_steps):
        step(scheduler)
        lengths.append(len(block_table(scheduler, request_id)))
    return lengths


# -- one V1 scheduling step: the running requests ------------------------------------------


def test_running_requests_are_scheduled_before_waiting_ones():
    """A decoding request gets its token before a newly arrived prompt takes the rest of the budget."""
    scheduler = make_scheduler(max_num_batched_tokens=8)
    add(scheduler, make_request("decoder", 8))
    step(scheduler)
    add(scheduler, make_request("newcomer", 8))

    output, _ = step(scheduler)

    assert list(output.num_scheduled_tokens.items()) == [("decoder", 1), ("newcomer", 7)]


def test_token_budget_caps_the_tokens_scheduled_in_every_step():
    """No step schedules more than max_num_batched_tokens, however many requests compete."""
    scheduler = make_scheduler(max_num_batched_tokens=16)
    add(scheduler, *(make_request(f"r{i}", n, max_tokens=3) for i, n in enumerate([10, 7, 20, 3, 12])))
    totals = [output.total_num_scheduled_tokens for output in run_until_done(scheduler)]

    assert max(totals) == 16
    assert all(total <= 16 for total in totals)


def test_chunked_prefill_splits_a_prompt_larger_than_the_budget():
    """With chunked prefill a 40-token prompt under a 16-token budget runs as chunks of 16, 16, 8."""
    scheduler = make_scheduler(max_num_batched_tokens=16)
    add(scheduler, make_request("long", 40))

    chunks = [step(scheduler)[0].num_scheduled_tokens["long"] for _ in range(3)]

    assert chunks == [16, 16, 8]


def test_num_computed_tokens_advances_when_scheduled_before_the_model_runs():
    """schedule() already counts this step's chunk as computed, so the next step continues after it."""
    scheduler = make_scheduler(max_num_batched_tokens=16)
    (request,) = add(scheduler, make_request("long", 40))

    scheduler.schedule(0.0)

    assert request.num_computed_tokens == 16


def test_a_token_is_sampled_only_once_the_prompt_is_fully_computed():
    """Prefill chunks that stop short of the end of the prompt produce no output token."""
    scheduler = make_scheduler(max_num_batched_tokens=16)
    (request,) = add(scheduler, make_request("long", 40))

    sampled = [step(scheduler)[1].sampled for _ in range(3)]

    assert sampled == [[], [], ["long"]]
    assert request.num_output_tokens == 1


def test_long_prefill_token_threshold_caps_each_prompt_chunk():
    """With two prompts competing, neither chunk exceeds long_prefill_token_threshold."""
    scheduler = make_scheduler(max_num_batched_tokens=64, long_prefill_token_threshold=8)
    add(scheduler, make_request("a", 40), make_request("b", 40))

    output, _ = step(scheduler)

    assert output.num_scheduled_tokens == {"a": 8, "b": 8}


def test_long_prefill_cap_is_lifted_for_a_request_that_is_alone():
    """vLLM 0.33: with one request running or waiting there is nobody to starve, so it takes the whole budget."""
    scheduler = make_scheduler(max_num_batched_tokens=64, long_prefill_token_threshold=8)
    add(scheduler, make_request("alone", 40))

    output, _ = step(scheduler)

    assert output.num_scheduled_tokens == {"alone": 40}


def test_long_prefill_cap_applies_to_a_lone_request_without_the_033_switch():
    """vLLM 0.10 (long_prefill_cap_lifted_when_alone=False) caps even a lone request's chunk."""
    scheduler = make_scheduler(
        compat={"long_prefill_cap_lifted_when_alone": False}, max_num_batched_tokens=64, long_prefill_token_threshold=8
    )
    add(scheduler, make_request("alone", 40))

    output, _ = step(scheduler)

    assert output.num_scheduled_tokens == {"alone": 8}


# -- preemption ----------------------------------------------------------------------------


def fill_pool_with_two_decoders(scheduler):
    """Two 8-token prompts fill a 4-block pool; the next decode of either needs a fifth block."""
    first, second = add(scheduler, make_request("first", 8), make_request("second", 8))
    step(scheduler)
    assert scheduler.kv_cache_manager.num_free_blocks == 0
    return first, second


def test_fcfs_preemption_takes_the_last_running_request():
    """When the first request needs a block, FCFS preempts the newest (last) running request."""
    scheduler = make_scheduler(num_gpu_blocks=5)
    fill_pool_with_two_decoders(scheduler)

    output, _ = step(scheduler)

    assert output.preempted_reqs == ["second"]
    assert output.num_scheduled_tokens == {"first": 1}
    assert ids(scheduler.running) == ["first"]


def test_preempted_request_returns_to_the_head_of_the_waiting_queue():
    """The victim goes back ahead of requests that were already waiting: it was admitted before them."""
    scheduler = make_scheduler(num_gpu_blocks=5)
    fill_pool_with_two_decoders(scheduler)
    add(scheduler, make_request("waiting", 4))

    step(scheduler)

    assert ids(scheduler.waiting) == ["second", "waiting"]


def test_preempted_request_is_reset_for_recompute():
    """V1 recomputes: the victim's blocks are freed, num_computed_tokens=0, num_preemptions+1, status PREEMPTED."""
    scheduler = make_scheduler(num_gpu_blocks=5)
    _, victim = fill_pool_with_two_decoders(scheduler)

    step(scheduler)

    assert victim.status == RequestStatus.PREEMPTED
    assert victim.num_computed_tokens == 0
    assert victim.num_preemptions == 1
    assert block_table(scheduler, "second") == []


def test_a_request_that_must_preempt_itself_is_not_scheduled():
    """FCFS: the last running request, unable to grow, is its own victim; the requests before it still run."""
    scheduler = make_scheduler(num_gpu_blocks=5)
    add(scheduler, make_request("short", 5), make_request("grower", 7))
    step(scheduler)
    step(scheduler)
    assert scheduler.kv_cache_manager.num_free_blocks == 0

    output, _ = step(scheduler)  # "grower" reaches its 9th token and needs a third block

    assert output.preempted_reqs == ["grower"]
    assert output.num_scheduled_tokens == {"short": 1}
    assert ids(scheduler.waiting) == ["grower"]


def test_no_waiting_request_is_admitted_in_a_step_that_preempted():
    """After a preemption the waiting scan is skipped, even if the head request would fit the freed blocks."""
    # Without full-prompt admission and with chunks capped at 4 tokens, the victim can resume
    # with one block, and its preemption frees two.
    scheduler = make_scheduler(
        compat={"full_prompt_admission": False}, num_gpu_blocks=5, long_prefill_token_threshold=BLOCK_SIZE
    )
    add(scheduler, make_request("a", 4), make_request("c", 8))
    step(scheduler)
    step(scheduler)

    preempting, _ = step(scheduler)
    assert preempting.preempted_reqs == ["c"]
    assert scheduler.kv_cache_manager.num_free_blocks == 2
    next_step, _ = step(scheduler)

    assert preempting.scheduled_resumed_reqs == [] and preempting.scheduled_new_reqs == []
    assert next_step.scheduled_resumed_reqs == ["c"]


# -- the waiting requests ------------------------------------------------------------------


def test_max_num_seqs_caps_the_running_batch():
    """Admission stops once max_num_seqs requests are running, even with budget and blocks to spare."""
    scheduler = make_scheduler(max_num_seqs=2)
    add(scheduler, *(make_request(f"r{i}", 4) for i in range(4)))

    output, _ = step(scheduler)

    assert output.scheduled_new_reqs == ["r0", "r1"]
    assert ids(scheduler.running) == ["r0", "r1"]
    assert ids(scheduler.waiting) == ["r2", "r3"]


def admit_without_chunking(compat):
    """Prompts of 20, 20, 8, 20, 4, 4 tokens against a 32-token budget with chunked prefill off."""
    scheduler = make_scheduler(compat=compat, enable_chunked_prefill=False, max_num_batched_tokens=32, max_model_len=32)
    add(scheduler, *(make_request(rid, n) for rid, n in zip("ABCDEF", [20, 20, 8, 20, 4, 4])))
    output = scheduler.schedule(0.0)
    return scheduler, output


def test_without_chunking_a_prompt_larger_than_the_remaining_budget_stops_the_scan():
    """vLLM 0.33: a prompt that does not fit whole stops admission; nothing behind it is tried."""
    scheduler, output = admit_without_chunking({})

    assert output.num_scheduled_tokens == {"A": 20}
    assert ids(scheduler.waiting) == ["B", "C", "D", "E", "F"]


def test_without_chunking_the_010_scan_skips_a_prompt_that_does_not_fit():
    """vLLM 0.10 (unchunked_prompt_blocks_queue=False): a prompt too big for the budget is skipped and later ones are admitted."""
    _, output = admit_without_chunking({"unchunked_prompt_blocks_queue": False})

    assert output.num_scheduled_tokens == {"A": 20, "C": 8, "E": 4}


def test_skipped_requests_return_to_the_head_of_the_waiting_queue_in_order():
    """Requests skipped in a scan go back ahead of the ones never reached, in their original order."""
    scheduler, _ = admit_without_chunking({"unchunked_prompt_blocks_queue": False})

    assert ids(scheduler.waiting) == ["B", "D", "F"]


def test_full_prompt_admission_requires_free_blocks_for_the_whole_prompt():
    """vLLM 0.33: a prompt whose first chunk fits but whose whole prompt does not is not admitted."""
    scheduler = make_scheduler(num_gpu_blocks=11, max_num_batched_tokens=16)
    add(scheduler, make_request("resident", 16))
    step(scheduler)
    add(scheduler, make_request("big", 24))  # 6 blocks; 5 are free, the 15-token first chunk needs 4

    output, _ = step(scheduler)

    assert output.scheduled_new_reqs == []
    assert ids(scheduler.waiting) == ["big"]


def test_first_chunk_admission_without_the_033_switch():
    """vLLM 0.10 (full_prompt_admission=False) admits a prompt as soon as its first chunk fits."""
    scheduler = make_scheduler(compat={"full_prompt_admission": False}, num_gpu_blocks=11, max_num_batched_tokens=16)
    add(scheduler, make_request("resident", 16))
    step(scheduler)
    add(scheduler, make_request("big", 24))

    output, _ = step(scheduler)

    assert output.scheduled_new_reqs == ["big"]
    assert output.num_scheduled_tokens["big"] == 15


def test_a_waiting_request_that_does_not_fit_blocks_the_ones_behind_it():
    """Head-of-line blocking: when allocate_slots fails for the head, smaller requests behind it wait too."""
    scheduler = make_scheduler(num_gpu_blocks=5)
    add(scheduler, make_request("resident", 8))
    step(scheduler)
    add(scheduler, make_request("big", 12), make_request("small", 4))  # 3 blocks needed, 2 free; 1 would do

    output, _ = step(scheduler)

    assert output.scheduled_new_reqs == []
    assert ids(scheduler.waiting) == ["big", "small"]


# -- priority scheduling -------------------------------------------------------------------


def test_priority_waiting_queue_orders_by_priority_then_arrival():
    """Lower priority value is admitted first; equal priorities go in arrival order."""
    scheduler = make_scheduler(scheduling_order="priority", max_num_seqs=1)
    add(
        scheduler,
        make_request("p3", 4, max_tokens=1, priority=3),
        make_request("p1-early", 4, max_tokens=1, priority=1),
        make_request("p2", 4, max_tokens=1, priority=2),
        make_request("p1-late", 4, max_tokens=1, priority=1),
    )

    admitted = [step(scheduler)[0].scheduled_new_reqs for _ in range(4)]

    assert admitted == [["p1-early"], ["p1-late"], ["p2"], ["p3"]]


def test_priority_preemption_takes_the_lowest_priority_running_request():
    """The victim is the running request with the largest (priority, arrival), not the last one."""
    scheduler = make_scheduler(scheduling_order="priority", num_gpu_blocks=6)
    add(scheduler, make_request("urgent", 7, priority=0), make_request("background", 4, priority=2))
    step(scheduler)
    add(scheduler, make_request("normal", 4, priority=1))
    step(scheduler)
    assert ids(scheduler.running) == ["urgent", "background", "normal"]
    assert scheduler.kv_cache_manager.num_free_blocks == 0

    output, _ = step(scheduler)  # "urgent" needs its third block

    assert output.preempted_reqs == ["background"]
    assert ids(scheduler.running) == ["urgent", "normal"]


def test_high_priority_arrival_into_a_full_engine_preempts_lower_priority_work():
    """A high-priority request admitted last is not the victim: the low-priority one gives up its blocks."""
    scheduler = make_scheduler(scheduling_order="priority", num_gpu_blocks=5)
    add(scheduler, make_request("low", 6, priority=5))
    step(scheduler)
    add(scheduler, make_request("high", 4, priority=0))
    step(scheduler)
    step(scheduler)
    assert scheduler.kv_cache_manager.num_free_blocks == 0

    output, _ = step(scheduler)  # "low" needs its third block; under FCFS "high" (the newest) would go

    assert output.preempted_reqs == ["low"]
    assert output.num_scheduled_tokens == {"high": 1}
    assert ids(scheduler.running) == ["high"]


def priority_engine_where_the_lowest_priority_request_must_preempt_itself(compat):
    """Running [a (prio 0), b (prio 5), c (prio 1)], pool full; b is next to need a block."""
    scheduler = make_scheduler(compat=compat, scheduling_order="priority", num_gpu_blocks=7)
    add(scheduler, make_request("a", 4, priority=0), make_request("b", 6, priority=5))
    step(scheduler)
    add(scheduler, make_request("c", 4, priority=1))
    step(scheduler)
    step(scheduler)
    assert ids(scheduler.running) == ["a", "b", "c"]
    assert scheduler.kv_cache_manager.num_free_blocks == 0
    return scheduler


def test_priority_request_that_preempts_itself_lets_higher_priority_ones_behind_it_run():
    """vLLM 0.33: the requests after a self-preempted one rank higher and still get their tokens."""
    scheduler = priority_engine_where_the_lowest_priority_request_must_preempt_itself({})

    output, _ = step(scheduler)

    assert output.preempted_reqs == ["b"]
    assert output.num_scheduled_tokens == {"a": 1, "c": 1}


def test_priority_request_that_preempts_itself_stops_the_running_scan_before_033():
    """vLLM 0.10-0.32 (self_preempted_scan_continues=False): a request that preempts itself ends the running scan."""
    scheduler = priority_engine_where_the_lowest_priority_request_must_preempt_itself(
        {"self_preempted_scan_continues": False}
    )

    output, _ = step(scheduler)

    assert output.preempted_reqs == ["b"]
    assert output.num_scheduled_tokens == {"a": 1}


# -- finishing -----------------------------------------------------------------------------


def test_request_finishes_at_max_tokens_and_frees_its_blocks():
    """The step that samples the max_tokens-th token finishes the request and returns its blocks."""
    scheduler = make_scheduler(num_gpu_blocks=9)
    (request,) = add(scheduler, make_request("r", 6, max_tokens=3))

    finished = [ids(step(scheduler)[1].finished) for _ in range(3)]

    assert finished == [[], [], ["r"]]
    assert request.num_output_tokens == 3
    assert request.status.is_finished
    assert scheduler.running == []
    assert block_table(scheduler, "r") == []
    assert scheduler.kv_cache_manager.num_free_blocks == 8


def test_request_reaching_max_tokens_is_length_capped_like_vllm():
    """vLLM 0.33 check_stop: num_output_tokens >= max_tokens gives status FINISHED_LENGTH_CAPPED."""
    scheduler = make_scheduler()
    (request,) = add(scheduler, make_request("r", 6, max_tokens=1))

    step(scheduler)

    assert request.status == RequestStatus.FINISHED_LENGTH_CAPPED


def test_request_reaching_max_model_len_finishes_length_capped():
    """A request whose prompt + output reaches max_model_len stops there, FINISHED_LENGTH_CAPPED."""
    scheduler = make_scheduler(max_model_len=16)
    (request,) = add(scheduler, make_request("r", 12, max_tokens=100))

    run_until_done(scheduler)

    assert request.status == RequestStatus.FINISHED_LENGTH_CAPPED
    assert request.num_tokens == 16
    assert request.num_output_tokens == 4


# -- KV cache manager and block pool -------------------------------------------------------


def test_chunk_allocates_blocks_up_to_cdiv_of_computed_plus_new_tokens():
    """A 10-token prompt in chunks of 6 holds cdiv(6, 4)=2 blocks, then cdiv(10, 4)=3."""
    scheduler = make_scheduler(max_num_batched_tokens=6, max_num_seqs=4)
    add(scheduler, make_request("r", 10))

    assert block_table_lengths(scheduler, "r", 2) == [2, 3]


def test_decode_takes_a_new_block_only_when_the_last_one_is_full():
    """A 7-token prompt fits 2 blocks; the 8th token still fits them, the 9th needs a third."""
    scheduler = make_scheduler()
    add(scheduler, make_request("r", 7))

    assert block_table_lengths(scheduler, "r", 3) == [2, 2, 3]


def test_blocks_are_allocated_from_the_head_of_the_free_queue():
    """A fresh pool hands out blocks 1, 2, 3, ... in order (block 0 is the reserved null block)."""
    scheduler = make_scheduler()
    add(scheduler, make_request("a", 8), make_request("b", 5))

    step(scheduler)

    assert block_table(scheduler, "a") == [1, 2]
    assert block_table(scheduler, "b") == [3, 4]


def test_freed_cached_blocks_go_to_the_tail_of_the_free_queue_in_reverse():
    """A finished request frees its full blocks tail first to the end of the queue: the chain's head is evicted last."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    add(scheduler, make_request("r", 8, max_tokens=1))  # blocks 1 and 2, both full

    step(scheduler)

    assert scheduler.kv_cache_manager.block_pool.free_queue_order()[-2:] == [2, 1]


def test_freed_unhashed_blocks_are_reused_first():
    """vLLM 0.33: a freed block without a hash can never be hit, so it goes to the front of the queue."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    add(scheduler, make_request("r", 6, max_tokens=1))  # block 1 full and hashed, block 2 partial

    step(scheduler)

    assert scheduler.kv_cache_manager.block_pool.free_queue_order() == [2, 3, 4, 5, 6, 7, 8, 1]


def test_010_appends_every_freed_block_to_the_tail():
    """vLLM 0.10 (unhashed_blocks_reused_first=False): freed blocks all go to the tail, hashed or not."""
    scheduler = make_scheduler(compat={"unhashed_blocks_reused_first": False}, enable_prefix_caching=True, num_gpu_blocks=9)
    add(scheduler, make_request("r", 6, max_tokens=1))

    step(scheduler)

    assert scheduler.kv_cache_manager.block_pool.free_queue_order() == [3, 4, 5, 6, 7, 8, 2, 1]


def test_prefix_cache_hit_covers_the_shared_full_blocks():
    """A second request sharing a 9-token prefix reuses its 2 full blocks: cached_tokens = 8."""
    scheduler = make_scheduler(enable_prefix_caching=True)
    shared = list(range(500, 509))
    add(scheduler, make_request("first", prompt=shared + [1, 2, 3]))
    step(scheduler)
    add(scheduler, make_request("second", prompt=shared + [7, 8, 9, 10]))

    output, _ = step(scheduler)

    assert output.num_cached_tokens["second"] == 8
    assert output.num_scheduled_tokens["second"] == 13 - 8


@pytest.mark.parametrize("prompt_len, cached", [(12, 8), (13, 12)])
def test_full_prefix_hit_still_recomputes_the_last_token(prompt_len, cached):
    """An identical prompt hits ((len - 1) // block_size) full blocks: the last token's logits must be computed."""
    scheduler = make_scheduler(enable_prefix_caching=True)
    prompt = list(range(700, 700 + prompt_len))
    add(scheduler, make_request("first", prompt=prompt))
    step(scheduler)
    add(scheduler, make_request("second", prompt=prompt))

    output, _ = step(scheduler)

    assert output.num_cached_tokens["second"] == cached == ((prompt_len - 1) // BLOCK_SIZE) * BLOCK_SIZE
    assert output.num_scheduled_tokens["second"] == prompt_len - cached


def test_shared_prefix_blocks_are_reference_counted_not_copied():
    """Two requests with the same prefix hold the same physical blocks, each with ref_cnt 2."""
    scheduler = make_scheduler(enable_prefix_caching=True)
    prompt = list(range(900, 909))
    add(scheduler, make_request("first", prompt=prompt))
    step(scheduler)
    add(scheduler, make_request("second", prompt=prompt))
    step(scheduler)

    shared = block_table(scheduler, "first")[:2]
    assert block_table(scheduler, "second")[:2] == shared
    assert [scheduler.kv_cache_manager.block_pool.ref_cnt[b] for b in shared] == [2, 2]


def test_freed_cached_blocks_remain_hittable():
    """After its owner finishes, a full block keeps its hash in the free queue and a new request hits it."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    prompt = list(range(300, 309))
    add(scheduler, make_request("owner", prompt=prompt, max_tokens=1))
    step(scheduler)
    assert scheduler.kv_cache_manager.num_free_blocks == 8
    add(scheduler, make_request("later", prompt=prompt))

    output, _ = step(scheduler)

    assert output.num_cached_tokens["later"] == 8


def test_a_hit_on_a_free_cached_block_takes_it_off_the_free_queue():
    """Reusing an evictable block takes a reference on it, so it is no longer free or evictable."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    prompt = list(range(300, 309))
    add(scheduler, make_request("owner", prompt=prompt, max_tokens=1))
    step(scheduler)
    hit_blocks = set(scheduler.kv_cache_manager.block_pool.free_queue_order()[-2:])
    add(scheduler, make_request("later", prompt=prompt))

    scheduler.schedule(0.0)

    assert set(block_table(scheduler, "later")[:2]) == hit_blocks
    assert not hit_blocks & set(scheduler.kv_cache_manager.block_pool.free_queue_order())
    assert scheduler.kv_cache_manager.num_free_blocks == 8 - 3


def test_reallocating_a_freed_cached_block_evicts_it_tail_of_chain_first():
    """Taking a cached block for a new allocation drops its hash; the chain's last block goes before its first."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    prompt = list(range(300, 309))
    add(scheduler, make_request("owner", prompt=prompt, max_tokens=1))
    step(scheduler)
    # 8 free: the unhashed block first, 5 never used, then the owner's 2 cached blocks (tail first).
    add(scheduler, make_request("filler", 28, max_tokens=1))  # takes 7 blocks: evicts the chain's second block only
    step(scheduler)
    add(scheduler, make_request("later", prompt=prompt))

    output, _ = step(scheduler)

    assert output.num_cached_tokens["later"] == 4


def test_kv_usage_counts_evictable_cached_blocks_as_free():
    """KV usage = 1 - free / (num_gpu_blocks - 1): in-use blocks count, cached-but-free ones do not."""
    scheduler = make_scheduler(enable_prefix_caching=True, num_gpu_blocks=9)
    kv = scheduler.kv_cache_manager
    add(scheduler, make_request("r", 8, max_tokens=2))
    step(scheduler)
    assert kv.usage == pytest.approx(2 / 8)

    step(scheduler)

    assert kv.block_pool.num_cached_blocks == 2
    assert kv.usage == 0.0
