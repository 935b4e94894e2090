"""A run as a Chrome trace (JSON), which ui.perfetto.dev and chrome://tracing open.

Engine iterations are slices on one track, each request an async span (queued -> prefill ->
decode) with its preemptions as instant events, and KV usage and queue lengths as counters.
Events are written as the simulation runs, so a long run never holds its trace in memory.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..engine.request import Request
from ..engine.step_record import StepRecord
from ..sim.simulation import Simulation

ENGINE_PID, REQUESTS_PID = 1, 2


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


class PerfettoWriter:
    def __init__(self, out: TextIO):
        self.out = out
        self._first = True
        out.write('{"displayTimeUnit": "ms", "traceEvents": [\n')
        for pid, name in ((ENGINE_PID, "engine"), (REQUESTS_PID, "requests")):
            self._event({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        self._event({"name": "thread_name", "ph": "M", "pid": ENGINE_PID, "tid": 1, "args": {"name": "iterations"}})

    def _event(self, event: dict) -> None:
        if not self._first:
            self.out.write(",\n")
        self._first = False
        self.out.write(json.dumps(event, separators=(",", ":")))

    def step(self, record: StepRecord) -> None:
        ts = _us(record.clock_s_before)
        self._event({
            "name": f"step {record.step}", "ph": "X", "pid": ENGINE_PID, "tid": 1, "ts": ts, "dur": _us(record.step_s),
            "args": {
                "prefill_tokens": record.num_prefill_tokens, "decode_tokens": record.num_decode_tokens,
                "requests": len(record.scheduled), "admitted": record.admitted, "preempted": record.preempted,
                "finished": record.finished, **{f"{k}_ms": round(v * 1e3, 4) for k, v in record.cost_breakdown.items()},
            },
        })
        self._event({"name": "kv_usage", "ph": "C", "pid": ENGINE_PID, "ts": ts, "args": {"kv_usage": round(record.kv_usage, 6)}})
        self._event({"name": "queues", "ph": "C", "pid": ENGINE_PID, "ts": ts,
                     "args": {"running": record.num_running, "waiting": record.num_waiting, "swapped": record.num_swapped}})
        for rid in record.preempted:
            self._event({"name": "preempted", "cat": "request", "ph": "n", "id": rid, "pid": REQUESTS_PID, "ts": ts})

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
            self._event({**base, "ph": "b", "ts": _us(start),
                         "args": {"prompt_tokens": request.num_prompt_tokens, "output_tokens": request.num_output_tokens,
                                  "preemptions": request.num_preemptions} if name == rid else {}})
            self._event({**base, "ph": "e", "ts": _us(end)})

    def close(self) -> None:
        self.out.write("\n]}\n")


def export_perfetto(sim: Simulation, out: TextIO) -> int:
    """Run `sim` (built with keep_finished=True) to the end, writing its trace; returns the number of steps."""
    writer = PerfettoWriter(out)
    num_steps = 0
    for record in sim.records():
        writer.step(record)
        for rid in record.finished:
            # Written once finished, then dropped, so memory stays bounded on long runs.
            writer.request(sim.finished_requests.pop(rid))
        num_steps += 1
    writer.close()
    return num_steps
