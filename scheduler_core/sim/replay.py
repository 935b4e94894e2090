"""Replay a recorded vLLM trace through the `vllm-v1` policy and log it in vLLM's own format.

The trace and log formats are those of the recordings of vLLM's real scheduler (see
`tests/fixtures/vllm_oracle/README.md`): steps are numbered, arrivals are given by step, and the
fake model samples one token for every request whose context is fully computed. Equal logs mean
the simulation made vLLM's decisions, step for step.
"""

from __future__ import annotations

import gzip
import json
import math
from array import array
from collections.abc import Iterator
from pathlib import Path

from ..engine.config import EngineConfig, VllmCompat
from ..engine.decision_trace import DecisionTrace
from ..engine.engine_loop import BatchQueueLoop
from ..engine.policies.vllm_v1 import VllmV1Scheduler
from ..engine.request import Request
from ..engine.scheduler import SchedulerOutput, UpdateResult
from ..engine.spec_decode import SpeculativeConfig
from ..errors import ConfigError
from ..files import MAX_TRACE_BYTES, parse_json, read_text
from ..workload.workload import RequestSpec, Workload
from .simulation import SimulationStalled

TRACE_CONFIG_KEYS = {
    "block_size",
    "num_gpu_blocks",
    "max_num_seqs",
    "max_num_batched_tokens",
    "max_model_len",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "long_prefill_token_threshold",
    # A hybrid model's KV cache groups, e.g. [{"kind": "full_attention"}, {"kind": "sliding_window", "window": 64}].
    "kv_cache_groups",
}


def load_trace(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(str(path), "no such trace file")
    return parse_json(read_text(path, MAX_TRACE_BYTES), str(path))


def engine_config_from_trace(trace: dict, vllm_version: str = "0.33.0", compat: VllmCompat | None = None) -> EngineConfig:
    config = trace.get("config")
    if not isinstance(config, dict):
        raise ConfigError("config", "the trace needs a 'config' object")
    unknown = set(config) - TRACE_CONFIG_KEYS - {"policy"}
    if unknown:
        raise ConfigError(f"config.{sorted(unknown)[0]}", "unknown setting in trace config")
    return EngineConfig(
        **{key: config[key] for key in TRACE_CONFIG_KEYS if key in config},
        scheduling_order=config.get("policy", "fcfs"),
        compat=compat or VllmCompat.for_version(vllm_version),
    )


def requests_from_trace(trace: dict) -> list[tuple[int, dict]]:
    """(arrival_step, request fields) in trace order, validated with the offending entry named."""
    entries = trace.get("requests")
    if not isinstance(entries, list):
        raise ConfigError("requests", "the trace needs a 'requests' list")
    out = []
    seen = set()
    for index, entry in enumerate(entries):
        where = f"requests[{index}]"
        for key in ("id", "arrival_step", "prompt_token_ids", "max_tokens"):
            if key not in entry:
                raise ConfigError(f"{where}.{key}", "missing")
        entry = normalised_entry(entry, where)
        if entry["id"] in seen:
            raise ConfigError(f"{where}.id", f"duplicate id {entry['id']!r}")
        seen.add(entry["id"])
        if not isinstance(entry["arrival_step"], int) or entry["arrival_step"] < 0:
            raise ConfigError(f"{where}.arrival_step", "must be a non-negative integer")
        if not isinstance(entry["max_tokens"], int) or entry["max_tokens"] <= 0:
            raise ConfigError(f"{where}.max_tokens", "must be a positive integer")
        tokens = entry["prompt_token_ids"]
        if not isinstance(tokens, list) or not tokens:
            raise ConfigError(f"{where}.prompt_token_ids", "must be a non-empty list of token ids")
        # (map and min/max run in C: a long trace holds millions of token ids.)
        if set(map(type, tokens)) != {int} or min(tokens) < 0 or max(tokens) >= 1 << 31:
            raise ConfigError(f"{where}.prompt_token_ids", "token ids are integers from 0 to 2^31 - 1")
        out.append((entry["arrival_step"], entry))
    return out


def normalised_entry(entry: dict, where: str) -> dict:
    """The entry as vLLM's API types it: request ids are strings, priorities are ints."""
    request_id, priority = entry["id"], entry.get("priority", 0)
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        raise ConfigError(f"{where}.id", f"must be a string or an integer, got {request_id!r}")
    if isinstance(priority, bool) or not isinstance(priority, (int, float)) or not math.isfinite(priority):
        raise ConfigError(f"{where}.priority", f"must be a number, got {priority!r}")
    return {**entry, "id": str(request_id), "priority": int(priority)}


def workload_from_trace(trace: dict) -> Workload:
    """The trace's requests as a step-indexed workload, so a Simulation (with its clock and
    metrics) makes exactly the decisions `replay` does."""
    requests = [
        RequestSpec(entry["id"], step, array("i", entry["prompt_token_ids"]), entry["max_tokens"], entry.get("priority", 0))
        for step, entry in requests_from_trace(trace)
    ]
    return Workload(requests, description=f"{len(requests)} requests of a recorded vLLM trace", arrivals_by_step=True)


def replay(
    trace: dict,
    vllm_version: str = "0.33.0",
    compat: VllmCompat | None = None,
    max_steps: int | None = None,
    async_scheduling: bool = False,
    speculative_config: SpeculativeConfig | None = None,
    decision_trace: DecisionTrace | None = None,
) -> Iterator[dict]:
    """Yield one log line (a dict in the oracle's field order) per step until every request finishes.

    With `async_scheduling`, a line is one pass of vLLM's engine loop with a batch queue: that
    pass's schedule() (if any) and the update of the oldest batch it completed (if any), plus
    `num_batches_in_flight` after the oldest of today's fields. Like vLLM's loop, at least one step
    runs, even with no requests. A replay that could never
    end stops with `SimulationStalled`: at once when a step changes nothing and nothing is left
    to arrive, otherwise after `max_steps` (default: `default_step_limit`). With a `decision_trace`,
    the reasons behind each yielded line (a whole pass, when async) are in its `last` (the line
    itself stays vLLM's).
    """
    config = engine_config_from_trace(trace, vllm_version, compat).replace(
        async_scheduling=async_scheduling, speculative_config=speculative_config
    )
    entries = requests_from_trace(trace)
    check_prompt_lengths(entries, config)
    if max_steps is None:
        max_steps = default_step_limit(entries)
    # By arrival step; the sort is stable, so requests of one step keep their trace order (the
    # order vLLM added them in), whatever order the trace lists the steps in.
    pending = sorted(entries, key=lambda item: item[0])
    scheduler = VllmV1Scheduler(config)
    scheduler.keep_token_times = False  # the log reports no latencies
    loop = BatchQueueLoop(scheduler) if config.async_scheduling else None
    why = scheduler.enable_decision_trace(decision_trace) if decision_trace is not None else None
    next_pending = 0
    arrival_index = 0
    step = 0
    while step == 0 or next_pending < len(pending) or scheduler.has_unfinished_requests():
        if step >= max_steps:
            raise SimulationStalled(f"replay stopped at the step limit ({max_steps}) with {unfinished(scheduler)} unfinished")
        arrivals = []
        while next_pending < len(pending) and pending[next_pending][0] <= step:
            entry = pending[next_pending][1]
            next_pending += 1
            scheduler.add_request(
                Request(
                    entry["id"],
                    entry["prompt_token_ids"],
                    entry["max_tokens"],
                    arrival_time=step + 1e-6 * arrival_index,
                    priority=entry["priority"],
                    arrival_index=arrival_index,
                )
            )
            arrivals.append(entry["id"])
            arrival_index += 1
        if why is not None:
            why.start_step(scheduler)
        if loop is None:
            output = scheduler.schedule(now=float(step))
            free_after_schedule = output.num_free_blocks_after_schedule
            result = scheduler.update_from_output(output, now=float(step))
            if why is not None:
                why.end_step(output.preempted_reqs, scheduler.kv_cache_manager.take_events())
            line = log_line(step, arrivals, output, result, free_after_schedule, scheduler)
            if speculative_config:
                # Added after today's fields: drafts verified this step, and how many were accepted.
                line["spec_tokens"] = dict(output.scheduled_spec_decode_tokens)
                line["accepted_tokens"] = result.num_accepted
            yield line
        else:
            engine_pass = loop.step(now=float(step))
            output = engine_pass.scheduled
            if why is not None:
                why.end_step(output.preempted_reqs if output else [], scheduler.kv_cache_manager.take_events())
            free_after_schedule = scheduler.kv_cache_manager.num_free_blocks if output is None \
                else output.num_free_blocks_after_schedule
            line = log_line(step, arrivals, output, engine_pass.update, free_after_schedule, scheduler)
            line["num_batches_in_flight"] = len(loop.in_flight)
            if speculative_config:
                # As in the synchronous log, for this pass's schedule() and the update it completed.
                line["spec_tokens"] = dict(output.scheduled_spec_decode_tokens) if output else {}
                line["accepted_tokens"] = engine_pass.update.num_accepted if engine_pass.update else {}
            yield line
        if next_pending == len(pending) and scheduler.has_unfinished_requests() and not (loop and loop.in_flight) \
                and not (output and (output.num_scheduled_tokens or output.preempted_reqs)):
            # Nothing ran, nothing changed, nobody is coming: every later step would be this one.
            raise SimulationStalled(
                f"replay can never finish: at step {step} nothing can be scheduled for {unfinished(scheduler)} "
                "and no request is left to arrive (a request larger than the KV pool, or a prompt "
                "that reaches max_model_len and must be chunked)"
            )
        step += 1


def log_line(step: int, arrivals: list[str], output: SchedulerOutput | None, result: UpdateResult | None,
             free_after_schedule: int, scheduler: VllmV1Scheduler) -> dict:
    """One line in the oracle's field order: the pass's schedule() (if any) and update (if any)."""
    output = output or SchedulerOutput()
    kv = scheduler.kv_cache_manager
    return {
        "step": step,
        "arrivals": arrivals,
        "scheduled": dict(output.num_scheduled_tokens),
        "total_tokens": output.total_num_scheduled_tokens,
        "new": output.scheduled_new_reqs,
        "resumed": output.scheduled_resumed_reqs,
        # The recordings list new admissions before resumptions here, whatever the scheduling order.
        "cached_tokens": {rid: output.num_cached_tokens[rid]
                          for rid in output.scheduled_new_reqs + output.scheduled_resumed_reqs},
        "preempted": output.preempted_reqs,
        "sampled": result.sampled if result else [],
        "finished": [request.request_id for request in result.finished] if result else [],
        "num_free_blocks_after_schedule": free_after_schedule,
        "num_free_blocks": kv.num_free_blocks,
        "kv_usage": round(kv.usage, 6),
        "num_running": len(scheduler.running),
        "num_waiting": len(scheduler.waiting),
    }


def check_prompt_lengths(entries: list[tuple[int, dict]], config: EngineConfig) -> None:
    """Refuse what vLLM's engine refuses before scheduling: a prompt longer than max_model_len,
    and (0.33) one exactly max_model_len long, which leaves no room for an output token."""
    limit = config.max_model_len - 1 if config.compat.prompt_leaves_room_for_output else config.max_model_len
    for index, (_, entry) in enumerate(entries):
        if len(entry["prompt_token_ids"]) > limit:
            raise ConfigError(
                f"requests[{index}].prompt_token_ids",
                f"{len(entry['prompt_token_ids'])} tokens; vLLM's engine accepts at most {limit} "
                f"with max_model_len={config.max_model_len}",
            )


def default_step_limit(entries: list[tuple[int, dict]]) -> int:
    """Generous: every recorded run ends within 1 step per token of prompt and output after the
    last arrival; preemption thrash recomputes, so allow several times that."""
    num_tokens = sum(len(entry["prompt_token_ids"]) + entry["max_tokens"] for _, entry in entries)
    last_arrival = max((step for step, _ in entries), default=0)
    return last_arrival + 4 * num_tokens + 1000


def unfinished(scheduler: VllmV1Scheduler) -> str:
    ids = [r.request_id for r in scheduler.running] + [r.request_id for r in scheduler.waiting]
    return f"{len(ids)} request(s) ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})"


# json.dumps(line, separators=(", ", ": ")), without building an encoder for every line.
LOG_LINE_ENCODER = json.JSONEncoder(separators=(", ", ": "))


def write_log(lines: Iterator[dict], path: str | Path) -> int:
    """Write JSON lines (gzip if the name ends in .gz); returns the number of steps."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    count = 0
    with opener(path, "wt") as f:
        for line in lines:
            f.write(LOG_LINE_ENCODER.encode(line) + "\n")
            count += 1
    return count
