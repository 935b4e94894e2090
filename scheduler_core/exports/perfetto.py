"""A run as a Chrome trace (JSON), which ui.perfetto.dev and chrome://tracing open.

Engine iterations are slices on one track, each request an async span (queued -> prefill ->
decode) with its preemptions as instant events, and KV usage and queue lengths as counters.
Events are written as the simulation runs, so a long run never holds its trace in memory.

Times are whole nanoseconds, each instant rounded once and every duration the difference of two
rounded instants: rounding `ts` and `dur` apart made a slice end a nanosecond after the next began.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..engine.request import Request
from ..engine.step_record import StepRecord
from ..sim.simulation import Simulation
from ..timing.host_time import NO_HOST_TIME, HostTime

ENGINE_PID, REQUESTS_PID = 1, 2


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _us(ns: int) -> float:
    """The trace format's unit is the microsecond; a nanosecond is its third decimal."""
    return ns / 1000


class PerfettoWriter:
    """Writes one run's trace; `host_time` (the simulation's) places a batch on the GPU under async
    scheduling, where a step's pass of the engine loop is not the time its batch runs."""

    def __init__(self, out: TextIO, host_time: HostTime | None = None, async_scheduling: bool = False):
        self.out = out
        self._first = True
        self._host_time = host_time or NO_HOST_TIME
        self._async_scheduling = async_scheduling
        self._gpu_free_ns = 0
        out.write('{"displayTimeUnit": "ms", "traceEvents": [\n')
        for pid, name in ((ENGINE_PID, "engine"), (REQUESTS_PID, "requests")):
            self._event({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self._event({"name": "thread_name", "ph": "M", "pid": ENGINE_PID, "tid": 1, "args": {"name": "iterations"}})

    def _event(self, event: dict) -> None:
        if not self._first:
            self.out.write(",\n")
        self._first = False
        self.out.write(json.dumps(event, separators=(",", ":")))

    def _batch_span_ns(self, record: StepRecord) -> tuple[int, int] | None:
        """When the step's batch ran, in ns: the step itself, or under async scheduling its time on
        the GPU, which begins once the host has prepared it and the batch before has left the GPU,
        and lasts its cost (the engine loop's pass that scheduled it returned at once; the pass
        that waited for it is a later step). None for a pass that scheduled nothing."""
        if not self._async_scheduling:
            return _ns(record.clock_s_before), _ns(record.clock_s_after)
        if not record.scheduled:
            return None
        prepared = record.clock_s_before + self._host_time.seconds(len(record.scheduled))
        start_ns = max(self._gpu_free_ns, _ns(prepared))
        self._gpu_free_ns = start_ns + _ns(sum(record.cost_breakdown.values()))
        return start_ns, self._gpu_free_ns

    def step(self, record: StepRecord) -> None:
        ts = _us(_ns(record.clock_s_before))
        span = self._batch_span_ns(record)
        if span is not None:
            self._slice(record, *span)
        self._event({"name": "kv_usage", "cat": "engine", "ph": "C", "pid": ENGINE_PID, "ts": ts,
                     "args": {"kv_usage": round(record.kv_usage, 6)}})
        self._event({"name": "queues", "cat": "engine", "ph": "C", "pid": ENGINE_PID, "ts": ts,
                     "args": {"running": record.num_running, "waiting": record.num_waiting, "swapped": record.num_swapped}})
        for rid in record.preempted:
            self._event({"name": "preempted", "cat": "request", "ph": "n", "id": rid, "pid": REQUESTS_PID, "ts": ts})

    def _slice(self, record: StepRecord, start_ns: int, end_ns: int) -> None:
        self._event({
            "name": f"step {record.step}", "cat": "engine", "ph": "X", "pid": ENGINE_PID, "tid": 1,
            "ts": _us(start_ns), "dur": _us(end_ns - start_ns),
            "args": {
                "prefill_tokens": record.num_prefill_tokens, "decode_tokens": record.num_decode_tokens,
                "requests": len(record.scheduled), "admitted": record.admitted, "preempted": record.preempted,
                "finished": record.finished, **{f"{k}_ms": round(v * 1e3, 4) for k, v in record.cost_breakdown.items()},
            },
        })

    def request(self, request: Request) -> None:
        """The finished request's life as nested async spans."""
        rid = request.request_id
        first_token = request.token_times[0]
        phases = (
            (request.arrival_time, request.finish_time, rid),
            (request.arrival_time, request.first_scheduled_time, "queued"),
            (request.first_scheduled_time, first_token, "prefill"),
            (first_token, request.finish_time, "decode"),
        )
        for start, end, name in phases:
            base = {"name": name, "cat": "request", "id": rid, "pid": REQUESTS_PID}
            self._event({**base, "ph": "b", "ts": _us(_ns(start)),
                         "args": {"prompt_tokens": request.num_prompt_tokens, "output_tokens": request.num_output_tokens,
                                  "preemptions": request.num_preemptions} if name == rid else {}})
            self._event({**base, "ph": "e", "ts": _us(_ns(end))})

    def close(self) -> None:
        self.out.write("\n]}\n")


def writer_for(sim: Simulation, out: TextIO) -> PerfettoWriter:
    """A writer for `sim`'s trace (its host time and whether its engine loop runs async)."""
    return PerfettoWriter(out, sim.host_time, sim.engine_loop is not None)


def export_perfetto(sim: Simulation, out: TextIO) -> int:
    """Run `sim` (built with keep_finished=True) to the end, writing its trace; returns the number of steps."""
    writer = writer_for(sim, out)
    num_steps = 0
    for record in sim.records():
        writer.step(record)
        for rid in record.finished:
            # Written once finished, then dropped, so memory stays bounded on long runs.
            writer.request(sim.finished_requests.pop(rid))
        num_steps += 1
    writer.close()
    return num_steps
