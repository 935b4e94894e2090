"""/metrics holds vLLM 0.33's whole default metric set (the list below, read off vLLM's
`vllm/v1/metrics/loggers.py`, `buckets.py`, `perf.py` and `spec_decode/metrics.py`) with vLLM's
names, types, labels and buckets, and its counters never go backwards: not on step back, not on
reset, not when the default session changes."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.vllm_metrics import EngineSeries, render_metrics
from scheduler_core.scenario.scenario import Scenario
from tests.app.clients import app_client, create, default_scenario

# vLLM's bucket families (vllm/v1/metrics/buckets.py).
REQUEST_LATENCY = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                   480.0, 960.0, 1920.0, 7680.0)
TIME_TO_FIRST_TOKEN = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                       40.0, 80.0, 160.0, 640.0, 2560.0)
INTER_TOKEN_LATENCY = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                       40.0, 80.0)
ITERATION_TOKENS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
REQUEST_PARAMS_N = (1, 2, 5, 10, 20)
REQUEST_NUM_PREEMPTIONS = (1, 2, 3, 4, 5, 10, 20)
REQUEST_TOKENS = "1-2-5 up to max_model_len"

# Every metric vLLM 0.33 registers without options: (type, labels beyond model_name and engine, buckets).
VLLM_0_33_DEFAULT_METRICS = {
    "vllm:num_requests_running": ("gauge", (), None),
    "vllm:num_requests_waiting": ("gauge", (), None),
    "vllm:num_requests_waiting_by_reason": ("gauge", ("reason",), None),
    "vllm:engine_sleep_state": ("gauge", ("sleep_state",), None),
    "vllm:kv_cache_usage_perc": ("gauge", (), None),
    "vllm:prefix_cache_queries": ("counter", (), None),
    "vllm:prefix_cache_hits": ("counter", (), None),
    "vllm:external_prefix_cache_queries": ("counter", (), None),
    "vllm:external_prefix_cache_hits": ("counter", (), None),
    "vllm:mm_cache_queries": ("counter", (), None),
    "vllm:mm_cache_hits": ("counter", (), None),
    "vllm:num_preemptions": ("counter", (), None),
    "vllm:prompt_tokens": ("counter", (), None),
    "vllm:prompt_tokens_by_source": ("counter", ("source",), None),
    "vllm:prompt_tokens_cached": ("counter", (), None),
    "vllm:prompt_tokens_cached_by_source": ("counter", ("source",), None),
    "vllm:generation_tokens": ("counter", (), None),
    "vllm:request_success": ("counter", ("finished_reason",), None),
    "vllm:admission_rejections": ("counter", ("reason", "-engine"), None),  # the one without an engine label
    "vllm:request_prompt_tokens": ("histogram", (), REQUEST_TOKENS),
    "vllm:request_generation_tokens": ("histogram", (), REQUEST_TOKENS),
    "vllm:iteration_tokens_total": ("histogram", (), ITERATION_TOKENS),
    "vllm:request_max_num_generation_tokens": ("histogram", (), REQUEST_TOKENS),
    "vllm:request_params_n": ("histogram", (), REQUEST_PARAMS_N),
    "vllm:request_params_max_tokens": ("histogram", (), REQUEST_TOKENS),
    "vllm:time_to_first_token_seconds": ("histogram", (), TIME_TO_FIRST_TOKEN),
    "vllm:inter_token_latency_seconds": ("histogram", (), INTER_TOKEN_LATENCY),
    "vllm:request_time_per_output_token_seconds": ("histogram", (), INTER_TOKEN_LATENCY),
    "vllm:e2e_request_latency_seconds": ("histogram", (), REQUEST_LATENCY),
    "vllm:request_queue_time_seconds": ("histogram", (), REQUEST_LATENCY),
    "vllm:request_inference_time_seconds": ("histogram", (), REQUEST_LATENCY),
    "vllm:request_prefill_time_seconds": ("histogram", (), REQUEST_LATENCY),
    "vllm:request_decode_time_seconds": ("histogram", (), REQUEST_LATENCY),
    "vllm:request_num_preemptions": ("histogram", (), REQUEST_NUM_PREEMPTIONS),
    "vllm:request_prefill_kv_computed_tokens": ("histogram", (), REQUEST_TOKENS),
    "vllm:estimated_flops_per_gpu": ("counter", (), None),
    "vllm:estimated_read_bytes_per_gpu": ("counter", (), None),
    "vllm:estimated_write_bytes_per_gpu": ("counter", (), None),
    # vLLM's CacheConfig fields (some of them here) and the engine, without model_name.
    "vllm:cache_config_info": ("gauge", ("-model_name", "block_size", "cache_dtype", "enable_prefix_caching",
                                         "gpu_memory_utilization", "num_gpu_blocks", "num_cpu_blocks", "sliding_window"),
                               None),
}
# With a speculative config (position: 0 .. num_speculative_tokens - 1).
VLLM_0_33_SPEC_DECODE_METRICS = {
    "vllm:spec_decode_num_drafts": ("counter", (), None),
    "vllm:spec_decode_num_draft_tokens": ("counter", (), None),
    "vllm:spec_decode_num_accepted_tokens": ("counter", (), None),
    "vllm:spec_decode_num_accepted_tokens_per_pos": ("counter", ("position",), None),
}
NUM_STEPS = 400


def families(text: str) -> dict:
    return {family.name: family for family in text_string_to_metric_families(text) if family.name.startswith("vllm:")}


def one_two_five(limit: int) -> tuple[float, ...]:
    return tuple(m * 10**e for e in range(12) for m in (1, 2, 5) if m * 10**e <= limit)


def assert_matches_vllm(found: dict, expected: dict, max_model_len: int) -> None:
    for name, (kind, labels, buckets) in expected.items():
        family = found[name]
        assert family.type == kind, name
        wanted = {"model_name", "engine"} | {label for label in labels if not label.startswith("-")}
        wanted -= {label[1:] for label in labels if label.startswith("-")}
        for sample in family.samples:
            assert wanted <= set(sample.labels) - {"le"}, (name, sample.labels)
            if name != "vllm:cache_config_info":
                assert set(sample.labels) - {"le"} == wanted, (name, sample.labels)
        if buckets is not None:
            bounds = one_two_five(max_model_len) if buckets == REQUEST_TOKENS else buckets
            les = [sample.labels["le"] for sample in family.samples if sample.name.endswith("_bucket")]
            assert les == [*map(lambda b: repr(float(b)), bounds), "+Inf"], name


def value_of(found: dict, name: str, **labels) -> float:
    """A counter's total, a histogram's count or a gauge's value, of the sample with these labels."""
    family = found[name]
    sample_name = name + {"counter": "_total", "histogram": "_count", "gauge": ""}[family.type]
    return next(s.value for s in family.samples if s.name == sample_name and labels.items() <= s.labels.items())


@pytest.fixture
def client():
    with app_client() as client:
        yield client


def play(client, created: dict, num_steps: int):
    """The session's own object, stepped on directly (as play does, without a page)."""
    session = client.app.state.manager.get(created["session_id"]).session
    session.advance(num_steps)
    return session


def test_every_vllm_0_33_default_metric_is_there_with_its_type_labels_and_buckets(client):
    created = create(client, preset="default")
    session = play(client, created, NUM_STEPS)

    found = families(client.get(f"/metrics?session={created['session_id']}").text)

    assert_matches_vllm(found, VLLM_0_33_DEFAULT_METRICS, session.sim.config.max_model_len)
    assert not VLLM_0_33_SPEC_DECODE_METRICS.keys() & found.keys()  # only with drafts, as in vLLM


def test_the_spec_decoding_counters_come_with_drafts(client):
    scenario = default_scenario()
    scenario["engine"]["speculative_config"] = {"method": "ngram", "num_speculative_tokens": 3,
                                                "acceptance_rate": [0.7, 0.5, 0.3]}
    created = create(client, scenario=scenario)
    session = play(client, created, NUM_STEPS)

    found = families(client.get(f"/metrics?session={created['session_id']}").text)

    assert_matches_vllm(found, {**VLLM_0_33_DEFAULT_METRICS, **VLLM_0_33_SPEC_DECODE_METRICS},
                        session.sim.config.max_model_len)
    spec = session.sim.metrics.spec_decode
    drafts = found["vllm:spec_decode_num_draft_tokens"].samples[0].value
    assert drafts == spec.num_draft_tokens > 0
    positions = [s.labels["position"] for s in found["vllm:spec_decode_num_accepted_tokens_per_pos"].samples]
    assert positions == ["0", "1", "2"]


def test_the_values_are_the_sessions_own(client):
    """Gauges as the scheduler stands, finishes by reason ("length": the simulated model never samples
    EOS), the token counters as the simulation's, TTFT for every request that has its first token."""
    created = create(client, preset="default")
    sim = play(client, created, NUM_STEPS).sim

    found = families(client.get(f"/metrics?session={created['session_id']}").text)
    value = lambda name, **labels: value_of(found, name, **labels)  # noqa: E731

    assert value("vllm:num_requests_running") == len(sim.scheduler.running)
    assert value("vllm:kv_cache_usage_perc") == pytest.approx(sim.scheduler.kv_cache_manager.usage)
    assert value("vllm:request_success", finished_reason="length") == sim.metrics.num_finished > 0
    assert value("vllm:request_success", finished_reason="stop") == 0
    started = [*sim.finished_requests.values(), *(r for r in sim.scheduler.requests.values() if r.num_output_tokens)]
    assert value("vllm:generation_tokens") == sum(r.num_output_tokens for r in started)
    assert value("vllm:prompt_tokens") == sum(r.num_prompt_tokens for r in started)
    assert value("vllm:time_to_first_token_seconds") == len(started)
    assert value("vllm:e2e_request_latency_seconds") == sim.metrics.num_finished
    assert value("vllm:prefix_cache_hits") == sim.metrics.prefix_hits


def counter_samples(text: str) -> dict[tuple, float]:
    """Every sample that must never fall: counters, and histograms' buckets, counts and sums."""
    out = {}
    for family in families(text).values():
        if family.type in ("counter", "histogram"):
            for sample in family.samples:
                out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def engines_of(text: str) -> set[str]:
    return {sample.labels["engine"] for family in families(text).values() for sample in family.samples
            if "engine" in sample.labels and family.name != "vllm:cache_config_info"}


def test_counters_never_go_backwards_across_step_back_reset_and_a_session_switch(client):
    first = create(client, preset="default")
    session = play(client, first, 300)
    scrapes = [client.get("/metrics").text]
    session.seek(150)  # a step back
    scrapes.append(client.get("/metrics").text)
    session.advance(100)
    scrapes.append(client.get("/metrics").text)
    session.seek(0)  # a reset
    scrapes.append(client.get("/metrics").text)
    second = create(client, preset="default")
    play(client, second, 50)  # now the most recently active: the default /metrics switches to it
    scrapes.append(client.get("/metrics").text)

    for earlier, later in zip(scrapes, scrapes[1:]):
        before, after = counter_samples(earlier), counter_samples(later)
        assert [key for key in before.keys() & after.keys() if after[key] < before[key]] == []
    engines = [engines_of(text) for text in scrapes]
    assert engines[0] == {first["session_id"]}
    assert engines[1] == engines[2] == {f"{first['session_id']}.1"}  # a new series from the step back on
    assert len({*map(frozenset, engines)}) == 4 and engines[4] == {second["session_id"]}


def test_a_scrape_changes_nothing(client):
    """GET /metrics reads: the session's step, checkpoints and series stay as they were."""
    created = create(client, preset="default")
    session = play(client, created, 100)
    checkpoints = len(session.checkpoints)

    texts = [client.get(f"/metrics?session={created['session_id']}").text for _ in range(2)]

    assert texts[0] == texts[1]
    assert session.step == 100 and session.sim.num_restores == 0 and len(session.checkpoints) == checkpoints


def without_engine(text: str) -> dict[tuple, float]:
    return {(name, tuple(label for label in labels if label[0] != "engine")): value
            for (name, labels), value in counter_samples(text).items()}


def test_after_a_step_back_the_new_series_holds_the_counts_of_that_step(client):
    """The restored engine counts as it had at that step: the same as a session played straight there."""
    back, straight = create(client, preset="default"), create(client, preset="default")
    play(client, back, 300).seek(120)
    play(client, straight, 120)

    texts = [client.get(f"/metrics?session={created['session_id']}").text for created in (back, straight)]

    assert without_engine(texts[0]) == without_engine(texts[1])


def test_several_engines_render_as_one_exposition_with_a_series_each():
    """What a server of several engines (replicas) would expose: each family once, a series per engine."""
    sims = []
    for seed in (1, 2):
        sim = Scenario.from_dict({"workload": {"num_requests": 20, "seed": seed}}).build()
        sim.enable_vllm_stats()
        sim.run(200)
        sims.append(sim)

    found = families(render_metrics([EngineSeries(sim, "m", str(index)) for index, sim in enumerate(sims)]).decode())

    assert found.keys() == VLLM_0_33_DEFAULT_METRICS.keys()
    generation = {s.labels["engine"]: s.value for s in found["vllm:generation_tokens"].samples if s.name.endswith("_total")}
    assert generation == {str(i): float(sim.metrics.vllm.generation_tokens) for i, sim in enumerate(sims)}
    assert len(found["vllm:admission_rejections"].samples) == 2  # no engine label: one per reason for the model


def test_scrapes_have_a_budget_per_client():
    """Past its burst a client's scrapes find 429 with Retry-After (a scrape costs milliseconds of CPU)."""
    with app_client(compute_per_client_per_s=1.0, compute_burst=3.0) as client:
        statuses = [client.get("/metrics") for _ in range(4)]

    assert [response.status_code for response in statuses] == [200, 200, 200, 429]
    assert "metrics scrapes" in statuses[-1].json()["detail"] and statuses[-1].headers["retry-after"]
