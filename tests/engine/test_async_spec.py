"""Async scheduling and speculative decoding in the simulation: vLLM's defaults, the clock, the
metrics and the knobs' validation."""

import pytest

from scheduler_core.cli.main import main
from scheduler_core.engine.config import EngineConfig, VllmCompat, VllmRelease, vllm_default_async_scheduling
from scheduler_core.engine.kv_cache_manager import KVCacheManager
from scheduler_core.engine.request import Request
from scheduler_core.engine.spec_decode import AcceptanceModel, SpeculativeConfig
from scheduler_core.errors import ConfigError
from scheduler_core.lessons.framework import run_arm
from scheduler_core.sim.simulation import Simulation
from scheduler_core.timing.host_time import HostTime
from scheduler_core.workload.workload import RequestSpec, synthetic_workload, unique_prompt


def report(**engine):
    sim = Simulation(EngineConfig(num_gpu_blocks=2048, **engine), synthetic_workload(60, 5.0, 256, 64, seed=1))
    sim.run()
    return sim.metrics.report()


def test_vllm_turns_async_scheduling_on_by_default_only_where_it_does():
    assert vllm_default_async_scheduling({}) is True
    assert vllm_default_async_scheduling({"compat": VllmCompat.for_version("0.10.1.1").__dict__}) is False
    # One reverted rule is still 0.33, which has async scheduling on.
    assert vllm_default_async_scheduling({"compat": {"full_prompt_admission": False}}) is True
    assert vllm_default_async_scheduling({"policy": "vllm-v0"}) is False
    assert vllm_default_async_scheduling({"speculative_config": {"method": "eagle", "num_speculative_tokens": 3}}) is True
    # 0.33 turns it off for n-gram drafts only under the V1 model runner; Model Runner V2 is its default.
    ngram = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}
    assert vllm_default_async_scheduling(ngram) is True
    assert vllm_default_async_scheduling(ngram, VllmRelease("0.32.0")) is False
    assert vllm_default_async_scheduling({}, VllmRelease("0.14.0")) is True
    assert vllm_default_async_scheduling({}, VllmRelease("0.13.0")) is False


def test_async_scheduling_hides_the_hosts_work_behind_the_gpu():
    """Same requests: with the host's per-step work overlapped, inter-token latency drops."""
    sync, overlapped = report(), report(async_scheduling=True)
    assert overlapped["tpot_s"]["mean"] < sync["tpot_s"]["mean"]
    assert overlapped["num_requests"] == sync["num_requests"] == 60


def steady_decode_steps(async_scheduling: bool, num_requests: int = 64) -> list:
    """The records of a run of `num_requests` decoding together, after their prompts."""
    sim = Simulation(EngineConfig(num_gpu_blocks=4096, max_num_seqs=num_requests, async_scheduling=async_scheduling),
                     [RequestSpec(f"r{i}", 0.0, unique_prompt(i, 128), 64) for i in range(num_requests)])
    records = list(sim.records())
    return [r for r in records if len(r.scheduled) == num_requests and all(c.kind == "decode" for c in r.scheduled)]


def test_without_async_scheduling_every_step_waits_for_the_hosts_work_on_its_requests():
    """vLLM PR #23914's measured 12.8 us per scheduled request, charged on top of the GPU's time and
    shown in the step's breakdown; the async loop's passes carry none of it while the GPU is busier."""
    host_s = HostTime().seconds(64)
    assert host_s == pytest.approx(64 * 12.8e-6)
    sync = steady_decode_steps(False)
    assert sync and all(r.cost_breakdown["host"] == pytest.approx(host_s) for r in sync)
    assert all(r.step_s == pytest.approx(sum(r.cost_breakdown.values())) for r in sync)
    overlapped = steady_decode_steps(True)
    assert overlapped and all("host" not in r.cost_breakdown for r in overlapped)
    # A steady pass takes the GPU's time for a batch: the host's work for the next ran meanwhile.
    middle = overlapped[len(overlapped) // 2]
    assert middle.step_s == pytest.approx(sum(middle.cost_breakdown.values()), rel=0.02)
    assert sync[len(sync) // 2].step_s - middle.step_s == pytest.approx(host_s, rel=0.1)


def test_the_v0_engine_and_static_batching_are_charged_the_gpus_time_alone():
    for policy in ("vllm-v0", "static"):
        sim = Simulation(EngineConfig(num_gpu_blocks=4096, policy=policy, max_num_batched_tokens=4096),
                         synthetic_workload(8, 1e6, 128, 16, seed=3))
        assert all("host" not in r.cost_breakdown for r in sim.records())


def test_drafts_cut_time_per_output_token_and_report_vllms_spec_decode_counters():
    plain, drafted = report(), report(speculative_config=SpeculativeConfig("eagle", 3))
    assert drafted["tpot_s"]["mean"] < plain["tpot_s"]["mean"]
    assert drafted["spec_decode_num_drafts"] > 0
    assert drafted["spec_decode_num_drafts"] < drafted["spec_decode_num_draft_tokens"] <= 3 * drafted["spec_decode_num_drafts"]
    per_pos = drafted["spec_decode_num_accepted_tokens_per_pos"]
    assert per_pos[0] >= per_pos[1] >= per_pos[2] and sum(per_pos) == drafted["spec_decode_num_accepted_tokens"]
    assert 1 < drafted["spec_decode_mean_acceptance_length"] < 4
    assert "spec_decode_num_drafts" not in plain


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_each_step_records_its_drafts_and_the_verifications_it_completed(async_scheduling):
    """What the batch panel shows: a decode carrying K drafts is a decode of 1 + K tokens, and the
    steps' accepted drafts add up to vLLM's counter (under async scheduling as well, where a
    verification completes a pass after its drafts were scheduled)."""
    config = EngineConfig(num_gpu_blocks=2048, async_scheduling=async_scheduling,
                          speculative_config=SpeculativeConfig("eagle", 3))
    sim = Simulation(config, synthetic_workload(60, 5.0, 256, 64, seed=1))
    records = list(sim.records())
    drafted = [(record, chunk) for record in records for chunk in record.scheduled
               if chunk.request_id in record.scheduled_spec_decode_tokens]
    assert drafted
    for record, chunk in drafted:
        assert chunk.kind == "decode" and chunk.num_tokens == 1 + record.scheduled_spec_decode_tokens[chunk.request_id]
    stats = sim.scheduler.spec_stats
    assert sum(sum(r.scheduled_spec_decode_tokens.values()) for r in records) >= stats.num_draft_tokens
    assert sum(sum(r.num_accepted_tokens.values()) for r in records) == stats.num_accepted_tokens > 0


def test_acceptance_is_deterministic_per_seed():
    rates = SpeculativeConfig("eagle", 5, (0.9, 0.8, 0.7, 0.6, 0.5), 7)
    draws = [AcceptanceModel(rates).num_accepted("r1", 5) for _ in range(2)]
    assert draws[0] == draws[1]
    other_seed = AcceptanceModel(SpeculativeConfig("eagle", 5, (0.9, 0.8, 0.7, 0.6, 0.5), 8))
    model = AcceptanceModel(rates)
    assert [model.num_accepted("r1", 5) for _ in range(20)] != [other_seed.num_accepted("r1", 5) for _ in range(20)]


def test_eagle_reserves_lookahead_slots_and_ngram_does_not():
    assert SpeculativeConfig("eagle", 3).num_lookahead_tokens == 3
    assert SpeculativeConfig("ngram", 3).num_lookahead_tokens == 0
    kv = KVCacheManager(64, 16, 4096, enable_caching=False)
    request = Request("a", list(range(30)), 10)
    assert len(kv.allocate_slots(request, 30, num_lookahead_tokens=3)) == 3  # 33 slots: 3 blocks


def test_published_defaults_apply_when_no_rates_are_given():
    assert SpeculativeConfig("mtp", 1).acceptance_rate == (0.85,)
    assert len(SpeculativeConfig("eagle3", 4).acceptance_rate) == 4


@pytest.mark.parametrize("value, field", [
    ({"method": "medusa", "num_speculative_tokens": 2}, "speculative_config.method"),
    ({"method": "eagle", "num_speculative_tokens": 0}, "speculative_config.num_speculative_tokens"),
    ({"method": "eagle"}, "speculative_config.num_speculative_tokens"),
    ({"method": "eagle", "num_speculative_tokens": 2, "acceptance_rate": [0.5]}, "speculative_config.acceptance_rate"),
    ({"method": "eagle", "num_speculative_tokens": 1, "acceptance_rate": [1.5]}, "speculative_config.acceptance_rate"),
    ({"method": "eagle", "num_speculative_tokens": 1, "draft_typo": 1}, "speculative_config.draft_typo"),
    ("{not json", "speculative_config"),
])
def test_a_bad_speculative_config_names_its_field(value, field):
    with pytest.raises(ConfigError) as error:
        SpeculativeConfig.from_json(value)
    assert error.value.field == field


def test_the_cli_reports_a_bad_speculative_config_without_a_traceback(capsys):
    # An engine argument: argparse reports it (exit status 2), as for every vLLM flag.
    with pytest.raises(SystemExit) as exit_:
        main(["run", "default", "--num-requests", "5", "--speculative-config", '{"method": "x", "num_speculative_tokens": 1}'])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --speculative-config: speculative_config.method" in err and "Traceback" not in err


def test_lessons_pin_the_synchronous_loop_their_beats_and_claims_were_written_for():
    """vLLM's async default applies to `run`, `compare` and the dashboard's own scenarios; a lesson's
    arms (CLI, API and dashboard alike) run exactly as written, so its step counts do not move: the
    synchronous loop, except the arms that ask for the async one: the async-scheduling lesson's, the
    speculative-decoding lesson's crowd, which runs as vLLM 0.33 would (async, n-gram drafts included),
    and the capacity and moe-sliding-window lessons', which run at vLLM's defaults."""
    from scheduler_core.lessons.catalog import LESSONS

    asked = {(lesson.name, arm) for lesson in LESSONS for arm, data in lesson.arms.items()
             if data["engine"].get("async_scheduling")}
    assert asked == {("async-scheduling", "async"), ("async-scheduling", "async-crowd"),
                     ("speculative-decoding", "eagle-3-crowd"), ("speculative-decoding", "ngram-3-crowd"),
                     ("speculative-decoding", "no-drafts-crowd"),
                     *(("capacity", arm) for arm in ("h100-defaults", "h100-fp8-kv", "h100-fp8-kv-128-seqs",
                                                     "h100-fp8-kv-alpaca", "h200-defaults")),
                     *(("moe-sliding-window", arm) for arm in ("gpt-oss-120b", "dense-70b-fp8", "dense-8b"))}
    for lesson in LESSONS:
        for arm in lesson.arms:
            assert lesson.scenario(arm).engine.async_scheduling is ((lesson.name, arm) in asked), f"{lesson.name}:{arm}"


def test_stepping_back_with_drafts_keeps_the_draft_counters_counting():
    """After a restore the metrics still read the scheduler's draft counters, so the report of a
    run that stepped back equals the report of the same run played straight through."""
    def simulation():
        return Simulation(EngineConfig(num_gpu_blocks=2048, async_scheduling=True,
                                       speculative_config=SpeculativeConfig("eagle", 3)),
                          synthetic_workload(60, 5.0, 256, 64, seed=1))

    straight = simulation()
    straight.run()
    stepped_back = simulation()
    stepped_back.run(max_steps=40)
    state = stepped_back.snapshot()
    stepped_back.run(max_steps=30)
    stepped_back.restore(state)
    stepped_back.run()

    assert stepped_back.metrics.report() == straight.metrics.report()
    assert straight.metrics.report()["spec_decode_num_drafts"] > 0


def test_a_request_preempted_with_its_last_token_in_flight_finishes_and_the_lesson_bookkeeping_takes_it():
    """Under async scheduling a pass's schedule can preempt a request whose prompt's step is still in
    flight with its only token; that pass's update then finishes it (vLLM 0.33's `update_from_output`
    stops it among its preempted requests). Its blocks went with the preemption: a lesson counts it
    as neither running nor a late release."""
    def simulation():
        specs = [RequestSpec("r0", 0.005, unique_prompt(0, 30), 20), RequestSpec("r1", 0.001, unique_prompt(1, 23), 1),
                 RequestSpec("r2", 0.005, unique_prompt(2, 17), 1), RequestSpec("r3", 0.002, unique_prompt(3, 9), 1)]
        config = EngineConfig(num_gpu_blocks=5, max_num_seqs=8, max_num_batched_tokens=64, async_scheduling=True,
                              enable_prefix_caching=False)
        return Simulation(config, specs)

    records = list(simulation().records())
    both = [(r.step, rid) for r in records for rid in r.finished if rid in r.preempted]
    assert both == [(5, "r2")]
    late = sum(1 for r in records for rid in r.finished
               if rid not in r.preempted and all(c.request_id != rid for c in r.scheduled))
    result = run_arm("async", simulation())
    assert result.report["num_requests"] == 4 and result.late_releases == late
