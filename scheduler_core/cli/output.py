"""What every command of the command line shares: the progress bar and the one JSON writer."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from ..sim.simulation import Simulation


def run_with_progress(sim: Simulation, show: bool) -> float:
    """Run to the end; on a terminal, draw a progress bar of finished requests. Returns wall seconds."""
    start = last_draw = time.perf_counter()
    total = sim.num_requests
    for _ in sim.records():
        now = time.perf_counter()
        if show and now - last_draw > 0.25:
            last_draw = now
            done = sim.metrics.num_finished
            bar = "#" * int(30 * done / total)
            print(f"\r  [{bar:<30}] {done}/{total} requests, {sim.clock_s:.1f} s simulated", end="", file=sys.stderr)
    if show and time.perf_counter() - start > 0.25:
        print(file=sys.stderr)
    return time.perf_counter() - start


def write_json(path: str, payload: dict) -> None:
    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    Path(path).write_text(json.dumps(clean(payload), indent=2) + "\n")
