"""A live session's memory plateaus however long it plays: chart points are thinned, checkpoints
thinned, the event log and each request's timeline capped, and a step budget ends play; stepping
back stays exact."""

import asyncio
import tracemalloc

import pytest

from app import stepping as stepping_module
from app import wire
from app.history import MAX_TIMELINE_ENTRIES, ChartHistory
from app.live import LiveSession
from app.session import EVENT_HISTORY, Session
from app.settings import Settings
from scheduler_core.lessons.todays_engine import drafted as drafted_arm
from scheduler_core.scenario.scenario import Scenario

# Four clients, each sending long generations: many steps from few requests.
LONG = Scenario.from_dict({
    "engine": {"num_gpu_blocks": 1024, "max_num_seqs": 8, "max_num_batched_tokens": 512, "max_model_len": 16384},
    "workload": {"num_requests": 40, "concurrency": 4, "lengths": "fixed", "prompt_len": 64, "output_len": 12000},
})
SETTINGS = Settings(checkpoint_interval=16, max_checkpoints=8, max_chart_points=300)


def test_chart_history_keeps_evenly_spaced_points_and_the_latest():
    history = ChartHistory(max_points=10)
    for step in range(1000):
        history.append([step])
    points = [p[0] for p in history.points()]
    assert len(history.kept) <= 10
    assert points[0] == 0 and points[-1] == 999
    assert all(p % history.stride == 0 for p in points[:-1])


def test_chart_history_truncates_to_the_steps_before_a_step_back():
    history = ChartHistory(max_points=10)
    for step in range(100):
        history.append([step])
    history.truncate(37, [36])
    assert [p[0] for p in history.points()] == [s for s in range(37) if s % history.stride == 0] + [36]


def test_retained_structures_stay_bounded_over_many_steps():
    session = Session("s", LONG, SETTINGS)
    session.advance(2000)
    assert len(session.history.kept) <= SETTINGS.max_chart_points
    assert len(session.checkpoints) <= SETTINGS.max_checkpoints
    assert len(session.events) <= EVENT_HISTORY
    assert max(len(t) for t in session.timelines.values()) <= MAX_TIMELINE_ENTRIES


# Many short requests, four at a time: a steady state in which the structures fill up.
STEADY = Scenario.from_dict({
    "engine": {"num_gpu_blocks": 256, "max_num_seqs": 8, "max_num_batched_tokens": 512},
    "workload": {"num_requests": 2000, "concurrency": 4, "lengths": "fixed", "prompt_len": 64, "output_len": 200},
})


@pytest.mark.slow
def test_memory_per_step_plateaus():
    """Before: a chart point per step kept for good, about 490 bytes a step here. What still grows
    (about 290) is what the workload and the event log's cap bound: each finished request, kept
    for the inspector with its 8-byte token times, and the log filling up to EVENT_HISTORY."""
    session = Session("s", STEADY, SETTINGS)
    play(session, 1000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        play(session, 3000)
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert growth / 3000 < 350


def play(session: Session, num_steps: int) -> None:
    """Steps as a playing session takes them: a few at a time, each batch published as a delta."""
    for _ in range(num_steps // 10):
        session.delta_frame(session.advance(10)[0])
        session.take_events()


def test_step_back_after_thinning_is_exact():
    session = Session("s", LONG, SETTINGS)
    session.advance(1500)
    session.seek(333)
    fresh = Session("f", LONG, SETTINGS)
    fresh.advance(333)
    assert session.sim.metrics.report(0.0) == fresh.sim.metrics.report(0.0)
    assert session.sim.queue_ids() == fresh.sim.queue_ids()
    for rid in fresh.sim.scheduler.requests:
        assert session.sim.block_table(rid) == fresh.sim.block_table(rid)
        assert session.request_detail(rid) == fresh.request_detail(rid)


def state_of(session: Session) -> dict:
    """Everything a viewer sees of the session (a snapshot, minus its id and sequence number) and
    what the inspector does."""
    frame = wire.decode(session.snapshot_frame())
    del frame["seq"], frame["session"]
    details = {rid: session.request_detail(rid, with_history=True) for rid in session.sim.scheduler.requests}
    return {"frame": frame, "details": details, "events": list(session.events), "timelines": session.timelines}


async def seek_counting_turns(live: LiveSession, step: int) -> int:
    """Seek as a presenter's command does; how many turns the event loop got meanwhile."""
    seeking = asyncio.create_task(live.cmd_seek({"step": step}))
    turns = 0
    while not seeking.done():
        turns += 1
        await asyncio.sleep(0)
    await seeking
    return turns


def test_a_live_step_back_replays_in_slices_and_lands_on_the_exact_state(monkeypatch):
    """A step back late in a long session replays thousands of steps from its checkpoint: in slices
    that give the event loop its turns (other sessions' viewers, a DELETE), to the same state."""
    monkeypatch.setattr(stepping_module, "ADVANCE_SLICE_S", 0.0)  # one step per slice
    at_once, sliced = Session("a", LONG, SETTINGS), LiveSession(Session("b", LONG, SETTINGS), SETTINGS)
    at_once.advance(1500)
    sliced.session.advance(1500)
    checkpoint = max(c.step_index for c in at_once.checkpoints if c.step_index <= 1000)
    assert 1000 - checkpoint > 100  # a replay of many steps
    at_once.seek(1000)
    turns = asyncio.run(seek_counting_turns(sliced, 1000))
    assert turns >= 1000 - checkpoint
    assert sliced.session.step == 1000
    assert state_of(sliced.session) == state_of(at_once)


def test_a_session_stops_at_its_step_budget():
    session = Session("s", LONG, Settings(max_steps_per_session=50))
    session.advance(80)
    assert session.step == 50
    assert session.done and not session.sim.done
    session.seek(10)
    assert session.step == 10


def test_stepping_back_into_a_run_of_drafted_decodes_restores_its_timeline_exactly():
    """With speculative decoding a decode step schedules one token plus its drafts: a run cut short
    by a step back keeps the tokens its remaining steps scheduled, as if play had stopped there."""
    drafted = Scenario.from_dict({**drafted_arm("eagle3"), "name": "drafted"})
    stepped_back, fresh = Session("b", drafted, SETTINGS), Session("f", drafted, SETTINGS)
    stepped_back.advance(140)
    stepped_back.seek(107)  # not a checkpoint step: the replay stops inside decode runs
    fresh.advance(107)
    cut_runs = [run for runs in fresh.timelines.values() for run in runs
                if run["kind"] == "decode" and run["to_step"] == 106 and run["tokens"] > run["to_step"] - run["step"] + 1]
    assert cut_runs, "the scenario should have multi-token decode runs live at step 106"
    assert stepped_back.timelines == fresh.timelines
