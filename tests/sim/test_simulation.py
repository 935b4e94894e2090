"""The simulation loop: deterministic, steppable back and forth, with a sane clock, and validated
so that an accepted workload can always be served."""

import gc

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import RequestSpec, synthetic_workload, unique_prompt

# Tight enough for preemptions, with shared system prompts for prefix-cache hits.
CONFIG = EngineConfig(num_gpu_blocks=160, max_num_seqs=16, max_num_batched_tokens=256, max_model_len=2048)


def workload(seed=0):
    return synthetic_workload(
        30, arrival_rate=40.0, prompt_mean=300, output_mean=60, seed=seed, max_prompt_len=1200,
        shared_prefix_len=64, num_shared_prefixes=2,
    )


def simulation(seed=0):
    return Simulation(CONFIG, workload(seed))


def take(sim, num_steps):
    return [sim.step() for _ in range(num_steps)]


# -- determinism ---------------------------------------------------------------------------


def test_same_config_and_seed_give_identical_step_records():
    """Two simulations of the same config and workload seed agree step for step."""
    first = list(simulation(seed=1).records())
    second = list(simulation(seed=1).records())

    assert first == second
    # The run exercised the machinery worth comparing.
    assert any(r.preempted for r in first) and any(r.num_blocks_hit for r in first)


def test_a_different_workload_seed_gives_a_different_run():
    """The seed is not ignored: another seed produces other step records."""
    assert list(simulation(seed=1).records()) != list(simulation(seed=2).records())


# -- snapshot and restore ------------------------------------------------------------------


def test_restore_replays_the_steps_after_a_snapshot_exactly():
    """Run N steps, snapshot, run M; restoring and running M again gives the same M records."""
    sim = simulation()
    take(sim, 30)
    state = sim.snapshot()
    after = take(sim, 80)

    sim.restore(state)

    assert take(sim, 80) == after
    assert any(r.preempted for r in after) and any(r.finished for r in after)


def test_a_snapshot_can_be_restored_twice():
    """Restoring does not consume the snapshot: a second restore replays the same steps again."""
    sim = simulation()
    take(sim, 40)
    state = sim.snapshot()
    after = take(sim, 30)
    sim.restore(state)
    take(sim, 50)

    sim.restore(state)

    assert take(sim, 30) == after


def test_stepping_back_to_an_earlier_snapshot_then_forward_reproduces_the_run():
    """Going back from a later point to an earlier snapshot and forward again gives the original records."""
    sim = simulation()
    take(sim, 20)
    earlier = sim.snapshot()
    original = take(sim, 50)
    sim.snapshot()  # a later snapshot must not disturb the earlier one

    sim.restore(earlier)

    assert sim.step_index == 20
    assert take(sim, 50) == original


def test_restore_brings_back_the_clock_and_the_queues():
    """After restore, the clock, step index and queues are those of the snapshot point."""
    sim = simulation()
    take(sim, 40)
    state = sim.snapshot()
    clock, queues = sim.clock_s, sim.queue_ids()
    take(sim, 25)

    sim.restore(state)

    assert (sim.step_index, sim.clock_s, sim.queue_ids()) == (40, clock, queues)


# -- the clock and the requests' lives -----------------------------------------------------


def test_clock_never_goes_backwards():
    """Each step starts no earlier than the previous one ended and ends no earlier than it starts."""
    records = list(simulation().records())

    assert all(r.clock_s_after >= r.clock_s_before for r in records)
    assert all(b.clock_s_before >= a.clock_s_after for a, b in zip(records, records[1:]))


def test_a_step_that_runs_tokens_takes_time():
    """Every step that schedules tokens has step_s > 0."""
    records = list(simulation().records())

    assert all(r.step_s > 0 for r in records if r.num_batched_tokens)


def test_every_request_finishes():
    """A validated workload runs to completion: every request ends in a finished state with its tokens."""
    specs = workload()
    sim = Simulation(CONFIG, specs)
    sim.run()

    assert sim.done
    for spec in specs:
        request = sim.request(spec.request_id)
        assert request.status.is_finished, spec.request_id
        assert request.num_output_tokens == spec.max_tokens


def test_first_token_comes_after_arrival():
    """TTFT >= 0: no request's first token is timestamped before it arrived."""
    specs = workload()
    sim = Simulation(CONFIG, specs)
    sim.run()

    for spec in specs:
        request = sim.request(spec.request_id)
        assert request.token_times[0] >= request.arrival_time == spec.arrival_time


def test_an_idle_engine_jumps_its_clock_to_the_next_arrival():
    """With nothing to run, the next step starts at the next request's arrival time; no empty steps in between."""
    specs = [
        RequestSpec("early", 0.0, unique_prompt(0, 32), 3),
        RequestSpec("late", 5.0, unique_prompt(1, 32), 3),
    ]
    records = list(Simulation(CONFIG, specs).records())
    late = next(r for r in records if r.arrived == ["late"])
    before = records[late.step - 1]

    assert before.finished == ["early"]
    assert before.clock_s_after < 5.0
    assert late.clock_s_before == 5.0
    assert late.num_batched_tokens == 32


# -- validation ----------------------------------------------------------------------------


def test_workload_that_can_never_fit_the_pool_is_rejected_up_front():
    """A request needing more blocks than the pool has is a ConfigError on num_gpu_blocks, not a stall."""
    config = CONFIG.replace(num_gpu_blocks=8)  # 7 usable blocks of 16 tokens
    specs = [RequestSpec("huge", 0.0, unique_prompt(0, 100), 20)]  # 120 tokens: 8 blocks

    with pytest.raises(ConfigError) as error:
        Simulation(config, specs)

    assert error.value.field == "num_gpu_blocks"
    assert "huge" in str(error.value)


def test_vllm_v0_requires_a_budget_that_holds_a_whole_prompt():
    """vllm-v0 cannot chunk, so its token budget must hold a max_model_len prompt, as vLLM V0 demanded."""
    with pytest.raises(ConfigError) as error:
        EngineConfig(policy="vllm-v0", num_gpu_blocks=200, max_num_seqs=8, max_num_batched_tokens=64, max_model_len=512)

    assert error.value.field == "max_num_batched_tokens"


def test_vllm_v0_rejects_a_request_that_only_fits_by_eating_the_watermark():
    """vllm-v0 can never admit a request that needs the watermark's blocks; validation must say so."""
    config = EngineConfig(policy="vllm-v0", block_size=4, num_gpu_blocks=200, max_num_batched_tokens=1024, max_model_len=1024)
    specs = [RequestSpec("r", 0.0, unique_prompt(0, 790), 6)]  # 796 tokens: 199 blocks, all usable ones

    with pytest.raises(ConfigError) as error:
        Simulation(config, specs).run()

    assert error.value.field == "num_gpu_blocks"



def test_a_snapshot_is_a_few_objects_whatever_the_number_of_requests():
    """A session holds about a hundred snapshots: as objects, each would be thousands more for
    the garbage collector to walk in every full collection (stalling play); frozen, a handful."""
    sim = Simulation(EngineConfig(num_gpu_blocks=4096, max_num_seqs=64),
                     synthetic_workload(2000, 1e6, 64, 64, seed=3))
    take(sim, 20)
    assert len(sim.scheduler.waiting) > 1000
    gc.collect()
    before = len(gc.get_objects())
    state = sim.snapshot()
    assert len(gc.get_objects()) - before < 50
    after = take(sim, 10)
    sim.restore(state)
    assert take(sim, 10) == after
