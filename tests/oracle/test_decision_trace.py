"""The decision trace tells the truth: replaying every recording of vLLM's scheduler with the trace
on, each reason agrees with what the step did, and the log stays vLLM's, byte for byte."""

import gzip
import json
from pathlib import Path

import pytest

from scheduler_core.engine import decision_trace as why
from scheduler_core.engine.decision_trace import DecisionTrace
from scheduler_core.engine.spec_decode import SpeculativeConfig
from scheduler_core.sim.replay import engine_config_from_trace, load_trace, replay
from tests.paths import FIXTURES, REPO

MANIFEST = REPO / "tools" / "vllm_recorder" / "fixtures.json"


def trace_path(scenario: str) -> Path:
    return next(path for folder in ("vllm_oracle", "vllm_oracle_more")
                if (path := FIXTURES / folder / f"trace_{scenario}.json.gz").exists())


def recordings():
    """(log, trace, version, replay options) for every recording: the synchronous Scheduler's,
    the AsyncScheduler's (a line is one pass of the engine loop) and those with n-gram drafts."""
    for folder in ("vllm_oracle", "vllm_oracle_more"):
        for log in sorted((FIXTURES / folder).glob("out_*.jsonl.gz")):
            version, scenario = log.name[len("out_"):-len(".jsonl.gz")].split("_", 1)
            yield pytest.param(log, FIXTURES / folder / f"trace_{scenario}.json.gz", version, {},
                               id=f"{version}-{scenario}")
    for log in sorted((FIXTURES / "vllm_oracle_async").glob("out_0.33.0_async_*.jsonl.gz")):
        scenario = log.name[len("out_0.33.0_async_"):-len(".jsonl.gz")]
        yield pytest.param(log, trace_path(scenario), "0.33.0", {"async_scheduling": True}, id=f"0.33.0-async_{scenario}")
    root = MANIFEST.parents[2]
    for run in json.loads(MANIFEST.read_text())["runs"]:
        if "speculative_config" in run:
            spec = SpeculativeConfig.from_json({**run["speculative_config"], "acceptance_rate": run["acceptance_rate"],
                                                "acceptance_seed": run["acceptance_seed"]})
            log = root / run["out"]
            options = {"speculative_config": spec, **({"async_scheduling": True} if run.get("async_scheduling") else {})}
            yield pytest.param(log, root / run["trace"], "0.33.0", options, id=log.name[len("out_"):-len(".jsonl.gz")])


def replay_with_trace(trace_path: Path, version: str, options: dict):
    """(the log text, [(line, decisions)]) of a recording replayed with the trace on."""
    trace_file = load_trace(trace_path)
    decisions = DecisionTrace()
    steps, text = [], []
    for line in replay(trace_file, version, decision_trace=decisions, **options):
        text.append(json.dumps(line, separators=(", ", ": ")) + "\n")
        steps.append((line, decisions.last))
    return "".join(text), steps, engine_config_from_trace(trace_file, version)


@pytest.mark.parametrize("log, trace_path, version, options", list(recordings()))
def test_every_reason_agrees_with_the_recorded_step(log, trace_path, version, options):
    text, steps, config = replay_with_trace(trace_path, version, options)
    with gzip.open(log, "rt") as f:
        assert text == f.read(), "the log changed with the decision trace on"
    seen = set()
    for line, d in steps:
        where = f"step {line['step']}"
        check_preemptions(line, d, config, where)
        check_tokens(line, d, where)
        check_waiting(line, d, config, where)
        check_blocks(line, d, where)
        seen.update(e["reason"] for e in d["waiting"])
        seen.update(e["bound"] for e in d["running"] + d["waiting"] if "bound" in e)
        if d["waiting_stop"]:
            seen.add(d["waiting_stop"]["reason"])
    assert seen, "the trace recorded nothing"


def test_the_async_and_speculative_recordings_are_covered():
    ids = [param.id for param in recordings()]
    assert sum("async_" in i for i in ids) == 9 + 8 and sum("ngram" in i for i in ids) == 6 + 3
    assert sum("eagle" in i for i in ids) == 18


def check_preemptions(line, d, config, where):
    # Every preempted request has its victim entry, in the order they were preempted.
    assert [p["victim"] for p in d["preemptions"]] == line["preempted"], where
    order_rule = why.RULE_PRIORITY if config.scheduling_order == "priority" else why.RULE_FCFS
    for p in d["preemptions"]:
        assert p["blocks_needed"] > p["blocks_free"], f"{where}: a preemption with enough free blocks"
        assert p["rule_order"] == order_rule, where
        assert (p["rule"] == why.RULE_SELF) == (p["victim"] == p["request"]), where
    freed = {f["request"]: f for f in d["frees"]}
    for rid in line["preempted"]:
        assert freed[rid]["cause"] == "preempted", where
    for rid in line["finished"]:
        # Async scheduling: a request preempted in this pass can finish in its update, its blocks
        # already freed by the preemption (async_n_preempted_in_flight, step 4).
        assert freed[rid]["cause"] == ("preempted" if rid in line["preempted"] else "finished"), where


def check_tokens(line, d, where):
    scheduled = line["scheduled"]
    given = {e["request"]: e["given"] for e in d["running"] if e["scheduled"]}
    admitted = [e for e in d["waiting"] if e["admitted"]]
    given.update((e["request"], e["given"]) for e in admitted)
    assert given == scheduled, f"{where}: tokens given differ from tokens scheduled"
    assert sorted(e["request"] for e in admitted) == sorted(line["new"] + line["resumed"]), where
    for e in admitted:
        assert e["resumed"] == (e["request"] in line["resumed"]), where
        assert e["cached_tokens"] == line["cached_tokens"][e["request"]], where
    for e in d["running"] + admitted:
        bound = e["bound"]
        assert e["given"] <= e["asked"], f"{where}: given more than it asked for: {e}"
        assert (bound == why.BOUND_NONE) == (e["given"] == e["asked"]), f"{where}: {e}"
        if bound == why.BOUND_BUDGET:
            assert e["given"] == e["budget_before"], f"{where}: {e}"
        if bound == why.BOUND_LONG_PREFILL:
            assert e["given"] == d["limits"]["long_prefill_token_threshold_in_force"], f"{where}: {e}"
    for e in d["running"]:
        if not e["scheduled"]:
            assert e["request"] in line["preempted"] or e["given"] == 0 or "unscheduled_tokens" in e, f"{where}: {e}"
    stop = d["running_stop"]
    if stop and stop["reason"] == why.WAIT_BUDGET:
        assert line["total_tokens"] == d["limits"]["max_num_batched_tokens"], where


def check_waiting(line, d, config, where):
    limits = d["limits"]
    for e in d["waiting"]:
        reason = e["reason"]
        if reason == why.WAIT_BLOCKS:
            assert e["blocks_needed_chunk"] > e["blocks_free"], f"{where}: {e}"
        elif reason == why.WAIT_BLOCKS_FULL_CONTEXT:
            assert limits["full_prompt_admission"], where
            assert e["blocks_needed_chunk"] <= e["blocks_free"] < e["blocks_needed_full"], f"{where}: {e}"
        elif reason == why.WAIT_UNCHUNKED_TOO_BIG:
            assert not limits["enable_chunked_prefill"] and e["asked"] > e["budget_before"], f"{where}: {e}"
        else:
            assert reason == why.WAIT_ADMITTED, f"{where}: {e}"
    stop = d["waiting_stop"]
    # Without chunking, 0.10 skips a too-big prompt and looks further; 0.33 stops at it.
    skipped = sum(1 for e in d["waiting"] if e["reason"] == why.WAIT_UNCHUNKED_TOO_BIG)
    skipped -= bool(stop and stop["reason"] == why.WAIT_UNCHUNKED_TOO_BIG)
    if stop is None:
        # The scan emptied the queue: only requests it skipped (0.10, no chunking) are left.
        assert line["num_waiting"] == skipped, where
        return
    # Async scheduling: a request preempted by this schedule that finishes in the pass's update
    # leaves the waiting queue it was just put in.
    stopped_while_preempted = len(set(line["finished"]) & set(line["preempted"]))
    assert stop["num_waiting_left"] + skipped - stopped_while_preempted == line["num_waiting"], where
    reason = stop["reason"]
    if reason == why.WAIT_BUDGET:
        assert line["total_tokens"] == limits["max_num_batched_tokens"], where
    elif reason == why.WAIT_MAX_NUM_SEQS:
        assert stop["num_running"] == config.max_num_seqs, where
    elif reason == why.WAIT_PREEMPTED_THIS_STEP:
        assert line["preempted"] and not line["new"] and not line["resumed"], where
    else:
        # Head-of-line: the scan stopped at a request it examined and could not admit.
        last = d["waiting"][-1]
        assert last["request"] == stop["request"] and last["reason"] == reason, where


def check_blocks(line, d, where):
    def returned(frees):
        return sum(len(f["to_head"]) + len(f["to_tail_cached"]) + len(f["to_tail"]) for f in frees)

    allocated = sum(len(ids) for ids in d["allocated"].values())
    revived = sum(len(ids) for ids in d["revived"].values())
    preempted_frees = [f for f in d["frees"] if f["cause"] == "preempted"]
    start = d["blocks_free_at_start"]
    assert line["num_free_blocks_after_schedule"] == start - allocated - revived + returned(preempted_frees), where
    assert line["num_free_blocks"] == start - allocated - revived + returned(d["frees"]), where
    all_allocated = {b for ids in d["allocated"].values() for b in ids}
    assert set(d["evicted"]) <= all_allocated, f"{where}: an evicted block that was not reallocated"
    for f in d["frees"]:
        assert f["blocks"] == len(f["to_head"]) + len(f["to_tail_cached"]) + len(f["to_tail"]) + len(f["still_shared"]), where


def test_the_trace_is_off_unless_asked():
    trace_file = load_trace(FIXTURES / "vllm_oracle" / "trace_b_tight_preempt.json.gz")
    from scheduler_core.engine.policies.vllm_v1 import VllmV1Scheduler

    scheduler = VllmV1Scheduler(engine_config_from_trace(trace_file))
    assert scheduler.decision_trace is None and scheduler.kv_cache_manager.kv_events is None


@pytest.mark.parametrize("policy", ["vllm-v0", "static", "vllm-v1"])
@pytest.mark.parametrize("preemption_mode", ["recompute", "swap"])
def test_every_policy_names_the_victim_of_each_preemption(policy, preemption_mode):
    """Under memory pressure, every preempted request of every policy has its victim entry and its
    freed blocks, and the free-block count follows from the step's block diff."""
    from scheduler_core.engine.config import EngineConfig
    from scheduler_core.sim.simulation import Simulation
    from scheduler_core.workload.workload import synthetic_workload

    config = EngineConfig(num_gpu_blocks=160, max_num_seqs=16, max_num_batched_tokens=1024, max_model_len=1024,
                          policy=policy, preemption_mode=preemption_mode, num_cpu_blocks=64)
    sim = Simulation(config, synthetic_workload(40, arrival_rate=float("inf"), prompt_mean=200, output_mean=200, seed=3,
                                                      max_prompt_len=400, max_output_len=400))
    sim.scheduler.enable_decision_trace()
    num_preempted = 0
    free = sim.scheduler.kv_cache_manager.num_free_blocks
    for record in sim.records():
        d = record.decisions
        assert [p["victim"] for p in d["preemptions"]] == record.preempted
        assert {f["request"] for f in d["frees"]} >= set(record.preempted) | set(record.finished)
        assert d["blocks_free_at_start"] == free
        returned = sum(len(f["to_head"]) + len(f["to_tail_cached"]) + len(f["to_tail"]) for f in d["frees"])
        taken = sum(len(ids) for ids in d["allocated"].values()) + sum(len(ids) for ids in d["revived"].values())
        free = record.num_free_blocks
        assert free == d["blocks_free_at_start"] - taken + returned
        num_preempted += len(record.preempted)
    assert num_preempted > 0
