"""The vllm-v1 policy makes vLLM's own decisions: our replay log equals vLLM's, field for field.

The fixtures are recordings of vLLM's real V1 scheduler (releases 0.33.0 and 0.10.1.1) over five
scenarios; see fixtures/vllm_oracle/README.md.
"""

import gzip
import json
from dataclasses import fields
from pathlib import Path

import pytest

from scheduler_core.cli.main import main
from scheduler_core.engine.config import VllmCompat
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.sim.replay import load_trace, replay
from tests.paths import FIXTURES, REPO

ORACLE = FIXTURES / "vllm_oracle"
MORE = FIXTURES / "vllm_oracle_more"
SCENARIOS = ["a_ample_chunked", "b_tight_preempt", "c_prefix_cache", "d_no_chunk", "f_poisson_lognormal"]
VERSIONS = ["0.33.0", "0.10.1.1"]


def recorded_log(version: str, scenario: str) -> list[dict]:
    with gzip.open(ORACLE / f"out_{version}_{scenario}.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def trace(scenario: str) -> dict:
    return load_trace(ORACLE / f"trace_{scenario}.json.gz")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_replay_matches_vllm_step_for_step(version, scenario):
    expected = recorded_log(version, scenario)
    actual = list(replay(trace(scenario), version))
    for want, got in zip(expected, actual):
        assert got == want, f"step {want['step']} differs"
    assert len(actual) == len(expected)


def test_replay_command_writes_the_same_log(tmp_path):
    out = tmp_path / "log.jsonl"
    assert main(["replay", str(ORACLE / "trace_b_tight_preempt.json.gz"), "--out", str(out)]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written == recorded_log("0.33.0", "b_tight_preempt")


def test_replay_command_version_flag_selects_the_010_profile(tmp_path):
    out = tmp_path / "log.jsonl.gz"
    trace_path = ORACLE / "trace_b_tight_preempt.json.gz"
    assert main(["replay", str(trace_path), "--out", str(out), "--vllm-version", "0.10.1.1"]) == 0
    with gzip.open(out, "rt") as f:
        written = [json.loads(line) for line in f]
    assert written == recorded_log("0.10.1.1", "b_tight_preempt")


def test_full_prompt_admission_alone_removes_the_thrash_of_scenario_b():
    """R1 is the switch that matters in scenario b: 0.10 with only R1 turned on preempts once."""
    thrash = sum(len(line["preempted"]) for line in replay(trace("b_tight_preempt"), "0.10.1.1"))
    only_r1 = VllmCompat(**{**VllmCompat.for_version("0.10.1.1").__dict__, "full_prompt_admission": True})
    calm = sum(len(line["preempted"]) for line in replay(trace("b_tight_preempt"), compat=only_r1))
    assert thrash == 210
    assert calm < 5


@pytest.mark.parametrize("switch", [f.name for f in fields(VllmCompat)])
def test_each_switch_can_be_flipped_alone(switch):
    flipped = VllmCompat(**{switch: False})
    assert [f.name for f in fields(flipped) if not getattr(flipped, f.name)] == [switch]
    # Every profile replays every scenario to completion with any single switch flipped.
    lines = list(replay(trace("d_no_chunk"), compat=flipped))
    assert lines[-1]["num_running"] == 0 and lines[-1]["num_waiting"] == 0


def test_010_reports_usage_over_all_blocks_and_033_excludes_the_null_block():
    step = 1
    old = list(replay(trace("b_tight_preempt"), "0.10.1.1"))[step]
    new = list(replay(trace("b_tight_preempt"), "0.33.0"))[step]
    assert old["kv_usage"] == round(1 - old["num_free_blocks"] / 160, 6)
    assert new["kv_usage"] == round(1 - new["num_free_blocks"] / 159, 6)


def more_cases():
    for log in sorted(MORE.glob("out_*.jsonl.gz")):
        version, scenario = log.name[len("out_"):-len(".jsonl.gz")].split("_", 1)
        yield pytest.param(version, scenario, id=f"{version}-{scenario}")


@pytest.mark.parametrize("version, scenario", list(more_cases()))
def test_replay_matches_vllm_on_scenarios_recorded_later(version, scenario):
    """Priority, prefix caching under pressure, long-prefill caps, no chunking, small blocks and
    length capping: the replay log is vLLM's, byte for byte."""
    with gzip.open(MORE / f"out_{version}_{scenario}.jsonl.gz", "rt") as f:
        expected = f.read()
    lines = replay(load_trace(MORE / f"trace_{scenario}.json.gz"), version)
    assert "".join(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines) == expected


def test_replay_command_output_is_byte_identical_to_vllms_log(tmp_path):
    """The file `servescope replay` writes is the recorded log, character for character."""
    out = tmp_path / "log.jsonl"
    assert main(["replay", str(MORE / "trace_k_priority_prefix.json.gz"), "--out", str(out)]) == 0
    with gzip.open(MORE / "out_0.33.0_k_priority_prefix.jsonl.gz", "rt") as f:
        assert out.read_text() == f.read()


def test_replay_does_not_need_the_trace_sorted_by_arrival_step():
    """Requests listed out of step order still arrive at their step, in trace order within it."""
    original = trace("f_poisson_lognormal")
    shuffled = {**original, "requests": sorted(original["requests"], key=lambda r: -r["arrival_step"])}
    assert shuffled["requests"] != original["requests"]
    assert list(replay(shuffled)) == recorded_log("0.33.0", "f_poisson_lognormal")


ASYNC = FIXTURES / "vllm_oracle_async"


def async_cases():
    for log in sorted(ASYNC.glob("out_0.33.0_async_*.jsonl.gz")):
        yield pytest.param(log.name[len("out_0.33.0_async_"):-len(".jsonl.gz")], id=log.name[len("out_"):-len(".jsonl.gz")])


def trace_path(scenario: str) -> Path:
    return next(path for path in (ORACLE / f"trace_{scenario}.json.gz", MORE / f"trace_{scenario}.json.gz") if path.exists())


@pytest.mark.parametrize("scenario", list(async_cases()))
def test_async_replay_matches_vllms_async_scheduler_byte_for_byte(scenario):
    """vLLM 0.33.0's AsyncScheduler in its engine loop (batch queue of two), one line per pass:
    chunked prefill, prefix caching, memory pressure, priority, small blocks, length capping."""
    with gzip.open(ASYNC / f"out_0.33.0_async_{scenario}.jsonl.gz", "rt") as f:
        expected = f.read()
    lines = replay(load_trace(trace_path(scenario)), async_scheduling=True)
    assert "".join(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines) == expected


def test_replay_command_async_scheduling_flag(tmp_path):
    out = tmp_path / "log.jsonl"
    trace_file = str(MORE / "trace_g_priority_tight.json.gz")
    assert main(["replay", trace_file, "--out", str(out), "--async-scheduling"]) == 0
    with gzip.open(ASYNC / "out_0.33.0_async_g_priority_tight.jsonl.gz", "rt") as f:
        assert out.read_text() == f.read()


def test_async_tokens_arrive_a_pass_later_and_a_finishing_request_holds_its_blocks_one_more_schedule():
    """r00's first token comes back one pass later than in the synchronous loop; its last token is
    scheduled in one pass and arrives in the next, whose schedule() runs with r00 still running
    (holding its blocks) but skips it."""
    lines = list(replay(trace("a_ample_chunked"), async_scheduling=True))
    synchronous = list(replay(trace("a_ample_chunked")))
    first_token = next(line["step"] for line in lines if "r00" in line["sampled"])
    assert first_token == next(line["step"] for line in synchronous if "r00" in line["sampled"]) + 1
    finish = next(line for line in lines if "r00" in line["finished"])
    assert "r00" not in finish["scheduled"] and finish["total_tokens"] > 0
    assert lines[finish["step"] - 1]["scheduled"].get("r00") == 1


SPEC = FIXTURES / "vllm_oracle_spec"
MANIFEST = REPO / "tools" / "vllm_recorder" / "fixtures.json"


def spec_runs():
    for run in json.loads(MANIFEST.read_text())["runs"]:
        if "speculative_config" in run:
            yield pytest.param(run, id=Path(run["out"]).name[len("out_"):-len(".jsonl.gz")])


def spec_config_json(run: dict) -> str:
    """The run's vLLM speculative config with the recording's acceptance model."""
    return json.dumps({**run["speculative_config"], "acceptance_rate": run["acceptance_rate"],
                       "acceptance_seed": run["acceptance_seed"]})


@pytest.mark.parametrize("run", list(spec_runs()))
def test_speculative_replay_matches_vllm_byte_for_byte(run):
    """vLLM 0.33.0's Scheduler with n-gram drafts (K = 1, 3, 5; memory pressure; prefix caching) and
    EAGLE drafts (lookahead slots; prefix caching with lookahead hashes, the drop and neither;
    padded 1 + K admission; sync and async), the fake model accepting each draft position with a
    seeded draw: same steps, same rollbacks, same hits."""
    root = MANIFEST.parents[2]
    with gzip.open(root / run["out"], "rt") as f:
        expected = f.read()
    spec = SpeculativeConfig.from_json(spec_config_json(run))
    lines = replay(load_trace(root / run["trace"]), speculative_config=spec,
                   async_scheduling=run.get("async_scheduling", False))
    assert "".join(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines) == expected


SPEC_PREFIX = FIXTURES / "vllm_oracle_spec_prefix"


def spec_prefix_log(name: str) -> list[dict]:
    with gzip.open(SPEC_PREFIX / f"out_0.33.0_{name}.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def test_vllm_pads_a_cached_prompts_admission_to_one_plus_k_unless_a_prefill_runs():
    """A 33-token prompt resent: 32 tokens cached, one to compute, scheduled for 1 + K = 4 with K
    padding drafts; beside the long prompt's chunks, the resent 65-token prompt gets its 1 token."""
    admissions = {rid: (line["scheduled"][rid], line["cached_tokens"][rid], line["spec_tokens"].get(rid, 0))
                  for line in spec_prefix_log("ngram3_padded_admission") for rid in line["new"]}
    assert admissions["c0-again"] == admissions["c0-third"] == (4, 32, 3)
    assert admissions["c1-again"] == (4, 48, 3)
    assert admissions["c2-again"] == (1, 64, 0)


def test_eagle_hits_less_under_the_drop_than_with_lookahead_hashes_or_none():
    def hit_tokens(name):
        return sum(sum(line["cached_tokens"].values()) for line in spec_prefix_log(name))

    assert hit_tokens("eagle3_drop_shared_prefix") < hit_tokens("eagle3_shared_prefix") < hit_tokens("ngram3_shared_prefix")
    assert hit_tokens("eagle3_no_drop_shared_prefix") == hit_tokens("ngram3_shared_prefix")


def test_replay_command_speculative_config_flag(tmp_path):
    run = next(iter(spec_runs())).values[0]
    root = MANIFEST.parents[2]
    out = tmp_path / "log.jsonl"
    assert main(["replay", str(root / run["trace"]), "--out", str(out), "--speculative-config", spec_config_json(run)]) == 0
    with gzip.open(root / run["out"], "rt") as f:
        assert out.read_text() == f.read()


def test_drafts_cut_the_step_count_and_rejections_roll_back():
    """With 3 drafts a position, decoding takes fewer steps; a step with a rejected draft leaves
    the request's next schedule one token (the bonus token) past what it accepted."""
    plain = list(replay(trace("a_ample_chunked")))
    spec = SpeculativeConfig("ngram", 3, (0.8, 0.7, 0.6), 0)
    drafted = list(replay(trace("a_ample_chunked"), speculative_config=spec))
    assert len(drafted) < len(plain)
    rejected = next(line for line in drafted if any(n < 3 for n in line["accepted_tokens"].values()))
    rid, accepted = next((r, n) for r, n in rejected["accepted_tokens"].items() if n < 3)
    following = drafted[rejected["step"] + 1]
    assert following["scheduled"][rid] == 1 + following["spec_tokens"].get(rid, 0)


HYBRID = FIXTURES / "vllm_oracle_hybrid"


def hybrid_cases():
    for log in sorted(HYBRID.glob("out_0.33.0_*.jsonl.gz")):
        name = log.name[len("out_0.33.0_"):-len(".jsonl.gz")]
        is_async = name.startswith("async_")
        yield pytest.param(name.removeprefix("async_"), is_async, id=name)


@pytest.mark.parametrize("scenario, async_scheduling", list(hybrid_cases()))
def test_hybrid_replay_matches_vllms_hybrid_kv_cache_manager_byte_for_byte(scenario, async_scheduling):
    """vLLM 0.33.0's scheduler with a KVCacheConfig of several groups over one pool (full attention
    with sliding windows, chunked local attention or a Mamba state group), under chunked prefill,
    memory pressure and prefix caching, synchronous and async: same steps, same free blocks."""
    with gzip.open(HYBRID / f"out_0.33.0_{'async_' if async_scheduling else ''}{scenario}.jsonl.gz", "rt") as f:
        expected = f.read()
    lines = replay(load_trace(HYBRID / f"trace_{scenario}.json.gz"), async_scheduling=async_scheduling)
    assert "".join(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines) == expected


def test_hybrid_recordings_cover_every_group_kind():
    kinds = {group["kind"] for path in HYBRID.glob("trace_*.json.gz")
             for group in load_trace(path)["config"]["kv_cache_groups"]}
    assert kinds == {"full_attention", "sliding_window", "chunked_local", "mamba"}
