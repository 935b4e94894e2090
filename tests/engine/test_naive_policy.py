"""The naive loop: static batches over contiguous KV with no prefix caching, each step paying the
kernel launches CUDA graphs would have saved (timing/eager.py)."""

import dataclasses

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.sim.simulation import Simulation
from scheduler_core.timing.eager import EagerLaunch
from scheduler_core.workload.workload import synthetic_workload

NAIVE = EngineConfig(policy="naive", kv_allocator="contiguous", enable_prefix_caching=False, num_gpu_blocks=400,
                     max_num_seqs=8, max_model_len=1024)


def records(config):
    workload = synthetic_workload(12, arrival_rate=200.0, prompt_mean=100, output_mean=20, seed=5, max_prompt_len=400)
    return list(Simulation(config, workload).records())


@pytest.mark.parametrize("change", [{"kv_allocator": "paged", "enable_prefix_caching": False},
                                    {"kv_allocator": "paged", "enable_prefix_caching": True}])
def test_the_naive_loop_needs_contiguous_kv_without_prefix_caching(change):
    with pytest.raises(ConfigError) as error:
        dataclasses.replace(NAIVE, **change)
    assert error.value.field == "kv_allocator"


def test_the_naive_loop_reserves_max_model_len_and_batches_statically():
    """400 blocks of 16 tokens hold 6 reservations of 1,024 tokens: 6 of the 8 seats, and nobody
    joins a batch until its last member has finished."""
    steps = records(NAIVE)
    assert max(r.num_running for r in steps) == 6
    for previous, record in zip(steps, steps[1:]):
        if record.admitted:
            assert previous.num_running == 0


def test_every_naive_step_pays_the_eager_launches_and_nothing_else_changes():
    """The same batches as static batching on the same contiguous pool, each step 32 layers x 47 us
    slower (Llama-3.1-8B: the 1.5 ms per step vLLM PR #1440 measured on Llama-2-7B)."""
    naive = records(NAIVE)
    static = records(dataclasses.replace(NAIVE, policy="static"))
    assert [r.num_batched_tokens for r in naive] == [r.num_batched_tokens for r in static]
    eager = EagerLaunch().seconds(32)
    assert eager == pytest.approx(1.5e-3)
    for n, s in zip(naive, static):
        if n.num_batched_tokens:
            assert n.cost_breakdown["eager"] == eager
            assert "eager" not in s.cost_breakdown
