"""The websocket protocol: a snapshot first, then deltas with consecutive sequence numbers, events
with increasing ids, exact step back, breakpoints, playback, read-only viewers and bad messages."""

import copy
import json
import time

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app import live as live_module
from app import wire
from app.main import create_app
from app.session import EVENT_HISTORY
from app.settings import Settings
from app.viewer import MAX_UNACKED_FRAMES
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults

# Tight on KV blocks, with shared system prompts: prefix-cache hits from step 5, the pool 90% full
# by step 22, first finish at step 28, preemptions from step 220, done after 588 steps (600 engine
# passes under async scheduling, vLLM 0.33's default, which sessions follow).
TIGHT = {
    "name": "tight",
    "engine": {"num_gpu_blocks": 160, "max_num_seqs": 32, "max_num_batched_tokens": 256, "max_model_len": 2048},
    "workload": {"num_requests": 60, "arrival_rate": 40.0, "lengths": "lognormal", "prompt_len": 300,
                 "output_len": 60, "sigma": 0.6, "shared_prefix_len": 64, "num_shared_prefixes": 2, "seed": 1},
}
STATE_TYPES = ("snapshot", "delta")
# Bounds every wait: idle connections get a heartbeat this often, so a receive never blocks long.
HEARTBEAT_S = 0.1
MAX_FRAMES = 400


def readable(frame: dict) -> dict:
    """A decoded state frame with its arrays gathered back per table and per block: `tables`
    (request -> blocks), and `blocks` (a snapshot: the whole pool; a delta: [block, owner, ref,
    cached] per changed block) and `progress` ([request, computed, output]) of a delta."""
    tables, at = {}, 0
    for rid, length in zip(frame["table_ids"], frame["table_lengths"]):
        tables[rid] = frame["table_blocks"][at:at + length]
        at += length
    frame["tables"] = tables
    owner_ids = frame["owner_ids"]
    owners = [owner_ids[i] if i >= 0 else None for i in frame["block_owner"]]
    if frame["type"] == "snapshot":
        frame["blocks"] = {"num_blocks": frame["num_blocks"], "owner": owners, "ref": frame["block_ref"],
                           "cached": frame["block_cached"]}
    else:
        frame["blocks"] = [list(block) for block in zip(frame["block_ids"], owners, frame["block_ref"], frame["block_cached"])]
        counts = frame["progress"]
        frame["progress"] = [[rid, counts[2 * i], counts[2 * i + 1]] for i, rid in enumerate(frame["progress_ids"])]
    return frame


def receive_frame(ws) -> dict:
    """The next message: state frames come binary (app/wire.py), the others as JSON text."""
    message = ws.receive()
    if message["type"] == "websocket.close":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    if message.get("bytes") is not None:
        return readable(wire.decode(message["bytes"]))
    return json.loads(message["text"])


class Connection:
    """A websocket with the waits a test needs, every one bounded by a frame count."""

    def __init__(self, ws):
        self.ws = ws
        self.seen: list[dict] = []

    def send(self, message: dict) -> None:
        self.ws.send_json(message)

    def next(self) -> dict:
        frame = receive_frame(self.ws)
        self.seen.append(frame)
        return frame

    def until(self, predicate, max_frames: int = MAX_FRAMES) -> list[dict]:
        """Frames up to and including the first that satisfies `predicate`."""
        frames = []
        for _ in range(max_frames):
            frames.append(self.next())
            if predicate(frames[-1]):
                return frames
        pytest.fail(f"no matching frame in {max_frames} frames: {[f['type'] for f in frames][-20:]}")

    def until_type(self, kind: str) -> dict:
        return self.until(lambda f: f["type"] == kind)[-1]

    def state(self) -> dict:
        """The next snapshot or delta."""
        return self.until(lambda f: f["type"] in STATE_TYPES)[-1]

    def ping(self) -> tuple[int, list[dict]]:
        """The session's step as a pong reports it, and the frames that came before the pong."""
        self.send({"type": "ping"})
        frames = self.until(lambda f: f["type"] == "pong")
        return frames[-1]["step"], frames[:-1]

    def step(self, n: int) -> dict:
        self.send({"type": "step", "n": n})
        return self.state()

    def step_to(self, target: int, at: int = 0) -> None:
        """Step forward to `target` in commands of at most 200 steps (each one a delta)."""
        while at < target:
            n = min(200, target - at)
            frame = self.step(n)
            assert frame["type"] == "delta" and frame["step"] == at + n
            at += n

    def fresh_snapshot(self) -> dict:
        self.send({"type": "snapshot"})
        return self.until_type("snapshot")


@pytest.fixture
def client():
    with TestClient(create_app(Settings(heartbeat_s=HEARTBEAT_S, allowed_hosts=("testserver",)))) as client:
        yield client


def create(client, scenario: dict | None = None) -> dict:
    body = {"scenario": scenario} if scenario is not None else {"scenario": TIGHT}
    response = client.post("/api/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


class Opener:
    """Opens websockets to sessions and closes them all at the end of the test."""

    def __init__(self, client):
        self.client = client
        self.contexts = []

    def __call__(self, created: dict, control: bool = True, token: str | None = None) -> Connection:
        token = token if token is not None else (created["control_token"] if control else "")
        context = self.client.websocket_connect(f"/ws/{created['session_id']}")
        self.contexts.append(context)
        connection = Connection(context.__enter__())
        if token:
            connection.send({"type": "auth", "token": token})
        return connection

    def close(self):
        for context in reversed(self.contexts):
            context.__exit__(None, None, None)


@pytest.fixture
def connect(client):
    opener = Opener(client)
    yield opener
    opener.close()


@pytest.fixture
def session(client, connect):
    """A TIGHT session with its presenter connected, past the first snapshot."""
    created = create(client)
    presenter = connect(created)
    first = presenter.state()
    assert first["type"] == "snapshot"
    return created, presenter


def steps_to_the_end() -> int:
    return Scenario.from_dict(with_vllm_defaults(copy.deepcopy(TIGHT))).build().run()


def expected_step(predicate, start: int = 0) -> int:
    """The session step a breakpoint stops at: one past the first step record (from `start`) matching."""
    # As a session runs it: with vLLM's defaults for what the scenario leaves open.
    sim = Scenario.from_dict(with_vllm_defaults(copy.deepcopy(TIGHT))).build()
    for record in sim.records():
        if record.step >= start and predicate(record):
            return record.step + 1
    pytest.fail("the scenario never matches")


# -- snapshots and deltas ------------------------------------------------------------------


def test_first_state_frame_is_a_snapshot(client, connect):
    """A new connection's first state frame is a full snapshot of step 0."""
    conn = connect(create(client))

    frame = conn.state()

    assert frame["type"] == "snapshot" and frame["v"] == 2
    assert frame["step"] == 0 and frame["seq"] == 0 and frame["done"] is False
    assert {"session", "status", "requests", "queues", "table_ids", "table_lengths", "table_blocks", "owner_ids",
            "block_owner", "block_ref", "block_cached", "points", "metrics", "events"} <= set(frame)
    assert frame["num_blocks"] == len(frame["block_owner"]) == TIGHT["engine"]["num_gpu_blocks"]
    assert all(earlier["type"] in ("status", "heartbeat") for earlier in conn.seen[:-1])


def test_step_n_sends_one_delta_with_the_next_seq_and_n_points(session):
    """`step n` answers with a delta whose seq is one more, applying to the snapshot's seq, with n
    chart points and the last step's record."""
    _, presenter = session

    delta = presenter.step(5)

    assert delta["type"] == "delta"
    assert delta["seq"] == 1 and delta["base_seq"] == 0
    assert delta["from_step"] == 0 and delta["step"] == 5
    assert delta["last_record"]["step"] == 4
    assert len(delta["points"]) == 5


def test_deltas_arrive_in_order_with_consecutive_seq(session):
    """Steps taken one command at a time arrive as deltas numbered seq, seq+1, seq+2, ..."""
    _, presenter = session

    deltas = [presenter.step(3) for _ in range(10)]

    assert [d["type"] for d in deltas] == ["delta"] * 10
    assert [d["seq"] for d in deltas] == list(range(1, 11))
    assert [d["base_seq"] for d in deltas] == list(range(0, 10))
    assert [d["from_step"] for d in deltas] == list(range(0, 30, 3))
    assert [d["last_record"]["step"] for d in deltas] == list(range(2, 30, 3))
    assert sum(len(d["points"]) for d in deltas) == 30


def test_a_viewer_that_falls_behind_gets_a_snapshot_never_a_gap(session):
    """Commands sent faster than frames are read: every delta applies to the seq of the frame
    before it (deltas not yet sent merge into one)."""
    _, presenter = session

    for _ in range(30):
        presenter.send({"type": "step", "n": 1})
    final_step, frames = presenter.ping()
    if not any(f["type"] in STATE_TYPES and f["step"] == 30 for f in frames):
        frames += presenter.until(lambda f: f["type"] in STATE_TYPES and f["step"] == 30)
    states = [f for f in frames if f["type"] in STATE_TYPES]

    assert final_step == 30
    previous = 0
    for frame in states:
        if frame["type"] == "delta":
            assert frame["base_seq"] == previous
        assert frame["seq"] > previous
        previous = frame["seq"]


def test_a_long_step_arrives_as_a_snapshot(session):
    """More than 200 steps in one command reach viewers as a snapshot, still with the next seq."""
    _, presenter = session

    frame = presenter.step(300)

    assert frame["type"] == "snapshot"
    assert frame["step"] == 300 and frame["seq"] == 1


def test_second_viewer_sees_the_same_deltas(client, session, connect):
    """Two viewers of one session receive identical delta frames."""
    created, presenter = session
    viewer = connect(created, control=False)
    viewer.state()

    sent = presenter.step(4)
    received = viewer.state()

    assert received == sent


def test_events_carry_increasing_ids(session):
    """Events frames come in order: ids 1, 2, 3, ... with nothing dropped, each tagged with its step."""
    _, presenter = session

    presenter.step_to(400)
    _, frames = presenter.ping()
    events_frames = [f for f in presenter.seen if f["type"] == "events"]
    events = [event for frame in events_frames for event in frame["events"]]

    assert events, "the run produced events"
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert all(frame["dropped"] == 0 for frame in events_frames)
    assert [e["step"] for e in events] == sorted(e["step"] for e in events)
    assert {"admitted", "chunk", "finished", "preempted"} <= {e["kind"] for e in events}


# -- applying deltas reproduces the snapshot -----------------------------------------------


class ClientState:
    """What a dashboard holds: a snapshot with every later delta applied to it."""

    def __init__(self, snapshot: dict):
        blocks = snapshot["blocks"]
        self.step = snapshot["step"]
        self.seq = snapshot["seq"]
        self.requests = dict(snapshot["requests"])
        self.tables = {rid: table for rid, table in snapshot["tables"].items() if table}
        self.owner = list(blocks["owner"])
        self.ref = list(blocks["ref"])
        self.cached = list(blocks["cached"])
        self.queues = snapshot["queues"]
        self.points = list(snapshot["points"])

    def apply(self, delta: dict) -> None:
        assert delta["base_seq"] == self.seq
        assert delta["from_step"] == self.step
        self.step, self.seq = delta["step"], delta["seq"]
        self.requests.update(delta["requests"])
        for rid, computed, output in delta["progress"]:
            if rid in self.requests:
                self.requests[rid] = {**self.requests[rid], "computed": computed, "output": output}
        for rid, table in delta["tables"].items():
            if table:
                self.tables[rid] = table
            else:
                self.tables.pop(rid, None)
        for block_id, owner, ref, cached in delta["blocks"]:
            self.owner[block_id], self.ref[block_id], self.cached[block_id] = owner, ref, cached
        self.queues = delta["queues"]
        self.points += delta["points"]


CONTIGUOUS = {**TIGHT, "engine": {**TIGHT["engine"], "kv_allocator": "contiguous", "enable_prefix_caching": False,
                                  "num_gpu_blocks": 800}}


@pytest.mark.parametrize("scenario", [
    pytest.param(TIGHT, id="paged"),
    pytest.param(CONTIGUOUS, id="contiguous"),
])
def test_snapshot_plus_deltas_equals_a_fresh_snapshot(client, connect, scenario):
    """Applying each delta to the first snapshot gives exactly the state a new snapshot shows."""
    conn = connect(create(client, scenario))
    state = ClientState(conn.state())

    for n in (1, 7, 30, 50, 3, 80, 60, 90):
        state.apply(conn.step(n))
    snapshot = conn.fresh_snapshot()
    fresh = ClientState(snapshot)

    assert state.step == fresh.step == 321
    assert state.tables == fresh.tables
    assert state.owner == fresh.owner
    assert state.ref == fresh.ref
    assert state.cached == fresh.cached
    assert state.queues == fresh.queues
    assert state.points == fresh.points
    assert {rid: state.requests[rid] for rid in snapshot["requests"]} == snapshot["requests"]


def acknowledging_viewer(created: dict, connect) -> tuple[Connection, ClientState]:
    """A read-only viewer that has acknowledged its first snapshot, as the dashboard does."""
    viewer = connect(created, control=False)
    state = ClientState(viewer.state())
    viewer.send({"type": "ack", "seq": state.seq})
    viewer.ping()  # the acknowledgement has been handled
    return viewer, state


def test_a_page_that_acknowledges_gets_its_window_of_frames_in_flight_then_the_rest_merged(client, connect):
    """A viewer that acknowledges what it drew has at most MAX_UNACKED_FRAMES state frames
    unacknowledged; the steps taken meanwhile come as one delta, and applying it still gives a fresh
    snapshot's state."""
    window = MAX_UNACKED_FRAMES
    sizes = [1, 7, 30, 50, 3, 80, 4, 6, 2, 9][: window + 2]  # the last two are held back
    created = create(client)
    presenter = connect(created)
    presenter.state()
    viewer, state = acknowledging_viewer(created, connect)

    for n in sizes:
        presenter.step(n)
    in_flight = [f for f in viewer.until(lambda f: f["type"] == "delta" and f["seq"] == window) if f["type"] in STATE_TYPES]
    held_back = [f for f in viewer.ping()[1] + viewer.ping()[1] if f["type"] in STATE_TYPES]
    for delta in in_flight:
        state.apply(delta)
    viewer.send({"type": "ack", "seq": state.seq})
    merged = viewer.state()
    state.apply(merged)
    fresh = ClientState(viewer.fresh_snapshot())

    assert [f["seq"] for f in in_flight] == list(range(1, window + 1)) and not held_back
    assert merged["type"] == "delta" and (merged["base_seq"], merged["seq"]) == (window, window + 2)
    assert merged["from_step"] == sum(sizes[:window]) and len(merged["points"]) == sum(sizes[window:])
    assert state.step == fresh.step == sum(sizes)
    assert (state.tables, state.owner, state.ref, state.cached) == (fresh.tables, fresh.owner, fresh.ref, fresh.cached)
    assert state.queues == fresh.queues and state.points == fresh.points
    assert {rid: state.requests[rid] for rid in fresh.requests} == fresh.requests


def test_merged_deltas_longer_than_200_steps_become_one_snapshot(client, connect):
    """A page that stops acknowledging while more than 200 steps go by gets the current state
    as one snapshot, not a long delta."""
    window = MAX_UNACKED_FRAMES
    created = create(client)
    presenter = connect(created)
    presenter.state()
    viewer, _ = acknowledging_viewer(created, connect)

    for n in [10] * window + [70] * 3:  # a window of deltas in flight, then 210 steps held back
        presenter.step(n)
    viewer.until(lambda f: f["type"] == "delta" and f["seq"] == window)
    viewer.send({"type": "ack", "seq": window})
    frame = viewer.state()

    assert frame["type"] == "snapshot" and frame["step"] == 10 * window + 210 and frame["seq"] == window + 3


def test_play_waits_for_a_page_that_is_still_drawing(client, connect):
    """Frames before speed: a playing session whose only page stopped acknowledging builds no
    deltas for it, and once the next frame's steps are ready it stops stepping (on a small
    machine those steps would take the CPU the page needs to draw) until the page catches up."""
    created = create(client)
    presenter = connect(created)
    state = ClientState(presenter.state())
    presenter.send({"type": "ack", "seq": state.seq})
    presenter.ping()

    presenter.send({"type": "play", "steps_per_s": 200})
    last_in_flight = presenter.until(lambda f: f["type"] == "delta" and f["seq"] == MAX_UNACKED_FRAMES)[-1]
    time.sleep(0.5)
    presenter.send({"type": "pause"})
    paused = presenter.until(lambda f: f["type"] == "status" and not f["playing"])[-1]

    assert paused["seq"] == MAX_UNACKED_FRAMES
    # One tick's steps at most (200 steps/s, 60 ticks/s), not the 100 of half a second's play.
    assert last_in_flight["step"] < paused["step"] <= last_in_flight["step"] + 8


def test_a_viewer_that_does_not_acknowledge_never_holds_play_back(client, connect):
    """A script reading frames as fast as its socket takes them (no acknowledgements) is never
    "still drawing": play keeps its speed."""
    created = create(client)
    presenter = connect(created)
    presenter.state()
    presenter.send({"type": "play", "steps_per_s": 200})
    presenter.until(lambda f: f["type"] == "status" and f["playing"])
    time.sleep(0.5)
    presenter.send({"type": "pause"})
    paused = presenter.until(lambda f: f["type"] == "status" and not f["playing"])[-1]

    assert paused["step"] >= 50


# -- stepping back -------------------------------------------------------------------------

COMPARED = ("step", "clock_s", "done", "queues", "requests", "tables", "blocks", "points", "metrics")


def without_ids(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in event.items() if k != "id"} for event in events]


def fresh_state_at(client, connect, target: int, scenario: dict | None = None) -> dict:
    """The snapshot of a new session of the same scenario, stepped forward to `target`."""
    conn = connect(create(client, scenario))
    conn.state()
    conn.step_to(target)
    return conn.fresh_snapshot()


def assert_same_state(snapshot: dict, fresh: dict) -> None:
    for key in COMPARED:
        assert snapshot[key] == fresh[key], key
    assert without_ids(snapshot["events"]) == without_ids(fresh["events"])


def test_step_back_equals_stepping_forward_fresh(client, connect, session):
    """After 300 steps, `step_back 40` shows exactly the state a fresh run has at step 260."""
    _, presenter = session
    presenter.step_to(300)

    presenter.send({"type": "step_back", "n": 40})
    snapshot = presenter.until_type("snapshot")

    assert snapshot["step"] == 260
    assert_same_state(snapshot, fresh_state_at(client, connect, 260))
    assert snapshot["last_record"]["step"] == 259


def test_seek_back_across_preemptions_equals_stepping_forward_fresh(client, connect, session):
    """Seeking back over preempted requests restores queues, tables and blocks exactly."""
    _, presenter = session
    presenter.step_to(300)

    presenter.send({"type": "seek", "step": 230})
    snapshot = presenter.until_type("snapshot")

    assert snapshot["step"] == 230
    assert any(r["preemptions"] for r in snapshot["requests"].values())
    assert_same_state(snapshot, fresh_state_at(client, connect, 230))
    assert snapshot["last_record"] == fresh_state_at(client, connect, 230)["last_record"]


def test_seek_forward_equals_stepping_forward_fresh(client, connect, session):
    """Seeking ahead replays the steps and shows the same state as stepping."""
    _, presenter = session

    presenter.send({"type": "seek", "step": 350})
    snapshot = presenter.until_type("snapshot")

    assert snapshot["step"] == 350
    assert_same_state(snapshot, fresh_state_at(client, connect, 350))


def test_step_back_then_forward_again_repeats_the_same_steps(session):
    """Steps replayed after a step back are the same records as the first time."""
    _, presenter = session
    first = presenter.step(150)

    presenter.send({"type": "seek", "step": 20})
    presenter.until_type("snapshot")
    again = presenter.step(130)

    assert again["points"] == first["points"][20:]
    assert again["last_record"] == first["last_record"]


def test_step_back_is_a_snapshot_with_the_next_seq(session):
    """A step back reaches viewers as a snapshot numbered one past the last delta."""
    _, presenter = session
    last = presenter.step(50)

    presenter.send({"type": "step_back", "n": 10})
    snapshot = presenter.until_type("snapshot")

    assert snapshot["seq"] == last["seq"] + 1
    assert snapshot["step"] == 40


@pytest.mark.slow
def test_a_checkpoint_taken_in_a_thread_while_playing_holds_its_step(client, connect, monkeypatch):
    """Playing one step a tick, a checkpoint falls due at a tick's last step and is taken in a
    thread after that step's frame is out: seeking back to it afterwards restores exactly the state
    a fresh run reaches there."""
    threaded = []
    to_thread = live_module.asyncio.to_thread

    async def recording_to_thread(function, *args):
        threaded.append(function.__self__.step)
        return await to_thread(function, *args)

    monkeypatch.setattr(live_module.asyncio, "to_thread", recording_to_thread)
    created = create(client)
    presenter = connect(created)
    presenter.state()
    presenter.send({"type": "play", "steps_per_s": 60})  # one step a tick
    presenter.until(lambda f: f["type"] in STATE_TYPES and f["step"] >= 70)
    presenter.send({"type": "pause"})
    presenter.until(lambda f: f["type"] == "status" and not f["playing"])
    checkpoints = [c.step_index for c in client.app.state.manager.get(created["session_id"]).session.checkpoints]

    presenter.send({"type": "seek", "step": 64})
    snapshot = presenter.until(lambda f: f["type"] == "snapshot" and f["step"] == 64)[-1]

    assert threaded[0] == 64 and 64 in checkpoints
    assert_same_state(snapshot, fresh_state_at(client, connect, 64))


def test_step_back_to_a_checkpoint_step_keeps_the_last_record(client, connect, session):
    """Stepping back to step 128 shows step 127's record, as a fresh run at step 128 does."""
    _, presenter = session
    presenter.step_to(200)

    presenter.send({"type": "seek", "step": 128})
    snapshot = presenter.until_type("snapshot")

    assert snapshot["last_record"] is not None
    assert snapshot["last_record"] == fresh_state_at(client, connect, 128)["last_record"]


def test_step_back_late_in_a_long_run_keeps_the_event_log(client, connect):
    """After running the default preset to its end (more events than the log keeps), seeking to
    step 300 shows the same recent events as a fresh run at step 300."""
    # The synchronous loop, with a sixth more requests: its run has more events than the log keeps.
    synchronous = copy.deepcopy(PRESET_SCENARIOS["default"])
    synchronous["engine"]["async_scheduling"] = False
    synchronous["entrypoint"] = "offline"  # the engine alone: the run the event-log budget was sized against
    synchronous["workload"]["num_requests"] = 140
    default = client.post("/api/sessions", json={"scenario": synchronous}).json()
    conn = connect(default)
    conn.state()
    conn.send({"type": "step", "n": 100_000})
    end = conn.until(lambda f: f["type"] == "snapshot" and f["done"])[-1]
    assert end["events"][-1]["id"] > EVENT_HISTORY

    conn.send({"type": "seek", "step": 300})
    snapshot = conn.until(lambda f: f["type"] == "snapshot" and f["step"] == 300)[-1]

    fresh_conn = connect(client.post("/api/sessions", json={"scenario": synchronous}).json())
    fresh_conn.state()
    fresh_conn.step_to(300)
    fresh = fresh_conn.fresh_snapshot()
    assert without_ids(snapshot["events"]) == without_ids(fresh["events"])


def test_a_delta_that_admitted_carries_the_prefix_hit_rate_so_far(session):
    """Admissions look the prefix cache up: a step that admitted sends the metrics, so the hit rate
    on screen is the run's, not the one of the last finish (TIGHT: hits from step 5, a finish at 28)."""
    _, presenter = session

    deltas = [presenter.step(1) for _ in range(12)]
    admitting = [d for d in deltas if d["last_record"]["admitted"]]
    fresh = presenter.fresh_snapshot()

    assert admitting and all(d.get("metrics") for d in admitting)
    latest = [d for d in deltas if d.get("metrics")][-1]
    assert latest["metrics"]["report"]["prefix_cache_hit_rate"] == fresh["metrics"]["report"]["prefix_cache_hit_rate"] > 0


def test_reset_goes_back_to_step_zero(session):
    """`reset` returns to step 0: empty queues, free blocks, no points, as at the start."""
    _, presenter = session
    start = presenter.fresh_snapshot()
    presenter.step_to(250)

    presenter.send({"type": "reset"})
    snapshot = presenter.until_type("snapshot")

    assert snapshot["step"] == 0 and snapshot["clock_s"] == 0.0
    assert snapshot["points"] == [] and snapshot["last_record"] is None
    for key in ("queues", "requests", "tables", "blocks", "metrics"):
        assert snapshot[key] == start[key], key
    assert presenter.ping()[0] == 0


# -- breakpoints ---------------------------------------------------------------------------


def run_to_breakpoint(conn: Connection, breakpoints: list[dict]) -> dict:
    """Set the breakpoints, run to the next hit, and return the status frame it ends with."""
    conn.send({"type": "breakpoints", "breakpoints": breakpoints})
    status = conn.until(lambda f: f["type"] == "status" and f["breakpoints"] == [
        {"kind": b["kind"], "value": b.get("value")} for b in breakpoints])[-1]
    assert status["playing"] is False
    conn.send({"type": "run_to_breakpoint"})
    return conn.until(lambda f: f["type"] == "status" and "note" in f)[-1]


def test_run_to_step_breakpoint_stops_at_that_step(session):
    """A `step` breakpoint at K stops the run with the session at step K."""
    _, presenter = session

    status = run_to_breakpoint(presenter, [{"kind": "step", "value": 77}])

    assert status["note"] == "breakpoint: step"
    assert status["step"] == 77
    assert presenter.ping()[0] == 77


def test_run_to_preemption_breakpoint_stops_after_the_first_preemption(session):
    """A `preemption` breakpoint stops right after the first step that preempted a request."""
    _, presenter = session
    expected = expected_step(lambda r: r.preempted)

    status = run_to_breakpoint(presenter, [{"kind": "preemption"}])
    snapshot = presenter.fresh_snapshot()

    assert status["note"] == "breakpoint: preemption"
    assert status["step"] == expected == snapshot["step"]
    assert snapshot["last_record"]["preempted"]


def test_run_to_finish_breakpoint_stops_at_each_finish_in_turn(session):
    """A `finish` breakpoint stops after the first finish, and running again stops at the next."""
    _, presenter = session
    first = expected_step(lambda r: r.finished)
    second = expected_step(lambda r: r.finished, start=first)

    status = run_to_breakpoint(presenter, [{"kind": "finish"}])
    delta = presenter.state()
    presenter.send({"type": "run_to_breakpoint"})
    again = presenter.until(lambda f: f["type"] == "status" and "note" in f)[-1]

    assert status["step"] == first and again["step"] == second
    assert delta["type"] == "delta" and delta["last_record"]["finished"]


def test_run_to_kv_usage_breakpoint_stops_when_usage_first_reaches_it(session):
    """A `kv_usage` breakpoint at 0.9 stops at the first step whose KV usage is at least 0.9."""
    _, presenter = session
    expected = expected_step(lambda r: r.kv_usage >= 0.9)

    status = run_to_breakpoint(presenter, [{"kind": "kv_usage", "value": 0.9}])
    delta = presenter.state()

    assert status["note"] == "breakpoint: kv_usage"
    assert status["step"] == expected
    assert delta["last_record"]["kv_usage"] >= 0.9
    assert all(point[3] < 0.9 for point in delta["points"][:-1])


def test_earliest_of_several_breakpoints_wins(session):
    """With a late step breakpoint and an early finish breakpoint, the run stops at the finish."""
    _, presenter = session
    first_finish = expected_step(lambda r: r.finished)

    status = run_to_breakpoint(presenter, [{"kind": "step", "value": 500}, {"kind": "finish"}])

    assert status["step"] == first_finish < 500


def test_run_to_breakpoint_never_hit_runs_to_the_end(session):
    """A breakpoint that never fires lets the run finish, and says so."""
    _, presenter = session

    status = run_to_breakpoint(presenter, [{"kind": "step", "value": steps_to_the_end() + 1}])

    assert status["note"] == "no breakpoint hit before the end"
    assert status["done"] is True and status["step"] == steps_to_the_end()


def test_run_to_breakpoint_without_breakpoints_is_an_error(session):
    """`run_to_breakpoint` with none set is an error and does not move the session."""
    _, presenter = session

    presenter.send({"type": "run_to_breakpoint"})
    error = presenter.until_type("error")

    assert error["code"] == "no_breakpoints"
    assert presenter.ping()[0] == 0


# -- playback ------------------------------------------------------------------------------


def test_play_streams_deltas_and_pause_stops_them(client, session):
    """`play` steps the session on its own, in consecutive deltas; `pause` stops it."""
    created, presenter = session

    presenter.send({"type": "play", "steps_per_s": 100})
    playing = presenter.until(lambda f: f["type"] == "status" and f["playing"])[-1]
    deltas = [presenter.until_type("delta") for _ in range(4)]
    presenter.send({"type": "pause"})
    paused = presenter.until(lambda f: f["type"] == "status" and not f["playing"], max_frames=60)[-1]
    paused_at, _ = presenter.ping()
    time.sleep(0.3)
    still_at, _ = presenter.ping()

    assert playing["steps_per_s"] == 100
    assert [d["base_seq"] for d in deltas[1:]] == [d["seq"] for d in deltas[:-1]]
    assert deltas[-1]["step"] > deltas[0]["step"] > 0
    assert "note" not in paused and paused["done"] is False
    assert paused_at == still_at >= deltas[-1]["step"]
    assert paused_at < steps_to_the_end()
    assert client.get(f"/api/sessions/{created['session_id']}").json()["playing"] is False


def test_play_stops_by_itself_at_the_end(session):
    """Played to its end, a session stops with a `finished` note and refuses to play again."""
    _, presenter = session

    presenter.send({"type": "play", "steps_per_s": 2000})
    finished = presenter.until(lambda f: f["type"] == "status" and f.get("note") == "finished", max_frames=2000)[-1]
    presenter.send({"type": "play"})
    error = presenter.until_type("error")

    assert finished["done"] is True and finished["playing"] is False and finished["step"] == steps_to_the_end()
    assert error["code"] == "finished"


def test_speed_changes_the_status(session):
    """`speed` sets steps_per_s and every viewer hears it in a status frame."""
    _, presenter = session

    presenter.send({"type": "speed", "steps_per_s": 123.5})
    status = presenter.until(lambda f: f["type"] == "status" and f["steps_per_s"] == 123.5)[-1]

    assert status["playing"] is False


def test_speed_as_time_ratio_replaces_steps_per_s(session):
    """`speed` with `time_ratio` sets it in the status; a later `steps_per_s` clears it again."""
    _, presenter = session

    presenter.send({"type": "speed", "time_ratio": 0.5})
    by_time = presenter.until(lambda f: f["type"] == "status" and f["time_ratio"] == 0.5)[-1]
    presenter.send({"type": "speed", "steps_per_s": 40})
    by_steps = presenter.until(lambda f: f["type"] == "status" and f["steps_per_s"] == 40)[-1]

    assert by_time["playing"] is False
    assert by_steps["time_ratio"] is None


@pytest.mark.slow
def test_play_at_a_time_ratio_keeps_simulated_time_near_that_multiple_of_wall_time(session):
    """Played with time_ratio 0.5, the simulated clock moves about half as fast as the wall clock (a
    step that overshoots one tick's share is not counted again from the next: 0.84 when it was)."""
    _, presenter = session

    presenter.send({"type": "play", "time_ratio": 0.5})
    first = presenter.until_type("delta")
    started = time.monotonic()
    last = first
    while time.monotonic() - started < 1.0:
        last = presenter.until_type("delta")
    wall_s = time.monotonic() - started
    presenter.send({"type": "pause"})
    presenter.until(lambda f: f["type"] == "status" and not f["playing"])

    ratio = (last["clock_s"] - first["clock_s"]) / wall_s
    assert 0.35 < ratio < 0.65, ratio


def test_a_new_viewers_snapshot_carries_the_current_status(client, session, connect):
    """A viewer joining after the presenter set breakpoints and speed sees them in its snapshot."""
    created, presenter = session
    presenter.send({"type": "breakpoints", "breakpoints": [{"kind": "finish"}]})
    presenter.send({"type": "speed", "steps_per_s": 100})
    presenter.until(lambda f: f["type"] == "status" and f["steps_per_s"] == 100)

    snapshot = connect(created, control=False).state()

    assert snapshot["status"]["breakpoints"] == [{"kind": "finish", "value": None}]
    assert snapshot["status"]["steps_per_s"] == 100


# -- read-only viewers ---------------------------------------------------------------------

CONTROL_COMMANDS = [
    {"type": "play"}, {"type": "play", "steps_per_s": 50}, {"type": "pause"}, {"type": "step", "n": 1},
    {"type": "step_back", "n": 1}, {"type": "seek", "step": 10}, {"type": "reset"}, {"type": "run_to_breakpoint"},
    {"type": "speed", "steps_per_s": 5}, {"type": "breakpoints", "breakpoints": [{"kind": "finish"}]},
]


@pytest.mark.parametrize("token", ["", "wrong-token"], ids=["no-token", "wrong-token"])
def test_viewer_without_the_token_cannot_control(client, session, connect, token):
    """Every control command from a view-only connection is a read_only error and changes nothing."""
    created, presenter = session
    presenter.step(12)
    viewer = connect(created, control=False, token=token)
    seen = []
    viewer.until(lambda f: seen.append(f["type"]) or ("snapshot" in seen and (not token or "error" in seen)))
    if token:  # a wrong token is refused as such, and the connection goes on read-only
        assert seen.count("error") == 1

    for command in CONTROL_COMMANDS:
        viewer.send(command)
        error = viewer.until_type("error")
        assert error["code"] == "read_only", command
    step, frames = viewer.ping()

    assert step == 12
    assert not [f for f in frames if f["type"] in STATE_TYPES]
    info = client.get(f"/api/sessions/{created['session_id']}").json()
    assert info["step"] == 12 and info["playing"] is False
    assert presenter.fresh_snapshot()["status"]["breakpoints"] == []


def test_viewer_can_ask_for_a_snapshot_and_ping(session, client, connect):
    """View-only connections may still ask for a snapshot and ping."""
    created, presenter = session
    presenter.step(9)
    viewer = connect(created, control=False)
    viewer.state()

    snapshot = viewer.fresh_snapshot()

    assert snapshot["step"] == 9
    assert viewer.ping()[0] == 9


def test_deleting_the_session_disconnects_its_viewers(client, session):
    """Deleting a session closes its websockets with code 4404."""
    created, presenter = session

    client.delete(f"/api/sessions/{created['session_id']}", headers={"X-Control-Token": created["control_token"]})

    with pytest.raises(WebSocketDisconnect) as closed:
        presenter.until(lambda f: False, max_frames=50)
    assert closed.value.code == 4404


# -- bad messages --------------------------------------------------------------------------

BAD_MESSAGES = [
    pytest.param("{not json", "bad_json", id="bad-json"),
    pytest.param("", "bad_json", id="empty"),
    pytest.param("[1, 2]", "bad_message", id="array"),
    pytest.param("42", "bad_message", id="number"),
    pytest.param('"ping"', "bad_message", id="string"),
    pytest.param("null", "bad_message", id="null"),
    pytest.param('{"n": 1}', "bad_message", id="no-type"),
    pytest.param('{"type": 5}', "bad_message", id="type-not-string"),
    pytest.param('{"type": "fly"}', "unknown_type", id="unknown-type"),
    pytest.param('{"type": "step", "n": 0}', "bad_value", id="step-0"),
    pytest.param('{"type": "step", "n": -3}', "bad_value", id="step-negative"),
    pytest.param('{"type": "step", "n": "3"}', "bad_value", id="step-string"),
    pytest.param('{"type": "step", "n": 1.5}', "bad_value", id="step-float"),
    pytest.param('{"type": "step", "n": true}', "bad_value", id="step-bool"),
    pytest.param('{"type": "step", "n": null}', "bad_value", id="step-null"),
    pytest.param('{"type": "step", "n": 100001}', "bad_value", id="step-too-many"),
    pytest.param('{"type": "step_back", "n": 0}', "bad_value", id="step-back-0"),
    pytest.param('{"type": "seek", "step": -1}', "bad_value", id="seek-negative"),
    pytest.param('{"type": "seek", "step": "10"}', "bad_value", id="seek-string"),
    pytest.param('{"type": "speed", "steps_per_s": -1}', "bad_value", id="speed-negative"),
    pytest.param('{"type": "speed", "steps_per_s": 0}', "bad_value", id="speed-zero"),
    pytest.param('{"type": "speed", "steps_per_s": 2001}', "bad_value", id="speed-over-max"),
    pytest.param('{"type": "speed", "steps_per_s": NaN}', "bad_value", id="speed-nan"),
    pytest.param('{"type": "speed"}', "bad_value", id="speed-missing"),
    pytest.param('{"type": "play", "steps_per_s": -1}', "bad_value", id="play-negative-speed"),
    pytest.param('{"type": "speed", "time_ratio": 0}', "bad_value", id="time-ratio-zero"),
    pytest.param('{"type": "speed", "time_ratio": 101}', "bad_value", id="time-ratio-over-max"),
    pytest.param('{"type": "speed", "time_ratio": "1"}', "bad_value", id="time-ratio-string"),
    pytest.param('{"type": "speed", "time_ratio": true}', "bad_value", id="time-ratio-bool"),
    pytest.param('{"type": "play", "time_ratio": -2}', "bad_value", id="play-negative-time-ratio"),
    pytest.param('{"type": "breakpoints", "breakpoints": [{"kind": "nope"}]}', "bad_value", id="bp-kind"),
    pytest.param('{"type": "breakpoints", "breakpoints": [{"kind": "kv_usage", "value": 1.5}]}', "bad_value",
                 id="bp-kv-over-1"),
    pytest.param('{"type": "breakpoints", "breakpoints": [{"kind": "kv_usage"}]}', "bad_value", id="bp-kv-missing"),
    pytest.param('{"type": "breakpoints", "breakpoints": [{"kind": "step", "value": -1}]}', "bad_value",
                 id="bp-step-negative"),
    pytest.param('{"type": "breakpoints", "breakpoints": [{"kind": "request", "value": 3}]}', "bad_value",
                 id="bp-request-not-string"),
    pytest.param('{"type": "breakpoints", "breakpoints": {"kind": "finish"}}', "bad_value", id="bp-not-list"),
    pytest.param('{"type": "breakpoints", "breakpoints": [' + ",".join(['{"kind": "finish"}'] * 33) + "]}",
                 "bad_value", id="bp-too-many"),
    pytest.param('{"type": "breakpoints", "breakpoints": ["finish"]}', "bad_value", id="bp-not-object"),
]


@pytest.mark.parametrize("text, code", BAD_MESSAGES)
def test_bad_message_gets_an_error_and_changes_nothing(client, session, text, code):
    """A malformed or out-of-range message earns one error frame; the session is unchanged and
    the connection still answers a ping."""
    created, presenter = session
    presenter.step(3)

    presenter.ws.send_text(text)
    error = presenter.until_type("error")
    step, frames = presenter.ping()

    assert error["code"] == code and error["message"]
    assert step == 3
    assert not [f for f in frames if f["type"] in STATE_TYPES]
    info = client.get(f"/api/sessions/{created['session_id']}").json()
    assert info["step"] == 3 and info["playing"] is False
    assert presenter.fresh_snapshot()["status"]["breakpoints"] == []


def test_too_large_message_gets_an_error_and_the_connection_stays_open(session):
    """A message over max_message_bytes is refused unread, even when it would be a valid command."""
    _, presenter = session
    padding = "x" * (Settings().max_message_bytes + 1)

    presenter.send({"type": "step", "n": 1, "padding": padding})
    error = presenter.until_type("error")

    assert error["code"] == "too_large"
    assert presenter.ping()[0] == 0


def test_binary_frame_gets_an_error_and_the_connection_stays_open(session):
    """A binary frame is refused with bad_message; text frames still work afterwards."""
    _, presenter = session

    presenter.ws.send_bytes(b'{"type": "step", "n": 1}')
    error = presenter.until_type("error")

    assert error["code"] == "bad_message"
    assert presenter.ping()[0] == 0
    assert presenter.step(2)["step"] == 2


def test_many_bad_messages_in_a_row_leave_the_session_working(session):
    """A burst of bad messages is answered with errors, then normal commands still work."""
    _, presenter = session

    for i in range(40):
        presenter.ws.send_text("{" * (i % 5) + "garbage")
    step, frames = presenter.ping()

    assert [f["code"] for f in frames if f["type"] == "error"] == ["bad_json"] * 40
    assert step == 0
    assert presenter.step(1)["seq"] == 1


def test_a_client_following_deltas_holds_the_same_requests_as_a_snapshot(session):
    """Applying deltas the way the browser's store does (requests whole, progress as counters)
    ends with every request equal to the snapshot's, first_token_s included."""
    created, presenter = session
    requests = dict(presenter.fresh_snapshot()["requests"])
    for _ in range(30):
        delta = presenter.step(3)
        requests.update(delta["requests"])
        for rid, computed, output in delta["progress"]:
            if rid in requests:
                requests[rid].update(computed=computed, output=output)
    snapshot = presenter.fresh_snapshot()["requests"]
    assert any(view["first_token_s"] is not None for view in snapshot.values())
    assert {rid: requests.get(rid) for rid in snapshot} == snapshot
