"""The other policies and options: vLLM V0's prefill-first loop, static batching, swap preemption,
and the contiguous (pre-PagedAttention) allocator, each checked through a whole `Simulation`."""

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.request import RequestStatus
from scheduler_core.sim.simulation import Simulation
from scheduler_core.utils import cdiv
from scheduler_core.workload.workload import RequestSpec, synthetic_workload, unique_prompt


def spec(index, num_prompt_tokens, max_tokens, arrival_time=0.0):
    return RequestSpec(f"r{index}", arrival_time, unique_prompt(index, num_prompt_tokens), max_tokens)


def chunk_ids(record):
    return [chunk.request_id for chunk in record.scheduled]


# -- vLLM V0: prefill-first ----------------------------------------------------------------

V0_CONFIG = EngineConfig(
    policy="vllm-v0",
    enable_chunked_prefill=False,
    num_gpu_blocks=400,
    max_num_seqs=16,
    max_num_batched_tokens=512,
    max_model_len=512,
)


def v0_records():
    workload = synthetic_workload(16, arrival_rate=60.0, prompt_mean=150, output_mean=30, seed=3, max_prompt_len=480)
    return list(Simulation(V0_CONFIG, workload).records())


def test_v0_step_that_admits_a_prefill_schedules_no_decodes():
    """Prefill-first: a step with any admission is all prefills; the running requests' decodes wait."""
    records = v0_records()
    admitting = [r for r in records if r.admitted or r.resumed]

    assert all(set(chunk_ids(r)) == set(r.admitted) | set(r.resumed) for r in admitting)
    assert all(chunk.kind == "prefill" for r in admitting for chunk in r.scheduled)
    # The rule was exercised: some admissions happened while other requests were running.
    assert any(r.num_running > len(r.admitted) + len(r.resumed) for r in admitting)


def test_v0_decodes_run_only_in_steps_without_a_prefill():
    """Every step that decodes decodes only: no prompt tokens share it."""
    records = v0_records()
    decoding = [r for r in records if r.num_decode_tokens]

    assert decoding
    assert all(r.num_prefill_tokens == 0 and not r.admitted for r in decoding)


def test_v0_long_prompt_stalls_running_decodes_for_a_step():
    """When a long prompt arrives, the running request gets no token in the step that prefills it."""
    workload = [spec(0, 16, 12), spec(1, 480, 2, arrival_time=0.015)]
    sim = Simulation(V0_CONFIG, workload)
    records = list(sim.records())
    stall = next(r for r in records if "r1" in r.admitted)

    assert chunk_ids(stall) == ["r1"]
    assert sim.request("r0").num_output_tokens == 12
    decoder_steps = [r.step for r in records if "r0" in chunk_ids(r)]
    assert stall.step - 1 in decoder_steps and stall.step + 1 in decoder_steps


# -- static batching -----------------------------------------------------------------------

STATIC_CONFIG = EngineConfig(policy="static", num_gpu_blocks=400, max_num_seqs=4, max_num_batched_tokens=2048)


def static_records():
    workload = synthetic_workload(14, arrival_rate=200.0, prompt_mean=100, output_mean=20, seed=5, max_prompt_len=400)
    return list(Simulation(STATIC_CONFIG, workload).records())


def test_static_admits_nothing_until_the_whole_batch_has_finished():
    """A new batch forms only once every member of the last one has finished."""
    records = static_records()

    for previous, record in zip(records, records[1:]):
        if record.admitted:
            assert previous.num_running == 0, f"step {record.step} admitted while a batch was running"
    # The rule was exercised: requests waited while a batch with free slots ran.
    assert any(r.num_waiting and 0 < r.num_running < STATIC_CONFIG.max_num_seqs for r in records)


def test_static_batch_drains_before_the_next_forms():
    """Between batch formations the number running only falls, down to zero."""
    records = static_records()
    formations = [i for i, r in enumerate(records) if r.admitted]

    assert len(formations) >= 3
    for start, end in zip(formations, formations[1:] + [len(records)]):
        running = [r.num_running for r in records[start:end]]
        assert running == sorted(running, reverse=True)
        assert running[-1] == 0


# -- swap preemption -----------------------------------------------------------------------


def swap_simulation(num_cpu_blocks):
    """Two 8-token prompts fill a 5-block pool; the first decode preempts r1. r2 arrives right after and fits."""
    config = EngineConfig(
        block_size=4,
        num_gpu_blocks=6,
        max_num_seqs=8,
        max_num_batched_tokens=64,
        max_model_len=64,
        enable_prefix_caching=False,
        preemption_mode="swap",
        num_cpu_blocks=num_cpu_blocks,
    )
    return Simulation(config, [spec(0, 8, 6), spec(1, 8, 6), spec(2, 4, 2, arrival_time=0.001)])


def test_swap_preemption_moves_the_victim_to_cpu_keeping_its_computed_tokens():
    """With CPU space, the victim's blocks are swapped out: status SWAPPED, num_computed_tokens kept."""
    sim = swap_simulation(num_cpu_blocks=16)
    sim.step()

    record = sim.step()

    assert record.preempted == ["r1"]
    assert record.swapped_out == [("r1", 2)]
    assert sim.request("r1").status == RequestStatus.SWAPPED
    assert sim.request("r1").num_computed_tokens == 8
    assert sim.queue_ids()["swapped"] == ["r1"]


def test_swapped_request_resumes_before_any_new_admission():
    """A swapped request comes back (swapped_in, one decode token, no recompute) before waiting ones are admitted."""
    records = list(swap_simulation(num_cpu_blocks=16).records())
    swap_in = next(r for r in records if r.swapped_in)

    # r2 arrived in step 1 and would have fit the blocks r1 left behind, yet waits for r1.
    assert records[1].arrived == ["r2"] and records[1].num_free_blocks >= 1
    assert all("r2" not in r.admitted for r in records[: swap_in.step])
    assert swap_in.swapped_in == [("r1", 2)]
    assert swap_in.resumed == ["r1"]
    assert chunk_ids(swap_in) == ["r1", "r2"]
    resumed_chunk = next(c for c in swap_in.scheduled if c.request_id == "r1")
    assert (resumed_chunk.num_tokens, resumed_chunk.num_computed_before) == (1, 8)


def test_swap_steps_pay_for_the_pcie_transfer():
    """Steps that move blocks to or from CPU memory carry a swap cost in their step time."""
    records = list(swap_simulation(num_cpu_blocks=16).records())
    swapping = [r for r in records if r.swapped_in or r.swapped_out]

    assert len(swapping) == 2
    assert all(r.cost_breakdown["swap"] > 0 for r in swapping)
    assert all("swap" not in r.cost_breakdown for r in records if r not in swapping)


def test_swap_falls_back_to_recompute_when_cpu_space_is_too_small():
    """A victim whose blocks do not fit the free CPU space is preempted by recompute instead."""
    sim = swap_simulation(num_cpu_blocks=1)
    sim.step()

    record = sim.step()

    assert record.preempted == ["r1"]
    assert record.swapped_out == []
    assert sim.request("r1").status == RequestStatus.PREEMPTED
    assert sim.request("r1").num_computed_tokens == 0
    assert sim.queue_ids()["waiting"][0] == "r1"


# -- the contiguous allocator --------------------------------------------------------------


def allocator_config(kv_allocator):
    return EngineConfig(
        block_size=16,
        num_gpu_blocks=129,
        max_num_seqs=32,
        max_num_batched_tokens=1024,
        max_model_len=512,
        enable_prefix_caching=False,
        kv_allocator=kv_allocator,
    )


def allocator_workload():
    return synthetic_workload(24, arrival_rate=float("inf"), prompt_mean=60, output_mean=20, seed=2, max_prompt_len=200)


def test_contiguous_allocator_reserves_max_model_len_for_each_request():
    """Each admitted request holds one contiguous range of cdiv(max_model_len, block_size) blocks."""
    config = allocator_config("contiguous")
    sim = Simulation(config, allocator_workload())
    sim.run(max_steps=3)
    per_request = cdiv(config.max_model_len, config.block_size)

    running = sim.queue_ids()["running"]
    assert running
    for request_id in running:
        table = sim.block_table(request_id)
        assert len(table) == per_request
        assert list(table) == list(range(table[0], table[0] + per_request))
    assert sim.scheduler.kv_cache_manager.num_free_blocks == config.num_gpu_blocks - 1 - per_request * len(running)


def test_contiguous_allocator_fits_fewer_requests_than_paged_on_the_same_pool():
    """Reserving max_model_len per request caps concurrency far below what paged blocks allow."""
    peak = {}
    for kv_allocator in ("contiguous", "paged"):
        sim = Simulation(allocator_config(kv_allocator), allocator_workload())
        peak[kv_allocator] = max(r.num_running for r in sim.records())

    assert peak["contiguous"] == 128 // cdiv(512, 16)
    assert peak["paged"] > 2 * peak["contiguous"]
