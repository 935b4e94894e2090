"""Streaming metrics: histograms whose percentiles match exact ones to their resolution, per-request
latencies (TTFT, TPOT, ITL, E2E, queue) computed as vLLM's benchmarks define them, goodput under
SLOs, and the run-level gauges (KV usage, fragmentation, prefix-cache hit rate)."""

import math
import pickle
import random
import statistics

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.request import Request
from scheduler_core.sim.metrics import SLO, MetricsCollector, StreamingHistogram
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import synthetic_workload

LATENCY_KEYS = ("ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s")
SUMMARY_KEYS = {"mean", "p50", "p90", "p95", "p99"}


def finished_request(request_id="r", arrival=1.0, scheduled=1.5, token_times=(2.0, 2.1, 2.3, 2.6), prompt_len=10):
    """A request as the engine leaves it once finished, built by hand."""
    request = Request(request_id, range(prompt_len), len(token_times), arrival_time=arrival)
    request.first_scheduled_time = scheduled
    request.token_times = list(token_times)
    request.num_output_tokens = len(token_times)
    request.num_computed_tokens = prompt_len + len(token_times) - 1
    request.finish_time = token_times[-1]
    return request


def run(config, **workload_settings):
    settings = dict(num_requests=30, arrival_rate=20.0, prompt_mean=300, output_mean=60, seed=0,
                    max_prompt_len=1200, shared_prefix_len=64, num_shared_prefixes=2)
    settings.update(workload_settings)
    sim = Simulation(config, synthetic_workload(**settings))
    sim.run()
    return sim


BASE = EngineConfig(num_gpu_blocks=1024, max_num_seqs=16, max_num_batched_tokens=512, max_model_len=2048)


# -- the histogram -------------------------------------------------------------------------


@pytest.mark.parametrize("q", [1, 10, 50, 90, 95, 99])
def test_histogram_percentiles_are_within_1_percent_of_exact_ones(q):
    """On 20,000 lognormal latencies spanning decades, every percentile is within 1% of the exact one."""
    rng = random.Random(q)
    values = [rng.lognormvariate(-3.0, 1.5) for _ in range(20000)]
    histogram = StreamingHistogram()
    for value in values:
        histogram.add(value)

    exact = statistics.quantiles(values, n=100, method="inclusive")[q - 1]

    assert histogram.percentile(q) == pytest.approx(exact, rel=0.01)


def test_histogram_percentiles_of_a_small_sample_are_within_1_percent_of_exact_ones():
    """On 20 values (a short run's TTFTs) p50, p90 and p99 still match the exact percentiles to 1%."""
    rng = random.Random(5)
    values = [rng.uniform(0.1, 1.0) for _ in range(20)]
    histogram = StreamingHistogram()
    for value in values:
        histogram.add(value)
    exact = statistics.quantiles(values, n=100, method="inclusive")

    assert [histogram.percentile(q) for q in (50, 90, 99)] == pytest.approx([exact[49], exact[89], exact[98]],
                                                                            rel=0.01)


def test_histogram_median_matches_the_sorted_list():
    """The 50th percentile of uniform data is the middle of the sorted values, to the bucket resolution."""
    rng = random.Random(0)
    values = sorted(rng.uniform(0.001, 2.0) for _ in range(10001))
    histogram = StreamingHistogram()
    for value in values:
        histogram.add(value)

    assert histogram.percentile(50) == pytest.approx(values[5000], rel=0.01)


def test_histogram_count_mean_min_and_max_are_exact():
    """Count, mean, min and max are not bucketed: they are exact."""
    rng = random.Random(1)
    values = [rng.expovariate(3.0) for _ in range(5000)]
    histogram = StreamingHistogram()
    for value in values:
        histogram.add(value)

    assert histogram.count == len(values)
    assert histogram.mean == pytest.approx(sum(values) / len(values), rel=1e-12)
    assert histogram.min == min(values) and histogram.max == max(values)


def test_histogram_percentiles_stay_within_the_exact_min_and_max():
    """A single value is every percentile of itself, exactly (not its bucket's midpoint)."""
    histogram = StreamingHistogram()
    histogram.add(0.123)

    assert {histogram.percentile(q) for q in (0, 50, 99, 100)} == {0.123}


def test_histogram_memory_does_not_grow_with_the_number_of_values():
    """100,000 values within two decades fill under a thousand buckets."""
    histogram = StreamingHistogram()
    rng = random.Random(2)
    for _ in range(100000):
        histogram.add(rng.uniform(0.01, 1.0))

    assert len(histogram.buckets) < 1000


def test_repeated_values_land_in_the_same_buckets_as_fresh_ones_and_checkpoints_skip_the_cache():
    """Bucket indices are remembered for values that repeat (requests finishing together share
    their inter-token latencies): the buckets equal those of values added one at a time, the
    cache stays bounded, and a pickled histogram (a checkpoint) leaves it behind."""
    rng = random.Random(3)
    step_times = [rng.uniform(0.01, 0.02) for _ in range(600)]
    requests = [[step_times[(i + k) % 600] for k in range(512)] for i in range(32)]
    together, alone = StreamingHistogram(), StreamingHistogram()
    for values in requests:
        together.add_all(values)
        for value in values:
            alone._index_of.clear()  # each index computed afresh
            alone.add(value)
    assert together.buckets == alone.buckets and together.total == alone.total and together.count == alone.count
    for value in (rng.uniform(0.01, 1.0) for _ in range(3 * StreamingHistogram.MAX_REMEMBERED)):
        together.add(value)
    assert len(together._index_of) <= StreamingHistogram.MAX_REMEMBERED + 1
    thawed = pickle.loads(pickle.dumps(together))
    assert thawed._index_of == {} and thawed.buckets == together.buckets


def test_empty_histogram_reports_nan():
    """With no values there is no mean or percentile: nan, not zero."""
    summary = StreamingHistogram().summary()

    assert set(summary) == SUMMARY_KEYS
    assert all(math.isnan(v) for v in summary.values())


# -- per-request latencies -----------------------------------------------------------------


def test_collector_computes_ttft_tpot_itl_e2e_and_queue_of_a_finished_request():
    """Arrived 1.0, scheduled 1.5, tokens at 2.0/2.1/2.3/2.6: TTFT 1.0, TPOT 0.2, ITL 0.1-0.3, E2E 1.6, queue 0.5."""
    collector = MetricsCollector(block_size=16)
    collector.observe_finished(finished_request())

    report = collector.report()

    assert report["ttft_s"]["mean"] == pytest.approx(1.0)
    assert report["tpot_s"]["mean"] == pytest.approx(0.2)
    assert report["itl_s"]["mean"] == pytest.approx(0.2)
    assert report["itl_s"]["p50"] == pytest.approx(0.2, rel=0.005)
    assert (collector.itl.min, collector.itl.max) == pytest.approx((0.1, 0.3))
    assert report["e2e_s"]["mean"] == pytest.approx(1.6)
    assert report["queue_s"]["mean"] == pytest.approx(0.5)
    assert collector.itl.count == 3


def test_a_single_token_request_has_a_ttft_but_no_tpot_or_itl():
    """With one output token there is no inter-token gap to measure."""
    collector = MetricsCollector(block_size=16)
    collector.observe_finished(finished_request(token_times=(2.0,)))

    report = collector.report()

    assert report["ttft_s"]["mean"] == pytest.approx(1.0)
    assert math.isnan(report["tpot_s"]["mean"]) and math.isnan(report["itl_s"]["mean"])


def test_throughput_counts_tokens_over_first_arrival_to_last_finish():
    """Two requests from t=1.0 to t=3.0: 1 request/s, (10+20)/2 input and (4+2)/2 output tokens/s."""
    collector = MetricsCollector(block_size=16)
    collector.observe_finished(finished_request("a", arrival=1.0, token_times=(2.0, 2.1, 2.3, 2.6), prompt_len=10))
    collector.observe_finished(finished_request("b", arrival=1.2, scheduled=1.3, token_times=(2.5, 3.0),
                                                prompt_len=20))

    report = collector.report()

    assert report["simulated_s"] == pytest.approx(2.0)
    assert report["requests_per_s"] == pytest.approx(1.0)
    assert report["input_tokens_per_s"] == pytest.approx(15.0)
    assert report["output_tokens_per_s"] == pytest.approx(3.0)


# -- goodput -------------------------------------------------------------------------------


def test_goodput_counts_only_requests_meeting_both_slos():
    """Of three requests (good, TTFT too slow, TPOT too slow) only the first counts towards goodput."""
    collector = MetricsCollector(block_size=16, slo=SLO(ttft_s=0.5, tpot_s=0.1))
    collector.observe_finished(finished_request("good", arrival=0.0, scheduled=0.1, token_times=(0.4, 0.45, 0.5)))
    collector.observe_finished(finished_request("slow-first", arrival=0.0, scheduled=0.1,
                                                token_times=(0.9, 0.95, 1.0)))
    collector.observe_finished(finished_request("slow-rest", arrival=0.0, scheduled=0.1, token_times=(0.3, 0.6, 1.0)))

    report = collector.report()

    assert collector.num_good == 1
    assert report["slo_attainment"] == pytest.approx(1 / 3)
    assert report["goodput_requests_per_s"] == pytest.approx(report["requests_per_s"] / 3)


def test_without_slos_goodput_equals_throughput():
    """The default SLOs are infinite: every finished request is good."""
    collector = MetricsCollector(block_size=16)
    for i in range(3):
        collector.observe_finished(finished_request(f"r{i}", arrival=0.1 * i, scheduled=0.1 * i + 0.05,
                                                    token_times=(1.0 + i, 2.0 + i)))

    report = collector.report()

    assert report["goodput_requests_per_s"] == report["requests_per_s"]
    assert report["slo_attainment"] == 1.0


def test_an_slo_exactly_met_counts_as_met():
    """A TTFT equal to its objective meets it (the SLO is inclusive)."""
    collector = MetricsCollector(block_size=16, slo=SLO(ttft_s=1.0, tpot_s=0.2))
    collector.observe_finished(finished_request(arrival=0.0, scheduled=0.5, token_times=(1.0, 1.2)))

    assert collector.num_good == 1


# -- a whole run ---------------------------------------------------------------------------


def test_a_simulation_report_has_every_documented_key():
    """The report of a run carries every key the README documents, latencies with mean/p50/p90/p95/p99."""
    report = run(BASE).metrics.report(wall_s=0.5)

    documented = {"num_requests", "num_steps", "simulated_s", "wall_s", "requests_per_s", "input_tokens_per_s",
                  "output_tokens_per_s", "goodput_requests_per_s", "slo_attainment", *LATENCY_KEYS, "preemptions",
                  "kv_usage_mean", "fragmentation", "prefix_cache_hit_rate"}
    assert documented <= set(report)
    for key in LATENCY_KEYS:
        assert set(report[key]) == SUMMARY_KEYS
        assert report[key]["p50"] <= report[key]["p90"] <= report[key]["p95"] <= report[key]["p99"]
    assert report["num_requests"] == 30 and report["num_steps"] > 0 and report["wall_s"] == 0.5
    assert 0 < report["kv_usage_mean"] <= 1


def test_run_latencies_agree_with_the_finished_requests():
    """The streamed TTFT and E2E means equal those computed from the finished requests themselves."""
    sim = run(BASE)
    requests = list(sim.finished_requests.values())
    report = sim.metrics.report()

    assert report["ttft_s"]["mean"] == pytest.approx(statistics.mean(r.token_times[0] - r.arrival_time
                                                                     for r in requests))
    assert report["e2e_s"]["mean"] == pytest.approx(statistics.mean(r.finish_time - r.arrival_time
                                                                    for r in requests))
    assert report["output_tokens_per_s"] * report["simulated_s"] == pytest.approx(
        sum(r.num_output_tokens for r in requests))


def test_contiguous_allocation_fragments_far_more_than_paged():
    """Reserving max_model_len per request wastes most of each region; paged blocks waste under one block each."""
    paged = run(BASE.replace(enable_prefix_caching=False)).metrics.report()
    contiguous = run(BASE.replace(enable_prefix_caching=False, kv_allocator="contiguous")).metrics.report()

    assert contiguous["fragmentation"] > 0.5
    assert paged["fragmentation"] < 0.1
    assert contiguous["fragmentation"] > 5 * paged["fragmentation"]


def test_shared_prefixes_give_prefix_cache_hits():
    """Requests sharing system prompts hit the prefix cache when caching is on."""
    assert run(BASE).metrics.report()["prefix_cache_hit_rate"] > 0


def test_no_prefix_cache_hits_with_caching_off():
    """With prefix caching off the hit rate is exactly 0, even with shared prefixes."""
    assert run(BASE.replace(enable_prefix_caching=False)).metrics.report()["prefix_cache_hit_rate"] == 0


def test_no_prefix_cache_hits_without_shared_prefixes():
    """Unique prompts never hit, even with caching on."""
    assert run(BASE, shared_prefix_len=0).metrics.report()["prefix_cache_hit_rate"] == 0


def test_tight_slos_lower_goodput_below_throughput_in_a_run():
    """An unreachable TTFT objective makes goodput 0 while throughput is unchanged."""
    sim = Simulation(BASE, synthetic_workload(20, 20.0, 300, 60, seed=0), slo=SLO(ttft_s=1e-6))
    sim.run()
    report = sim.metrics.report()

    assert report["requests_per_s"] > 0
    assert report["goodput_requests_per_s"] == 0
