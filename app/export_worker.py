"""Work for the server, done by a process of its own (`app.workers` starts it): `python -m
app.export_worker` reads one JSON line on stdin and writes the result to stdout:

- `{"kind": "steps" | "trace", "scenario": {...}, "steps": N}`: the run's first N steps as the
  step log (JSONL) or a Chrome trace;
- `{"kind": "fleet", "fleet": {...}}`: a fleet run to the end, its frames and metrics (JSON); with
  `"lesson": [NAME, ARM]`, that fleet lesson's arm with its story;
- `{"kind": "sweep", "sweep": {...}, "name": NAME}`: a sweep's rows in grid order (JSON);
- `{"kind": "why", "scenario": {...}, "step": N}` followed by a checkpoint (`app.why`): step N
  replayed from it with the decision trace on, as the "why" answer (JSON).

Each is seconds of CPU: in its own process it never holds the server's event loop or its GIL
(viewers of every session keep their frame rate), it streams through a pipe instead of being
built in the server's memory, and the server can kill it the moment its budget is spent or
nobody waits for it any more.
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import sys

from scheduler_core.cluster.scenario import ClusterScenario
from scheduler_core.exports.perfetto import writer_for
from scheduler_core.lessons.fleet import FLEET_LESSONS_BY_NAME
from scheduler_core.lessons.fleet_timeline import fleet_timeline
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sweep import Sweep, run_serial

from .frames import finite, record_view
from .why_replay import replay_reasons


def write_export(kind: str, scenario: Scenario, num_steps: int, out) -> None:
    sim = scenario.build(keep_finished=kind == "trace")
    writer = writer_for(sim, out) if kind == "trace" else None
    for _ in range(num_steps):
        if sim.done:
            break
        record = sim.step()
        if writer is None:
            out.write(json.dumps(record_view(record), separators=(",", ":")) + "\n")
            continue
        writer.step(record)
        for rid in record.finished:
            writer.request(sim.finished_requests[rid])
    if writer is not None:
        writer.close()


def write_fleet(data: dict, out, lesson: list[str] | None = None) -> None:
    fleet = ClusterScenario.from_dict(data, data.get("name", "fleet"))
    timeline = FLEET_LESSONS_BY_NAME[lesson[0]].timeline(lesson[1]) if lesson else fleet_timeline(fleet.build())
    json.dump(finite({"name": fleet.name, "scenario": fleet.to_dict(), "num_gpus": fleet.num_gpus, **timeline}), out)


def write_sweep(data: dict, name: str, out) -> None:
    sweep = Sweep.from_dict(data, name=name)
    rows = sorted(run_serial(sweep.points(), sweep.name), key=lambda row: row["point"])
    json.dump(finite({"keys": sweep.keys, "rows": rows}), out)


def main() -> int:
    # The live server's viewers come first when the cores are busy.
    os.nice(10)
    job = json.loads(sys.stdin.buffer.readline())
    # The server stops reading at its budget; this ends the work even if nobody is left to say so.
    signal.alarm(max(1, math.ceil(job["timeout_s"])))
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=False)
    try:
        if job["kind"] == "fleet":
            write_fleet(job["fleet"], out, job.get("lesson"))
        elif job["kind"] == "sweep":
            write_sweep(job["sweep"], job["name"], out)
        elif job["kind"] == "why":
            out.write(replay_reasons(Scenario.from_dict(job["scenario"]), int(job["step"]), sys.stdin.buffer.read()))
        else:
            write_export(job["kind"], Scenario.from_dict(job["scenario"]), int(job["steps"]), out)
        out.flush()
    except BrokenPipeError:  # the download was abandoned
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
