"""vLLM V0's multi-step scheduling (`num_scheduler_steps`): one scheduler call, then N decode passes
with no scheduler between them, so a prompt arriving mid-window waits for the window to end."""

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.policies.vllm_v0 import VllmV0Scheduler
from scheduler_core.engine.releases import VLLM_PROFILES
from scheduler_core.engine.request import Request
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.engine_args import apply_settings, parse_vllm_command
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import RequestSpec, unique_prompt

# 4-token blocks, as tests/test_scheduler_v1.py: slot counts are easy to read.
CONFIG = EngineConfig(policy="vllm-v0", enable_chunked_prefill=False, enable_prefix_caching=False, block_size=4,
                      num_gpu_blocks=200, max_num_seqs=8, max_num_batched_tokens=64, max_model_len=64,
                      num_scheduler_steps=4)


def request(index, num_prompt_tokens=8, max_tokens=20):
    return Request(f"r{index}", unique_prompt(index, num_prompt_tokens), max_tokens)


def step(scheduler):
    output = scheduler.schedule()
    scheduler.update_from_output(output, now=0.0)
    return output


def test_a_decode_batch_runs_num_scheduler_steps_passes_per_scheduler_call():
    scheduler = VllmV0Scheduler(CONFIG)
    scheduler.add_request(request(0))
    scheduler.add_request(request(1))
    prefill = step(scheduler)
    passes = [step(scheduler) for _ in range(5)]

    assert prefill.is_first_multi_step and set(prefill.num_scheduled_tokens) == {"r0", "r1"}
    # The scheduler runs for the window's first pass only; the fifth pass opens the next window.
    assert [p.is_first_multi_step for p in passes] == [True, False, False, False, True]
    assert all(p.num_scheduled_tokens == {"r0": 1, "r1": 1} for p in passes)


def test_a_prompt_arriving_mid_window_waits_for_the_window_to_end():
    scheduler = VllmV0Scheduler(CONFIG)
    scheduler.add_request(request(0))
    step(scheduler)  # r0's prefill
    step(scheduler)  # the window's first decode pass
    scheduler.add_request(request(1))
    later = [step(scheduler) for _ in range(3)]
    after = step(scheduler)

    assert all(set(p.num_scheduled_tokens) == {"r0"} for p in later)
    # Prefill-first once the scheduler runs again: the waiting prompt, alone.
    assert after.scheduled_new_reqs == ["r1"] and set(after.num_scheduled_tokens) == {"r1"}


def test_a_window_reserves_slots_for_all_its_passes_at_once():
    """V0's `_append_slots` with N - 1 lookahead slots: 8 prompt tokens + 4 = 12 slots, 3 blocks."""
    scheduler = VllmV0Scheduler(CONFIG)
    scheduler.add_request(request(0))
    step(scheduler)
    kv = scheduler.kv_cache_manager
    blocks_after_prefill = len(kv.get_block_ids("r0"))
    scheduler.schedule()

    assert blocks_after_prefill == 2
    assert len(kv.get_block_ids("r0")) == 3


def test_a_request_that_reaches_its_length_mid_window_leaves_the_later_passes():
    scheduler = VllmV0Scheduler(CONFIG)
    scheduler.add_request(request(0, max_tokens=3))
    scheduler.add_request(request(1))
    step(scheduler)  # both prefills: r0's first token
    first, second, third = (step(scheduler) for _ in range(3))

    assert set(first.num_scheduled_tokens) == set(second.num_scheduled_tokens) == {"r0", "r1"}
    assert set(third.num_scheduled_tokens) == {"r1"} and not third.is_first_multi_step


def test_one_scheduler_step_is_vllms_single_step_loop():
    scheduler = VllmV0Scheduler(CONFIG.replace(num_scheduler_steps=1))
    scheduler.add_request(request(0))
    outputs = [step(scheduler) for _ in range(4)]

    assert all(output.is_first_multi_step for output in outputs)


def test_multi_step_is_v0s_and_refused_by_name_for_v1():
    with pytest.raises(ConfigError) as error:
        EngineConfig(num_scheduler_steps=8)
    assert error.value.field == "num_scheduler_steps"


def test_multi_step_refuses_speculative_decoding_as_vllm_does():
    with pytest.raises(ConfigError) as error:
        CONFIG.replace(speculative_config={"method": "ngram", "num_speculative_tokens": 2})
    assert error.value.field == "num_scheduler_steps"


def test_num_scheduler_steps_is_bounded():
    with pytest.raises(ConfigError) as error:
        CONFIG.replace(num_scheduler_steps=0)
    assert "num_scheduler_steps" in error.value.field


def test_a_vllm_serve_line_carries_num_scheduler_steps_and_v1_refuses_it():
    command = parse_vllm_command("vllm serve meta-llama/Llama-3.1-8B --num-scheduler-steps 10")
    data = {"model": "llama-3.1-8b"}

    apply_settings(data, command.settings)
    assert data["engine"]["num_scheduler_steps"] == 10
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict(data)
    assert "num_scheduler_steps" in error.value.field


def test_a_scenario_file_round_trips_num_scheduler_steps():
    scenario = Scenario.from_dict({"engine": {"policy": "vllm-v0", "enable_chunked_prefill": False,
                                              "max_num_batched_tokens": 4096, "num_scheduler_steps": 8}})
    again = Scenario.from_dict(scenario.to_dict())

    assert again.engine.num_scheduler_steps == 8
    # The single step is left out of what a scenario writes, as every file before multi-step read.
    assert "num_scheduler_steps" not in Scenario.from_dict({}).to_dict()["engine"]


def test_every_pass_of_a_window_is_a_step_record_with_one_token_per_request():
    workload = [RequestSpec(f"r{i}", 0.0, unique_prompt(i, 8), 9) for i in range(3)]
    records = list(Simulation(CONFIG, workload).records())

    decodes = [r for r in records if r.num_decode_tokens]
    # 9 tokens each: the prefill samples one, then two windows of 4 passes.
    assert len(records) == 1 + 8 and len(decodes) == 8
    assert all(len(r.scheduled) == 3 for r in decodes)


def test_stepping_back_into_a_window_resumes_it_where_it_was():
    workload = [RequestSpec(f"r{i}", 0.0, unique_prompt(i, 8), 9) for i in range(3)]
    # Under a profile that pays V0's host time, so a window restarted too early would show in the clock.
    sim = Simulation(CONFIG.replace(compat=VLLM_PROFILES["0.10.1.1"]), workload)
    sim.step(), sim.step(), sim.step()  # the prefill, then two passes of the first window
    state = sim.snapshot()
    ahead = [(r.step, r.clock_s_after, "host" in r.cost_breakdown) for r in sim.records()]
    sim.restore(state)
    again = [(r.step, r.clock_s_after, "host" in r.cost_breakdown) for r in sim.records()]

    assert again == ahead
    assert [host for _, _, host in ahead] == [False, False, True, False, False, False]
