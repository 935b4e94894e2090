"""vLLM's Prometheus counters as vLLM counts them (sim/vllm_stats.py): a prompt counted whole with
its first token, tokens in the iteration that produced them, a preemption with the request's next
output, one inter-token latency per output, and no iteration stats for a step that output nothing."""

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.sim.simulation import Simulation
from scheduler_core.sim.vllm_stats import FixedHistogram, request_tokens_buckets
from scheduler_core.workload.workload import RequestSpec, unique_prompt


def counting(config: EngineConfig, specs: list[RequestSpec]) -> Simulation:
    sim = Simulation(config, specs)
    sim.enable_vllm_stats()
    return sim


def test_a_chunked_prompt_is_counted_whole_in_the_iteration_of_its_first_token():
    """Three 256-token chunks: nothing counted for the first two (no output, so no iteration
    stats either), then the 700 prompt tokens and the first token together."""
    sim = counting(EngineConfig(max_num_batched_tokens=256, enable_prefix_caching=False),
                   [RequestSpec("a", 0.0, unique_prompt(1, 700), 5)])
    stats = sim.metrics.vllm
    iterations = stats.histograms["iteration_tokens_total"]

    seen = []
    for _ in range(3):
        sim.step()
        seen.append((stats.prompt_tokens, stats.generation_tokens, iterations.count))

    assert seen == [(0, 0, 0), (0, 0, 0), (700, 1, 1)]
    assert iterations.sum == 700 + 1
    assert stats.histograms["time_to_first_token_seconds"].count == 1


def test_generated_tokens_count_in_every_iteration_not_at_the_finish():
    sim = counting(EngineConfig(), [RequestSpec("a", 0.0, unique_prompt(1, 50), 10)])
    stats = sim.metrics.vllm

    counts = []
    while not sim.done:
        sim.step()
        counts.append(stats.generation_tokens)

    assert counts == list(range(1, 11))
    assert stats.histograms["inter_token_latency_seconds"].count == 9
    assert stats.request_success["length"] == 1
    assert stats.histograms["request_generation_tokens"].sum == 10


def test_a_preemption_is_counted_with_the_requests_next_output():
    """vLLM reports PREEMPTED as an event on the request, which reaches the stat logger with the
    request's next output; the engine's own count has it in the step it happened."""
    specs = [RequestSpec(f"r{i}", 0.0, unique_prompt(i + 1, 60), 200) for i in range(4)]
    sim = counting(EngineConfig(num_gpu_blocks=24, block_size=16, enable_prefix_caching=False), specs)
    stats = sim.metrics.vllm

    waiting_to_report: dict[str, int] = {}
    lags = 0
    while not sim.done:
        reported = stats.num_preemptions
        record = sim.step()
        came_back = sum(waiting_to_report.pop(rid, 0) for rid in record.sampled)
        assert stats.num_preemptions == reported + came_back
        for rid in record.preempted:
            waiting_to_report[rid] = waiting_to_report.get(rid, 0) + 1
        lags += bool(waiting_to_report)
        assert stats.num_preemptions <= sim.metrics.num_preemptions

    assert lags and sim.metrics.num_preemptions > 0
    assert stats.num_preemptions == sim.metrics.num_preemptions
    assert stats.histograms["request_num_preemptions"].sum == sim.metrics.num_preemptions


def test_one_inter_token_latency_per_output_however_many_tokens_it_carries():
    """Speculative decoding: a step may bring several tokens of one request, one ITL observation."""
    spec = SpeculativeConfig(method="ngram", num_speculative_tokens=3, acceptance_rate=(0.9, 0.8, 0.7))
    sim = counting(EngineConfig(speculative_config=spec), [RequestSpec("a", 0.0, unique_prompt(1, 40), 60)])
    stats = sim.metrics.vllm

    outputs = sum(1 for record in sim.records() if "a" in record.sampled)

    assert stats.generation_tokens == 60
    assert stats.histograms["inter_token_latency_seconds"].count == outputs - 1 < 59


def test_the_phases_of_a_finished_request():
    """Queue: arrival to first schedule; prefill: to first token; decode: first to last token."""
    sim = counting(EngineConfig(), [RequestSpec("a", 0.0, unique_prompt(1, 50), 4),
                                    RequestSpec("b", 0.0, unique_prompt(2, 50), 4)])
    sim.run()
    histograms, request = sim.metrics.vllm.histograms, sim.finished_requests["b"]
    times = request.token_times

    assert histograms["request_queue_time_seconds"].count == 2
    assert histograms["request_decode_time_seconds"].sum == (times[-1] - times[0]) + (
        sim.finished_requests["a"].token_times[-1] - sim.finished_requests["a"].token_times[0])
    assert histograms["e2e_request_latency_seconds"].sum == sum(r.finish_time - r.arrival_time
                                                               for r in sim.finished_requests.values())


def test_the_token_buckets_are_one_two_five_up_to_max_model_len():
    assert request_tokens_buckets(4096) == (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
    assert request_tokens_buckets(5000)[-1] == 5000


def test_a_value_on_a_bound_counts_under_it():
    """Prometheus's `le`: an observation equal to a bound belongs to that bucket."""
    histogram = FixedHistogram((1, 2))
    for value in (1, 1.5, 2, 3):
        histogram.observe(value)

    assert histogram.cumulative() == [1, 3, 4]


def test_step_back_restores_the_counts_and_starts_a_new_series():
    sim = counting(EngineConfig(), [RequestSpec(f"r{i}", 0.0, unique_prompt(i + 1, 80), 30) for i in range(6)])
    state = sim.snapshot()
    sim.run()
    total = sim.metrics.vllm.generation_tokens

    sim.restore(state)

    assert sim.metrics.vllm.generation_tokens == 0 and sim.num_restores == 1
    sim.run()
    assert sim.metrics.vllm.generation_tokens == total
