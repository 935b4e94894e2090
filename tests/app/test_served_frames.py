"""A served session's frames describe the step they release: its step number, clock, record and
requests together, however many steps the engine has taken past it."""

import asyncio
import threading
import time

import openai
import pytest

from app.frames import Delta
from app.openai.served_frames import ServedLiveSession
from app.session import Session
from app.settings import Settings
from scheduler_core.sim.live_source import LiveRequestSource, ServedSimulation
from scheduler_core.sim.metrics import SLO
from tests.app.openai_server import MODEL, OpenAIServer, default_scenario


class FakeViewer:
    """What the live session offers a viewer, kept."""

    def __init__(self, snapshot_seq: int = -1):
        self.snapshot_seq = snapshot_seq
        self.deltas: list[Delta] = []
        self.events: list[dict] = []
        self.wakeup = asyncio.Event()

    def offer_delta(self, delta: Delta) -> None:
        self.deltas.append(delta)

    def offer_events(self, events: list[dict]) -> None:
        self.events += events


def served_live() -> ServedLiveSession:
    scenario = default_scenario()
    sim = ServedSimulation(scenario.engine, scenario.cost_model(), SLO(scenario.slo_ttft_s, scenario.slo_tpot_s),
                           scenario.api_server())
    LiveRequestSource(sim, 100, 10**6).submit(0.0, list(range(1, 200)), 400)
    return ServedLiveSession(Session("served", scenario, Settings(), sim=sim), Settings())


def take(live: ServedLiveSession, num_steps: int) -> list:
    records = []
    for _ in range(num_steps):
        step, _ = live.session.advance(1, checkpoint_later=True)
        live.hold(step)
        records += step
    return records


def test_a_released_steps_delta_carries_its_own_step_and_clock_not_the_engines():
    live = served_live()
    live.viewers = {viewer := FakeViewer()}
    records = take(live, 6)  # the engine runs ahead of what it has released
    live.publish_steps(records[:3])
    live.flush()

    (delta,) = viewer.deltas
    header = delta.envelope
    assert live.session.step == 6
    assert header["step"] == delta.last_record["step"] + 1 == 3
    assert header["clock_s"] == records[2].clock_s_after
    assert delta.num_steps == 3 and delta.base_seq == 0
    assert viewer.events and all(event["step"] < 3 for event in viewer.events)  # the later steps' wait too


def test_a_viewer_whose_snapshot_came_after_some_held_steps_gets_only_the_later_ones():
    live = served_live()
    records = take(live, 4)
    live.viewers = {caught_up := FakeViewer(), joined := FakeViewer(snapshot_seq=live.session.seq - 1)}
    live.publish_steps(records)
    live.flush()

    assert [(d.base_seq, d.seq, d.num_steps) for d in caught_up.deltas] == [(0, 4, 4)]
    assert [(d.base_seq, d.seq, d.num_steps) for d in joined.deltas] == [(3, 4, 1)]


@pytest.mark.slow
def test_after_the_event_loop_is_held_up_the_catch_up_steps_wait_for_their_release():
    """The event loop held up 100 ms (a busy machine): the engine takes the ~17 steps it owes at
    once, and a viewer woken by the last release used to be sent the engine's step number and
    clock with the last released step's record, 17 steps apart (the top bar against the batch)."""
    with OpenAIServer() as server:
        live, viewer = server.served.engine.live, FakeViewer()
        loop = server.served.engine.task.get_loop()

        async def send_loop() -> None:  # as a viewer's: woken by each release, flushing under the lock
            while True:
                await viewer.wakeup.wait()
                viewer.wakeup.clear()
                async with live.lock:
                    live.flush()

        loop.call_soon_threadsafe(lambda: (live.viewers.add(viewer), loop.create_task(send_loop())))
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        ask = threading.Thread(target=lambda: client.completions.create(
            model=MODEL, prompt="held up " * 50, max_tokens=400, extra_body={"ignore_eos": True}))
        ask.start()
        for _ in range(4):
            time.sleep(0.3)
            loop.call_soon_threadsafe(time.sleep, 0.1)
        ask.join(timeout=30)

    shown = [(d.envelope["step"], d.last_record["step"] + 1) for d in viewer.deltas if d.last_record]
    assert len(shown) > 100
    assert [step for step, batch_step in shown if step != batch_step] == []
