"""A request costs bytes, not kilobytes: synthetic prompts hold token ids only for the shared
system prompt (one array each), and a workload is columns of numbers until a request arrives;
prefix caching sees exactly the token ids it saw when prompts were tuples."""

import random
import tracemalloc
from array import array

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.prompt import Prompt
from scheduler_core.engine.request import Request
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import WorkloadConfig, build_workload


def traced_bytes(make):
    tracemalloc.start()
    try:
        kept = make()
        return kept, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_a_workload_with_shared_prefixes_costs_bytes_per_request():
    """20,000 requests behind 96-token system prompts: tuples took about 7 KB a request."""
    config = WorkloadConfig(num_requests=20_000, shared_prefix_len=96, num_shared_prefixes=3)
    workload, size = traced_bytes(lambda: build_workload(config, 4096))
    assert size / len(workload.requests) < 64


@pytest.mark.slow
def test_a_simulation_holds_only_the_requests_that_have_arrived():
    config = WorkloadConfig(num_requests=50_000, arrival_rate=10.0, shared_prefix_len=96, num_shared_prefixes=3)
    workload = build_workload(config, 4096)
    sim, size = traced_bytes(lambda: Simulation(EngineConfig(num_gpu_blocks=4096), workload))
    assert size < 1 << 20
    assert sim.num_pending == 50_000


PREFIX = array("i", range(500, 540))


@pytest.mark.parametrize("prompt", [Prompt(PREFIX, 40_000, 25), Prompt(array("i"), 90_000, 30)])
def test_a_prompt_slices_like_the_tuple_it_replaces(prompt):
    as_tuple = tuple(prompt)
    rng = random.Random(0)
    for _ in range(300):
        start, stop = sorted(rng.randrange(-5, len(as_tuple) + 5) for _ in range(2))
        assert tuple(prompt[start:stop]) == as_tuple[start:stop]
    assert [prompt[i] for i in range(-len(as_tuple), len(as_tuple))] == list(as_tuple + as_tuple)
    assert len(prompt) == len(as_tuple)


def test_block_hashes_of_a_compact_prompt_equal_those_of_its_tuple():
    """Equal hashes are what prefix caching matches on: the compact form changes no hit."""
    prompt = Prompt(PREFIX, 40_000, 57)
    compact, plain = Request("a", prompt, 8), Request("b", tuple(prompt), 8)
    assert compact.update_block_hashes(16, len(prompt)) == plain.update_block_hashes(16, len(prompt))


def test_a_synthetic_workload_holds_no_tuple_prompts():
    workload = build_workload(WorkloadConfig(num_requests=50, shared_prefix_len=32, num_shared_prefixes=2), 4096)
    prompts = [spec.prompt_token_ids for spec in workload.requests]
    assert all(isinstance(p, Prompt) for p in prompts)
    # Requests with the same system prompt share one array rather than each holding a copy.
    assert len({id(p.prefix) for p in prompts}) == 2
