"""Synthetic workloads: reproducible from their seed, with arrival processes and length
distributions that have the statistics they claim, and closed-loop clients that never have more
than `concurrency` requests in flight."""

import math
import statistics

import pytest

from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import NAMED_LENGTHS, WorkloadConfig, build_workload


def arrivals(**settings):
    return [r.arrival_time for r in build_workload(WorkloadConfig(**settings)).requests]


def gaps(times):
    return [later - earlier for earlier, later in zip([0.0] + times, times)]


def prompt_lengths(workload):
    return [len(r.prompt_token_ids) for r in workload.requests]


def output_lengths(workload):
    return [r.max_tokens for r in workload.requests]


# -- reproducibility -----------------------------------------------------------------------


def test_same_config_and_seed_give_identical_requests():
    """A workload is a pure function of its config and seed."""
    config = WorkloadConfig(num_requests=200, shared_prefix_len=32, num_shared_prefixes=3,
                            high_priority_fraction=0.3, seed=7)

    first = build_workload(config).requests
    second = build_workload(config).requests

    assert [(r.request_id, r.arrival_time, tuple(r.prompt_token_ids), r.max_tokens, r.priority) for r in first] == [
        (r.request_id, r.arrival_time, tuple(r.prompt_token_ids), r.max_tokens, r.priority) for r in second
    ]


def test_a_different_seed_gives_different_requests():
    """The seed is used: another seed draws other arrival times and lengths."""
    first = build_workload(WorkloadConfig(num_requests=50, seed=1))
    second = build_workload(WorkloadConfig(num_requests=50, seed=2))

    assert [r.arrival_time for r in first.requests] != [r.arrival_time for r in second.requests]
    assert prompt_lengths(first) != prompt_lengths(second)


# -- arrival processes ---------------------------------------------------------------------


def test_poisson_arrivals_have_mean_gap_one_over_rate():
    """Poisson arrivals at 8 requests/s are on average 125 ms apart (within 10% over 5000)."""
    times = arrivals(num_requests=5000, arrival="poisson", arrival_rate=8.0, seed=3)

    assert statistics.mean(gaps(times)) == pytest.approx(1 / 8.0, rel=0.10)


def test_poisson_gaps_have_coefficient_of_variation_near_1():
    """Exponential gaps have CV 1, which is what distinguishes Poisson from fixed-rate arrivals."""
    g = gaps(arrivals(num_requests=5000, arrival="poisson", arrival_rate=8.0, seed=3))

    assert statistics.pstdev(g) / statistics.mean(g) == pytest.approx(1.0, rel=0.15)


@pytest.mark.parametrize("cv", [0.5, 2.0, 3.0])
def test_gamma_arrivals_have_the_requested_coefficient_of_variation(cv):
    """Gamma gaps keep mean 1/rate and have CV = arrival_cv (within 15%): bursty above 1, regular below."""
    g = gaps(arrivals(num_requests=5000, arrival="gamma", arrival_rate=10.0, arrival_cv=cv, seed=4))

    assert statistics.pstdev(g) / statistics.mean(g) == pytest.approx(cv, rel=0.15)
    assert statistics.mean(g) == pytest.approx(0.1, rel=0.15)


def test_fixed_arrivals_are_evenly_spaced_at_one_over_rate():
    """Fixed-rate arrivals come exactly 1/rate apart, starting at 0."""
    times = arrivals(num_requests=20, arrival="fixed", arrival_rate=4.0)

    assert times == pytest.approx([i * 0.25 for i in range(20)])


@pytest.mark.parametrize("arrival", ["poisson", "gamma", "fixed"])
def test_infinite_rate_means_every_request_arrives_at_time_0(arrival):
    """arrival_rate=inf is the offline benchmark: the whole workload at once."""
    assert arrivals(num_requests=30, arrival=arrival, arrival_rate=math.inf) == [0.0] * 30


def test_infinite_rate_can_be_written_as_a_string_in_scenario_data():
    """Scenario files cannot hold an infinity, so from_dict reads "inf" as one."""
    assert WorkloadConfig.from_dict({"arrival_rate": "inf"}).arrival_rate == math.inf


def test_arrival_times_never_decrease():
    """Requests are listed in arrival order for every arrival process."""
    for arrival in ("poisson", "gamma", "fixed"):
        times = arrivals(num_requests=300, arrival=arrival, arrival_cv=3.0, seed=5)
        assert times == sorted(times)


@pytest.mark.parametrize("arrival", ["poisson", "gamma", "fixed"])
def test_an_initial_burst_waits_at_time_0_and_the_arrivals_carry_on_behind_it(arrival):
    """The burst's requests all arrive at t = 0; the others take the arrival process's times from
    t = 0, the ones they would have had without it, and every request keeps its lengths."""
    plain = build_workload(WorkloadConfig(num_requests=40, arrival=arrival, arrival_cv=2.0, seed=9))
    burst = build_workload(WorkloadConfig(num_requests=40, arrival=arrival, arrival_cv=2.0, seed=9, initial_burst=12))

    times = [r.arrival_time for r in burst.requests]
    assert times[:12] == [0.0] * 12
    assert times[12:] == [r.arrival_time for r in plain.requests][:28]
    assert output_lengths(burst) == output_lengths(plain) and prompt_lengths(burst) == prompt_lengths(plain)


def test_a_burst_larger_than_the_workload_is_the_whole_workload_at_once():
    assert arrivals(num_requests=5, initial_burst=12, seed=1) == [0.0] * 5


def test_an_initial_burst_is_bounded_like_every_setting():
    with pytest.raises(ConfigError, match="initial_burst"):
        WorkloadConfig(initial_burst=-1)


# -- length distributions ------------------------------------------------------------------

SAMPLES = 20000


@pytest.mark.parametrize(
    "name, prompt_mean, output_mean",
    [
        # PagedAttention paper (SOSP 2023), Fig. 11.
        ("sharegpt", 161.31, 337.99),
        ("alpaca", 19.31, 58.45),
    ],
)
def test_paper_distributions_have_the_documented_mean_lengths(name, prompt_mean, output_mean):
    """ShareGPT and Alpaca sample means are within 15% of the means the paper reports."""
    workload = build_workload(WorkloadConfig(num_requests=SAMPLES, lengths=name, seed=11))

    assert statistics.mean(prompt_lengths(workload)) == pytest.approx(prompt_mean, rel=0.15)
    assert statistics.mean(output_lengths(workload)) == pytest.approx(output_mean, rel=0.15)


def test_azure_code_lengths_have_the_documented_log_moments():
    """azure-code's geometric mean lengths are within 15% of exp(7.00) and exp(2.79), its documented log-means."""
    workload = build_workload(WorkloadConfig(num_requests=SAMPLES, lengths="azure-code", seed=11))

    log_prompt = statistics.mean(math.log(n) for n in prompt_lengths(workload))
    log_output = statistics.mean(math.log(n) for n in output_lengths(workload))
    assert math.exp(log_prompt) == pytest.approx(math.exp(7.00), rel=0.15)
    assert math.exp(log_output) == pytest.approx(math.exp(2.79), rel=0.15)


def test_azure_code_prompt_mean_matches_the_trace_mean():
    """Clipped to the trace's range, azure-code prompts average about the trace's 2,048 tokens (within 15%)."""
    workload = build_workload(WorkloadConfig(num_requests=SAMPLES, lengths="azure-code", seed=11))

    assert statistics.mean(prompt_lengths(workload)) == pytest.approx(2048, rel=0.15)


def test_azure_conversation_lengths_have_the_documented_medians():
    """azure-conversation's median prompt and output are within 15% of Splitwise's 1020 and 129 tokens."""
    workload = build_workload(WorkloadConfig(num_requests=SAMPLES, lengths="azure-conversation", seed=11))

    assert statistics.median(prompt_lengths(workload)) == pytest.approx(1020, rel=0.15)
    assert statistics.median(output_lengths(workload)) == pytest.approx(129, rel=0.15)


def test_plain_lognormal_lengths_have_the_configured_mean():
    """lengths=lognormal draws with arithmetic mean prompt_len / output_len (within 15%)."""
    workload = build_workload(WorkloadConfig(num_requests=SAMPLES, lengths="lognormal", prompt_len=400,
                                             output_len=90, sigma=0.6, seed=11))

    assert statistics.mean(prompt_lengths(workload)) == pytest.approx(400, rel=0.15)
    assert statistics.mean(output_lengths(workload)) == pytest.approx(90, rel=0.15)


@pytest.mark.parametrize("name", sorted(NAMED_LENGTHS))
def test_named_distributions_are_clipped_to_their_ranges(name):
    """No sampled prompt or output falls outside the distribution's documented range."""
    dist = NAMED_LENGTHS[name]
    workload = build_workload(WorkloadConfig(num_requests=5000, lengths=name, seed=12))

    prompts, outputs = prompt_lengths(workload), output_lengths(workload)
    assert dist.prompt_range[0] <= min(prompts) and max(prompts) <= dist.prompt_range[1]
    assert dist.output_range[0] <= min(outputs) and max(outputs) <= dist.output_range[1]
    assert dist.source


def test_fixed_lengths_are_exact():
    """lengths=fixed gives every request prompt_len and output_len tokens."""
    workload = build_workload(WorkloadConfig(num_requests=10, lengths="fixed", prompt_len=300, output_len=40))

    assert set(prompt_lengths(workload)) == {300} and set(output_lengths(workload)) == {40}


def test_uniform_lengths_stay_within_their_bounds_and_cover_them():
    """lengths=uniform draws integers in [prompt_len, prompt_len_high] and [output_len, output_len_high]."""
    workload = build_workload(WorkloadConfig(num_requests=2000, lengths="uniform", prompt_len=10,
                                             prompt_len_high=20, output_len=5, output_len_high=8, seed=2))

    assert set(prompt_lengths(workload)) == set(range(10, 21))
    assert set(output_lengths(workload)) == set(range(5, 9))


def test_prompts_are_clipped_to_fit_max_model_len():
    """Every prompt leaves room for at least one output token under max_model_len."""
    workload = build_workload(WorkloadConfig(num_requests=2000, lengths="azure-code", seed=1), max_model_len=1024)

    assert max(prompt_lengths(workload)) == 1023


# -- shared prefixes and priorities --------------------------------------------------------


def test_each_prompt_starts_with_exactly_one_of_the_shared_prefixes():
    """With N shared prefixes, every prompt begins with one of them, all N are used, and the rest is unique."""
    prefix_len, num_prefixes = 48, 3
    workload = build_workload(WorkloadConfig(num_requests=300, shared_prefix_len=prefix_len,
                                             num_shared_prefixes=num_prefixes, seed=5))
    heads = [tuple(r.prompt_token_ids[:prefix_len]) for r in workload.requests]
    tails = [tuple(r.prompt_token_ids[prefix_len:]) for r in workload.requests]

    assert len(set(heads)) == num_prefixes
    assert all(len(tail) >= 1 for tail in tails)
    # No two requests share anything beyond their prefix, and no tail repeats a prefix token.
    tail_tokens = [token for tail in tails for token in tail]
    assert len(tail_tokens) == len(set(tail_tokens))
    assert not set(tail_tokens) & {token for head in heads for token in head}


def test_without_shared_prefixes_no_two_prompts_share_a_token():
    """Unique prompts share no token, so they can never hit each other's prefix-cache blocks."""
    workload = build_workload(WorkloadConfig(num_requests=200, seed=5))
    tokens = [token for r in workload.requests for token in r.prompt_token_ids]

    assert len(tokens) == len(set(tokens))


def test_high_priority_fraction_gives_about_that_share_of_priority_0():
    """high_priority_fraction=0.25 sends about a quarter of requests at priority 0, the rest at 1."""
    workload = build_workload(WorkloadConfig(num_requests=4000, high_priority_fraction=0.25, seed=6))
    priorities = [r.priority for r in workload.requests]

    assert set(priorities) == {0, 1}
    assert priorities.count(0) / len(priorities) == pytest.approx(0.25, abs=0.03)


def test_default_priority_is_0_for_every_request():
    """Without high_priority_fraction all requests share priority 0, so priority order is FCFS."""
    assert {r.priority for r in build_workload(WorkloadConfig(num_requests=50)).requests} == {0}


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, field",
    [
        ({"num_requests": 0}, "num_requests"),
        ({"num_requests": 2.5}, "num_requests"),
        ({"arrival": "bursty"}, "arrival"),
        ({"arrival_rate": 0}, "arrival_rate"),
        ({"arrival_rate": -1.0}, "arrival_rate"),
        ({"arrival_rate": math.nan}, "arrival_rate"),
        ({"arrival_cv": 0}, "arrival_cv"),
        ({"concurrency": -1}, "concurrency"),
        ({"lengths": "wikipedia"}, "lengths"),
        ({"prompt_len": 0}, "prompt_len"),
        ({"output_len": 0.5}, "output_len"),
        ({"lengths": "uniform", "prompt_len": 100, "prompt_len_high": 50, "output_len_high": 500}, "prompt_len_high"),
        ({"lengths": "uniform", "prompt_len_high": 600, "output_len": 100, "output_len_high": 50}, "output_len_high"),
        ({"shared_prefix_len": -1}, "shared_prefix_len"),
        ({"high_priority_fraction": 1.5}, "high_priority_fraction"),
        ({"high_priority_fraction": -0.1}, "high_priority_fraction"),
    ],
)
def test_bad_workload_values_name_their_field(settings, field):
    """Each invalid WorkloadConfig value raises ConfigError whose field is the setting at fault."""
    with pytest.raises(ConfigError) as error:
        WorkloadConfig(**settings)

    assert error.value.field == field


def test_zero_shared_prefixes_names_num_shared_prefixes():
    """num_shared_prefixes=0 is wrong in num_shared_prefixes, so that is the field named."""
    with pytest.raises(ConfigError) as error:
        WorkloadConfig(shared_prefix_len=16, num_shared_prefixes=0)

    assert error.value.field == "num_shared_prefixes"


def test_unknown_workload_setting_is_refused():
    """A typo in a scenario's [workload] section is an error, not a silently ignored key."""
    with pytest.raises(ConfigError) as error:
        WorkloadConfig.from_dict({"arival_rate": 3})

    assert error.value.field == "workload.arival_rate"


def test_a_shared_prefix_that_fills_max_model_len_is_refused():
    """A shared prefix leaving no room for a prompt under max_model_len names shared_prefix_len."""
    with pytest.raises(ConfigError) as error:
        build_workload(WorkloadConfig(num_requests=5, shared_prefix_len=100), max_model_len=100)

    assert error.value.field == "shared_prefix_len"


# -- closed loop ---------------------------------------------------------------------------


def closed_loop_run(concurrency):
    config = WorkloadConfig(num_requests=40, concurrency=concurrency, lengths="lognormal", prompt_len=200,
                            output_len=30, sigma=0.8, seed=9)
    sim = Simulation(EngineConfig(num_gpu_blocks=600, max_num_seqs=32, max_num_batched_tokens=512,
                                  max_model_len=2048), build_workload(config, max_model_len=2048))
    records = list(sim.records())
    return sim, records


def test_closed_loop_never_has_more_than_concurrency_requests_in_flight():
    """With concurrency=4, at most 4 requests are unfinished (running, waiting or swapped) after any step."""
    sim, records = closed_loop_run(4)

    in_flight = [r.num_running + r.num_waiting + r.num_swapped for r in records]
    assert max(in_flight) == 4
    assert len(sim.finished_requests) == 40


def test_closed_loop_sends_each_later_request_when_an_earlier_one_finishes():
    """After the first `concurrency` requests (at 0), every arrival time is some earlier request's finish time."""
    sim, _ = closed_loop_run(4)
    requests = sorted(sim.finished_requests.values(), key=lambda r: (r.arrival_time, r.arrival_index))
    first, later = requests[:4], requests[4:]
    finish_times = sorted(r.finish_time for r in requests)

    assert [r.arrival_time for r in first] == [0.0] * 4
    assert all(r.arrival_time > 0 for r in later)
    # One new request per finish: the later arrivals are exactly the first n - 4 finish times.
    assert sorted(r.arrival_time for r in later) == finish_times[: len(later)]
