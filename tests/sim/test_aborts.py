"""Aborts in the simulation: a client that went away at a simulated time is aborted at the start
of the next step (sim/aborts.py), the record says so, and a served run's trace replays it."""

import dataclasses
import random

from scheduler_core.engine.kv_events import BlocksFreed
from scheduler_core.engine.request import RequestStatus
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.standin_tokenizer import StandInTokenizer
from scheduler_core.workload.workload import RequestSpec
from tests.sim.decisions import decisions
from tests.sim.test_live_source import scenario, served


def test_an_abort_is_applied_at_the_next_steps_start_and_recorded_there():
    sim, source = served(scenario())
    source.submit(0.0, list(range(100, 140)), 500)
    first = sim.step()
    sim.enable_kv_events()
    source.abort("req-00000", first.clock_s_after)  # when the next step starts: that step applies it
    num_blocks = len(sim.block_table("req-00000"))

    record = sim.step()

    assert record.aborted == ["req-00000"] and record.finished == [] and record.scheduled == []
    assert record.num_blocks_freed == num_blocks and record.num_running == 0
    assert [e.request_id for e in record.kv_events if isinstance(e, BlocksFreed)] == ["req-00000"]
    assert sim.request("req-00000").status == RequestStatus.FINISHED_ABORTED
    assert not sim.has_work()


def test_an_abort_after_a_steps_start_waits_for_the_next_step():
    sim, source = served(scenario())
    source.submit(0.0, list(range(100, 140)), 500)
    sim.step()
    source.abort("req-00000", sim.clock_s + 1e-9)

    assert sim.step().aborted == []
    assert sim.step().aborted == ["req-00000"]


def test_an_abort_of_a_request_that_finished_first_does_nothing():
    sim, source = served(scenario())
    source.submit(0.0, [1, 2, 3], 1)
    while sim.has_work():
        sim.step()
    source.abort("req-00000", sim.clock_s)
    assert not sim.has_work() and sim.request("req-00000").status == RequestStatus.FINISHED_LENGTH_CAPPED


def test_a_replayed_traces_abort_time_aborts_the_request():
    """A headless run of specs carrying `abort_time` aborts them as a served run does."""
    base = scenario()
    specs = [RequestSpec("req-00000", 0.0, range(100, 140), 500, abort_time=0.05)]
    sim = Simulation(base.engine, specs, base.cost_model())
    records = list(sim.records())
    (aborting,) = [r for r in records if r.aborted]
    assert aborting.aborted == ["req-00000"] and aborting.clock_s_before >= 0.05
    assert sim.request("req-00000").num_output_tokens < 500


def test_a_served_run_with_aborts_replays_headless_step_for_step(tmp_path):
    """Requests submitted and some aborted while the engine steps; the trace (with each abort's
    time) replayed as a scenario's trace makes the same decisions, aborts included."""
    base = scenario()
    sim, source = served(base)
    tokenizer, rng, records, arrival = StandInTokenizer(), random.Random(5), [], 0.0
    for index in range(30):
        arrival = arrival + rng.expovariate(40.0) if index else 0.0
        while sim.has_work() and sim.clock_s < arrival:
            records.append(sim.step())
        if index % 3 == 2:  # a client of an earlier request goes away now
            victim = f"req-{index - 2:05d}"
            if victim not in sim.finished_requests:
                source.abort(victim, arrival)
        text = " ".join(f"word{rng.randrange(500)}" for _ in range(rng.randrange(5, 300)))
        source.submit(arrival, tokenizer.encode(text), rng.randrange(50, 400))
    while sim.has_work():
        records.append(sim.step())
    path = tmp_path / "served.jsonl"
    path.write_text("\n".join(source.trace_lines()) + "\n")
    replay = dataclasses.replace(base, trace=str(path),
                                 workload=dataclasses.replace(base.workload, num_requests=len(source.requests)))

    replayed = list(replay.build().records())

    assert sum(len(r.aborted) for r in records) >= 3
    assert '"abort_time"' in path.read_text()
    assert [(decisions(r), r.aborted, r.num_blocks_freed) for r in replayed] == \
           [(decisions(r), r.aborted, r.num_blocks_freed) for r in records]


def test_the_decision_trace_names_an_aborted_requests_frees_as_aborted_not_finished():
    """The Why? tab reads the cause of each free: a client that went away is not a finish."""
    sim, source = served(scenario())
    sim.scheduler.enable_decision_trace()
    source.submit(0.0, list(range(100, 140)), 500)
    first = sim.step()
    source.abort("req-00000", first.clock_s_after)

    record = sim.step()

    assert [(free["request"], free["cause"]) for free in record.decisions["frees"]] == [("req-00000", "aborted")]
