"""An export, written by a process of its own: `python -m app.export_worker` reads one JSON line
`{"kind": "steps" | "trace", "scenario": {...}, "steps": N}` on stdin and writes the run's first
N steps to stdout as the step log (JSONL) or a Chrome trace.

Replaying a long run is seconds of CPU: in its own process it never holds the server's event loop
or its GIL (viewers of every session keep their frame rate), it streams through a pipe instead of
being built in memory, and the server can kill it the moment its budget is spent or its
download is abandoned.
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import sys

from scheduler_core.perfetto import PerfettoWriter
from scheduler_core.scenario import Scenario

from .frames import record_view


def write_export(kind: str, scenario: Scenario, num_steps: int, out) -> None:
    sim = scenario.build(keep_finished=kind == "trace")
    writer = PerfettoWriter(out) if kind == "trace" else None
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


def main() -> int:
    # The live server's viewers come first when the cores are busy.
    os.nice(10)
    job = json.loads(sys.stdin.readline())
    # The server stops reading at its budget; this ends the work even if nobody is left to say so.
    signal.alarm(max(1, math.ceil(job["timeout_s"])))
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=False)
    try:
        write_export(job["kind"], Scenario.from_dict(job["scenario"]), int(job["steps"]), out)
        out.flush()
    except BrokenPipeError:  # the download was abandoned
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
