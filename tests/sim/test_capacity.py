"""The capacity rule: a closed loop's clients times the mean context (prompt + output) against the
KV cache's tokens. The seed's 128 ShareGPT clients outgrow one H100's fp8 cache; Alpaca's fit."""

from scheduler_core.engine.config import EngineConfig
from scheduler_core.sim.capacity import KVCapacity
from scheduler_core.workload.workload import RequestSpec, Workload


def closed_loop(prompt_len: int, output_len: int, num_requests: int = 10, concurrency: int = 4) -> Workload:
    specs = [RequestSpec(f"r{i}", 0.0, [1] * prompt_len, output_len) for i in range(num_requests)]
    return Workload(specs, concurrency)


def test_demand_is_clients_times_prompt_plus_output():
    capacity = KVCapacity.of(closed_loop(100, 300), EngineConfig(), kv_cache_tokens=1600)
    assert (capacity.clients, capacity.mean_context, capacity.demand_tokens) == (4, 400, 1600)
    assert not capacity.exceeded and capacity.warning() == ""  # exactly full still fits


def test_warns_one_token_past_the_cache_and_names_the_numbers():
    capacity = KVCapacity.of(closed_loop(100, 300), EngineConfig(), kv_cache_tokens=1599)
    assert capacity.exceeded
    assert capacity.warning() == ("capacity warning: 4 clients x 400 tokens of mean context (prompt + output) = 1,600 KV "
                                  "tokens, more than the 1,599 the cache holds: expect preemptions, and a throughput "
                                  "below one measured with shorter requests")
    assert capacity.to_dict()["warning"] == capacity.warning()


def test_clients_are_capped_by_max_num_seqs_and_the_requests_there_are():
    assert KVCapacity.of(closed_loop(10, 10), EngineConfig(max_num_seqs=3), 10).clients == 3
    assert KVCapacity.of(closed_loop(10, 10, num_requests=2), EngineConfig(), 10).clients == 2


def test_context_is_capped_by_max_model_len():
    assert KVCapacity.of(closed_loop(100, 5000), EngineConfig(), 10).mean_context == 4096


def test_an_open_loop_is_never_warned_about():
    """With arrivals at a rate, how many requests the engine holds is the run's outcome, not its input."""
    capacity = KVCapacity.of(closed_loop(1000, 1000, concurrency=0), EngineConfig(), 1)
    assert capacity.clients == 0 and not capacity.exceeded
