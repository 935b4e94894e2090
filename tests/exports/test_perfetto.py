"""The Perfetto (Chrome JSON) trace, read back by a parser of the format: slices on one track never
overlap, every slice has a category, and a step's slice spans that step's own time (its batch's
time on the GPU under async scheduling, where the engine loop's pass returns before the batch ends)."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import pytest

from scheduler_core.exports.perfetto import export_perfetto
from scheduler_core.scenario.scenario import Scenario

SLICE_PHASES = {"X", "b", "e", "n", "B", "E", "i", "I"}


def scenario(async_scheduling: bool) -> Scenario:
    return Scenario.from_dict({
        "engine": {"async_scheduling": async_scheduling, "num_gpu_blocks": 400, "max_num_seqs": 16},
        "workload": {"num_requests": 40, "arrival": "poisson", "arrival_rate": 40.0, "prompt_len": 300,
                     "output_len": 30, "seed": 3},
    })


def trace_of(scenario: Scenario) -> list[dict]:
    out = io.StringIO()
    export_perfetto(scenario.build(keep_finished=True), out)
    return json.loads(out.getvalue())["traceEvents"]


def ns(microseconds: float) -> int:
    """A trace time back in whole nanoseconds; it must be one (three decimals of a microsecond)."""
    value = round(microseconds * 1000)
    assert abs(microseconds * 1000 - value) < 1e-3, microseconds
    return value


def complete_slices(events: list[dict]) -> dict[tuple, list[tuple[int, int, dict]]]:
    """Per track (pid, tid): the complete ('X') slices as (start ns, end ns, event), in time order."""
    tracks = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            start = ns(event["ts"])
            tracks[event["pid"], event["tid"]].append((start, start + ns(event["dur"]), event))
    return {track: sorted(slices, key=lambda s: s[0]) for track, slices in tracks.items()}


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_slices_on_one_track_never_overlap(async_scheduling):
    tracks = complete_slices(trace_of(scenario(async_scheduling)))

    assert tracks
    for slices in tracks.values():
        for (_, end, event), (start, _, later) in zip(slices, slices[1:]):
            assert end <= start, (event["name"], later["name"])


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_every_slice_and_counter_has_a_category(async_scheduling):
    events = [e for e in trace_of(scenario(async_scheduling)) if e["ph"] != "M"]

    assert {e["ph"] for e in events} >= {"X", "b", "e", "C"}
    assert [e for e in events if not e.get("cat")] == []
    assert {e["ph"] for e in events} <= SLICE_PHASES | {"C"}


def step_slices(events: list[dict]) -> dict[int, tuple[int, int]]:
    (slices,) = complete_slices(events).values()
    return {int(event["name"].removeprefix("step ")): (start, end) for start, end, event in slices}


def test_a_synchronous_step_slice_is_the_step():
    sim = scenario(False).build(keep_finished=True)
    records = list(sim.records())

    slices = step_slices(trace_of(scenario(False)))

    assert len(slices) == len(records)
    for record in records:
        assert slices[record.step] == (round(record.clock_s_before * 1e9), round(record.clock_s_after * 1e9))


def test_an_async_step_slice_is_its_batch_on_the_gpu_not_the_pass_before():
    """Under async scheduling each step's slice lasts its own batch's cost: the first step, a
    prompt alone, lasts its prefill (milliseconds), not the host's 12.8 us of scheduling."""
    sim = scenario(True).build(keep_finished=True)
    records = [r for r in sim.records() if r.scheduled]

    slices = step_slices(trace_of(scenario(True)))

    assert slices.keys() == {record.step for record in records}
    for record in records:
        start, end = slices[record.step]
        assert abs((end - start) - sum(record.cost_breakdown.values()) * 1e9) <= 1
        assert start >= round(record.clock_s_before * 1e9)
    first = records[0]
    assert first.num_prefill_tokens > 0 and slices[first.step][1] - slices[first.step][0] > 1e6
