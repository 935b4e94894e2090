"""Edges a differential fuzz of `replay` against vLLM's real schedulers found (issue 14), each
from its minimal case."""

import json

import pytest

from scheduler_core.cli.main import main
from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.scheduler import SchedulerError
from scheduler_core.errors import ConfigError
from scheduler_core.sim.replay import replay
from scheduler_core.sim.simulation import SimulationStalled

TIGHT_PRIORITY = {"block_size": 16, "num_gpu_blocks": 4, "max_num_seqs": 4, "max_num_batched_tokens": 64,
                  "max_model_len": 256, "enable_chunked_prefill": True, "enable_prefix_caching": False,
                  "policy": "priority"}


def request(rid, step, prompt_len, max_tokens, priority=0, first_token=0):
    return {"id": rid, "arrival_step": step, "prompt_token_ids": list(range(first_token, first_token + prompt_len)),
            "max_tokens": max_tokens, "priority": priority}


def victim_already_scheduled_trace():
    return {"config": TIGHT_PRIORITY,
            "requests": [request("v", 0, 8, 12, priority=1), request("c", 1, 16, 4, first_token=100),
                         request("d", 1, 8, 4, first_token=200)]}


def test_010_leaves_an_already_scheduled_priority_victim_scheduled_and_goes_on():
    """vLLM 0.10.1.1 keeps v's decode token scheduled after preempting it, skips d, passes its
    end-of-step check (2 scheduled <= 2 running), and later resumes v with a phantom computed token."""
    lines = list(replay(victim_already_scheduled_trace(), "0.10.1.1"))
    step2 = lines[2]
    assert step2["scheduled"] == {"v": 1, "c": 1}
    assert step2["preempted"] == ["v"]
    resumed = next(line for line in lines if line["resumed"] == ["v"])
    assert resumed["cached_tokens"] == {"v": 1}
    assert resumed["scheduled"]["v"] == 9  # not 10: the phantom token counts as computed
    assert lines[-1]["finished"] == ["v"]


def test_033_unschedules_the_same_victim():
    step2 = list(replay(victim_already_scheduled_trace(), "0.33.0"))[2]
    assert step2["preempted"] == ["v"]
    assert "v" not in step2["scheduled"]


def test_010_still_fails_where_its_end_of_step_assertion_would():
    """Running [w, v, c], all scheduled when c's decode needs a block: v is the victim, c takes its
    block, and 3 requests are scheduled for 2 running: vLLM 0.10.1.1's assertion fails there."""
    trace = {"config": TIGHT_PRIORITY,
             "requests": [request("w", 0, 8, 12), request("v", 0, 8, 12, priority=1, first_token=50),
                          request("c", 1, 16, 4, first_token=100)]}
    with pytest.raises(SchedulerError, match="end-of-step assertion"):
        list(replay(trace, "0.10.1.1"))


def test_0102_drops_the_victim_from_the_step_so_its_assertion_holds():
    """vLLM 0.10.2 removes the victim from the step's scheduled running requests (its tokens stay
    counted until 0.11.1 returns them), so the same case goes on. Not recorded: servescope's
    reading of 0.10.2's source, no trace of it."""
    trace = {"config": TIGHT_PRIORITY,
             "requests": [request("w", 0, 8, 12), request("v", 0, 8, 12, priority=1, first_token=50),
                          request("c", 1, 16, 4, first_token=100)]}
    assert list(replay(trace, "0.10.2"))[-1]["finished"]
    step2 = list(replay(victim_already_scheduled_trace(), "0.11.1"))[2]
    assert step2["preempted"] == ["v"] and "v" not in step2["scheduled"]


BASE = {"block_size": 16, "num_gpu_blocks": 64, "max_num_seqs": 4, "max_num_batched_tokens": 32,
        "max_model_len": 64, "enable_chunked_prefill": True, "enable_prefix_caching": False}


def test_033_refuses_a_prompt_of_max_model_len_as_its_engine_does():
    trace = {"config": BASE, "requests": [request("a", 0, 64, 4)]}
    with pytest.raises(ConfigError) as error:
        list(replay(trace, "0.33.0"))
    assert error.value.field == "requests[0].prompt_token_ids"


def test_010_accepts_it_and_the_replay_stops_where_it_stalls_one_token_short():
    trace = {"config": BASE, "requests": [request("a", 0, 64, 4)]}
    lines = []
    with pytest.raises(SimulationStalled, match="never finish"):
        for line in replay(trace, "0.10.1.1"):
            lines.append(line)
    assert sum(line["total_tokens"] for line in lines) == 63
    assert len(lines) == 3


def test_a_request_larger_than_the_pool_stops_the_replay_instead_of_running_for_ever():
    trace = {"config": {**BASE, "num_gpu_blocks": 3}, "requests": [request("a", 0, 60, 4)]}
    with pytest.raises(SimulationStalled, match="a"):
        list(replay(trace))


def test_a_replay_ends_at_its_step_limit():
    trace = {"config": BASE, "requests": [request("a", 0, 8, 40)]}
    with pytest.raises(SimulationStalled, match="step limit"):
        list(replay(trace, max_steps=10))


def test_the_cli_reports_a_never_ending_replay_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"config": {**BASE, "num_gpu_blocks": 3}, "requests": [request("a", 0, 60, 4)]}))
    assert main(["replay", str(path), "--out", str(tmp_path / "log.jsonl")]) == 2
    assert "never finish" in capsys.readouterr().err


def test_integer_ids_come_out_as_strings_as_in_vllm():
    trace = {"config": BASE, "requests": [request(7, 0, 8, 1)]}
    line = next(iter(replay(trace)))
    assert line["arrivals"] == ["7"] and line["scheduled"] == {"7": 8} and line["finished"] == ["7"]


def test_priorities_are_taken_as_ints():
    """vLLM's priority is an int: 0.5 and 0 tie, so arrival order decides."""
    config = {**BASE, "policy": "priority", "max_num_seqs": 1}
    trace = {"config": config, "requests": [request("first", 0, 8, 2, priority=0.5),
                                            request("second", 0, 8, 2, priority=0, first_token=50)]}
    assert next(iter(replay(trace)))["scheduled"] == {"first": 8}


def test_a_priority_that_is_not_a_number_names_its_field():
    trace = {"config": BASE, "requests": [request("a", 0, 8, 1, priority="high")]}
    with pytest.raises(ConfigError) as error:
        list(replay(trace))
    assert error.value.field == "requests[0].priority"


def test_an_empty_request_list_logs_one_empty_step():
    lines = list(replay({"config": BASE, "requests": []}))
    assert len(lines) == 1
    assert lines[0]["step"] == 0 and lines[0]["scheduled"] == {} and lines[0]["num_free_blocks"] == 63


def test_settings_vllm_accepts_are_accepted():
    """A long-prefill cap above max_model_len (it never binds) and a pool of only the null block."""
    EngineConfig(max_model_len=64, long_prefill_token_threshold=100, max_num_batched_tokens=256)
    lines = list(replay({"config": {**BASE, "num_gpu_blocks": 1, "long_prefill_token_threshold": 100}, "requests": []}))
    assert lines[0]["num_free_blocks"] == 0 and lines[0]["kv_usage"] == 0.0
