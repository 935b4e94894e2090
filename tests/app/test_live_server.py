"""A real uvicorn server on a loopback port, real websocket clients: many viewers at once, a
viewer that never reads, reconnecting, and a fuzzer. Every wait is bounded; the server always stops."""

import asyncio
import contextlib
import json
import random
import socket
import statistics
import string
import threading
import time

import httpx
import pytest
import uvicorn
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app import wire
from app.main import create_app, uvicorn_options
from app.settings import Settings
from tests.app.raw_websocket import masked_text_frame, open_stalled_viewer

SETTINGS = Settings(heartbeat_s=0.5)
STATE_TYPES = ("snapshot", "delta")
RECV_TIMEOUT_S = 3.0
# The default preset with a larger pool, so snapshots are big enough to fill socket buffers fast.
BIG_POOL = {"name": "big-pool", "engine": {"num_gpu_blocks": 4096, "max_num_seqs": 64, "max_num_batched_tokens": 512},
            "workload": {"num_requests": 120, "arrival_rate": 6.0, "lengths": "sharegpt", "shared_prefix_len": 96,
                         "num_shared_prefixes": 3, "seed": 1}}


class LiveServer:
    def __init__(self):
        self.app = create_app(SETTINGS)
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                                    **uvicorn_options(SETTINGS)))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=10)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "uvicorn did not stop"

    def create(self, scenario: dict | None = None) -> dict:
        body = {"scenario": scenario} if scenario else {"preset": "default"}
        response = self.http.post("/api/sessions", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    def ws_url(self, created: dict) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/{created['session_id']}"

    def info(self, created: dict) -> dict:
        return self.http.get(f"/api/sessions/{created['session_id']}").json()


@contextlib.asynccontextmanager
async def presenter_of(server: LiveServer, created: dict, **options):
    """A websocket that has proved it holds the control token (its first message)."""
    async with connect(server.ws_url(created), **options) as ws:
        await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
        yield ws


@pytest.fixture(scope="module")
def server():
    live = LiveServer()
    try:
        live.start()
        yield live
    finally:
        live.stop()


def run(coroutine, timeout_s: float = 20.0):
    """Run one test's client side, bounded as a whole, on a thread of its own (so an event loop
    another test left marked as running on the main thread cannot get in the way)."""
    outcome: dict = {}

    def client_side() -> None:
        try:
            outcome["value"] = asyncio.run(asyncio.wait_for(coroutine, timeout_s))
        except BaseException as error:  # re-raised on the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=client_side, name="client")
    thread.start()
    thread.join(timeout_s + 5)
    assert not thread.is_alive(), "the client side did not finish"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def frame_of(message: str | bytes) -> dict:
    """State frames come binary (app/wire.py), the others as JSON text."""
    return wire.decode(message) if isinstance(message, bytes) else json.loads(message)


async def receive(ws) -> dict:
    return frame_of(await asyncio.wait_for(ws.recv(), RECV_TIMEOUT_S))


async def receive_until(ws, predicate, max_frames: int = 500) -> list[dict]:
    frames = []
    for _ in range(max_frames):
        frames.append(await receive(ws))
        if predicate(frames[-1]):
            return frames
    pytest.fail(f"no matching frame in {max_frames} frames")


async def ping(ws) -> tuple[int, list[dict]]:
    """The session step a pong reports, and the frames that arrived before it."""
    await ws.send(json.dumps({"type": "ping"}))
    frames = await receive_until(ws, lambda f: f["type"] == "pong")
    return frames[-1]["step"], frames[:-1]


async def collect_states(url: str, duration_s: float) -> list[dict]:
    """Connect, then gather every snapshot and delta for `duration_s` (the connect snapshot first)."""
    states = []
    async with connect(url, max_size=None) as ws:
        deadline = time.monotonic() + duration_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                frame = frame_of(await asyncio.wait_for(ws.recv(), left))
            except TimeoutError:
                break
            if frame["type"] in STATE_TYPES:
                frame["received_at"] = time.monotonic()
                states.append(frame)
    return states


def assert_well_ordered(states: list[dict]) -> None:
    """A snapshot first; seq always increases; a delta always applies to its predecessor's seq."""
    assert states and states[0]["type"] == "snapshot"
    for previous, frame in zip(states, states[1:]):
        assert frame["seq"] > previous["seq"]
        assert frame["step"] >= previous["step"]
        if frame["type"] == "delta":
            assert frame["base_seq"] == previous["seq"]
            assert frame["from_step"] == previous["step"]


async def start_playing(presenter, steps_per_s: float) -> None:
    await presenter.send(json.dumps({"type": "play", "steps_per_s": steps_per_s}))
    await receive_until(presenter, lambda f: f["type"] == "status" and f["playing"])


async def pause(presenter) -> None:
    await presenter.send(json.dumps({"type": "pause"}))
    await receive_until(presenter, lambda f: f["type"] == "status" and not f["playing"])


async def drain(ws) -> None:
    """Keep reading a presenter connection so it never becomes a slow viewer itself."""
    try:
        while True:
            await ws.recv()
    except (ConnectionClosed, asyncio.CancelledError):
        pass


# -- many viewers --------------------------------------------------------------------------


@pytest.mark.slow
def test_twenty_viewers_all_receive_ordered_frames_while_the_session_steps(server):
    """20 viewers of one playing session each get a snapshot then ordered frames, and the session
    keeps stepping at its speed."""
    created = server.create()

    async def scenario():
        async with presenter_of(server, created) as presenter:
            await start_playing(presenter, 100)
            drainer = asyncio.create_task(drain(presenter))
            step_before = server.info(created)["step"]
            started = time.monotonic()
            all_states = await asyncio.gather(*(collect_states(server.ws_url(created), 2.0) for _ in range(20)))
            steps_per_s = (server.info(created)["step"] - step_before) / (time.monotonic() - started)
            drainer.cancel()
            await drainer
        return all_states, steps_per_s

    all_states, steps_per_s = run(scenario())

    for states in all_states:
        assert_well_ordered(states)
        assert len(states) >= 15
        assert states[-1]["step"] - states[0]["step"] >= 50
    assert steps_per_s >= 50


# -- a viewer that never reads -------------------------------------------------------------


async def stalled_viewer_of(server: LiveServer, created: dict, sock: socket.socket):
    """The server's side of the raw connection (it joins the session just after the handshake)."""
    live = server.app.state.manager.get(created["session_id"])
    port = sock.getsockname()[1]
    for _ in range(100):
        viewers = [v for v in list(live.viewers) if v.websocket.client.port == port]
        if viewers:
            return viewers[0]
        await asyncio.sleep(0.02)
    pytest.fail("the raw viewer never joined the session")


async def until_stalled(viewer) -> None:
    """Wait until the server has had frames for the viewer that it could not send, for 0.3 s."""
    stalled_polls = 0
    for _ in range(100):
        stalled_polls = stalled_polls + 1 if viewer.wakeup.is_set() else 0
        if stalled_polls == 4:
            return
        await asyncio.sleep(0.1)
    pytest.fail("the raw viewer never stalled")


def window_rates(all_states: list[list[dict]]) -> tuple[float, float]:
    """Median state frames per second and steps per second seen by a group of viewers."""
    frames, steps = [], []
    for states in all_states:
        states = states[1:]  # the connect snapshot is not part of the stream rate
        span_s = states[-1]["received_at"] - states[0]["received_at"]
        frames.append((len(states) - 1) / span_s)
        steps.append((states[-1]["step"] - states[0]["step"]) / span_s)
    return statistics.median(frames), statistics.median(steps)


@pytest.mark.slow
def test_a_viewer_that_never_reads_does_not_slow_the_others(server):
    """With a stalled viewer asking for snapshot after snapshot, the other viewers keep their frame
    and step rates, and the session stays healthy."""
    created = server.create(BIG_POOL)
    stalled = None

    async def scenario():
        nonlocal stalled
        async with presenter_of(server, created) as presenter:
            await start_playing(presenter, 150)
            drainer = asyncio.create_task(drain(presenter))
            baseline = await asyncio.gather(*(collect_states(server.ws_url(created), 1.5) for _ in range(3)))

            stalled = open_stalled_viewer(server.port, created["session_id"])
            request = masked_text_frame(json.dumps({"type": "snapshot"}))

            async def demand_snapshots():
                while True:
                    stalled.sendall(request)
                    await asyncio.sleep(0.01)

            demander = asyncio.create_task(demand_snapshots())
            viewer = await stalled_viewer_of(server, created, stalled)
            await until_stalled(viewer)
            with_stall = await asyncio.gather(*(collect_states(server.ws_url(created), 1.5) for _ in range(3)))
            undelivered = viewer.wakeup.is_set() and (viewer.needs_snapshot or viewer.pending_delta or viewer.events)
            demander.cancel()
            drainer.cancel()
            await asyncio.gather(demander, drainer, return_exceptions=True)
            step_now, _ = await ping(presenter)
        return baseline, with_stall, undelivered, step_now

    try:
        baseline, with_stall, undelivered, step_now = run(scenario())
        info = server.info(created)
    finally:
        if stalled is not None:
            stalled.close()

    frames_before, steps_before = window_rates(baseline)
    frames_after, steps_after = window_rates(with_stall)
    assert undelivered, "the raw viewer really stalled: the server holds frames it cannot send"
    for states in with_stall:
        assert_well_ordered(states)
    assert frames_after >= 0.6 * frames_before
    assert steps_after >= 0.6 * steps_before
    assert info["playing"] is True and info["step"] >= step_now > 0


# -- reconnecting --------------------------------------------------------------------------


def test_a_viewer_that_reconnects_gets_a_snapshot_at_the_current_step_and_continues(server):
    """After a disconnect the session plays on; reconnecting starts with a snapshot of the current
    step, and deltas follow it in sequence."""
    created = server.create()

    async def viewer_count(expected: int) -> None:
        for _ in range(100):
            if server.info(created)["viewers"] == expected:
                return
            await asyncio.sleep(0.02)
        pytest.fail(f"viewers never became {expected}")

    async def scenario():
        async with presenter_of(server, created) as presenter:
            await start_playing(presenter, 100)
            async with connect(server.ws_url(created)) as viewer:
                first = await receive_until(viewer, lambda f: f["type"] == "delta")
            await viewer_count(1)
            await asyncio.sleep(0.3)
            await pause(presenter)
            paused_at, _ = await ping(presenter)

            async with connect(server.ws_url(created)) as viewer:
                snapshot = (await receive_until(viewer, lambda f: f["type"] in STATE_TYPES))[-1]
                await viewer_count(2)
                await start_playing(presenter, 100)
                delta = (await receive_until(viewer, lambda f: f["type"] in STATE_TYPES))[-1]
                await pause(presenter)
        return first[-1], paused_at, snapshot, delta

    left_at, paused_at, snapshot, delta = run(scenario())

    assert paused_at > left_at["step"]
    assert snapshot["type"] == "snapshot" and snapshot["step"] == paused_at
    assert snapshot["seq"] > left_at["seq"]
    assert delta["type"] == "delta" and delta["base_seq"] == snapshot["seq"] and delta["from_step"] == paused_at


# -- fuzzing -------------------------------------------------------------------------------

VALID_TYPES = {"play", "pause", "step", "step_back", "seek", "reset", "run_to_breakpoint", "speed", "breakpoints",
               "snapshot", "ping"}
BAD_VALUES = [0, -1, -10**12, 10**12, 1.5, "1", "", True, False, None, [], {}, [1], float("nan"), float("inf")]


def random_json(rng: random.Random, depth: int = 0):
    kinds = ["int", "float", "str", "bool", "null"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-10**15, 10**15)
    if kind == "float":
        return rng.uniform(-1e9, 1e9)
    if kind == "str":
        return "".join(rng.choice(string.printable + "é☃𝄞") for _ in range(rng.randint(0, 20)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["type", "n", "step", "steps_per_s", "breakpoints", "kind", "x"]) if rng.random() < 0.5
            else "k" + str(rng.random()): random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def fuzz_message(rng: random.Random) -> str | bytes:
    """A message the server must refuse: text or binary, never a valid command."""
    kind = rng.choice(["bytes-as-text", "json", "typed-json", "wrong-values", "huge", "binary"])
    if kind == "bytes-as-text":
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))).decode("latin-1")
    if kind == "json":
        value = random_json(rng)
        if isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] in VALID_TYPES:
            value["type"] = "x-" + value["type"]
        return json.dumps(value)
    if kind == "typed-json":
        return json.dumps({"type": "x-" + "".join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 8))),
                           "n": random_json(rng)})
    if kind == "wrong-values":
        command, key = rng.choice([("step", "n"), ("step_back", "n"), ("seek", "step"), ("speed", "steps_per_s"),
                                   ("play", "steps_per_s"), ("speed", "time_ratio"), ("play", "time_ratio"),
                                   ("breakpoints", "breakpoints")])
        if command == "breakpoints":
            value = rng.choice([None, 3, "finish", {"kind": "finish"}, [{"kind": "nope"}], [{"kind": "kv_usage"}],
                                [{"kind": "step", "value": -1}], [{"kind": "finish"}] * 33, [[]]])
        elif command == "seek":
            value = rng.choice([v for v in BAD_VALUES if v is False or v != 0] + [10**8])
        elif command in ("speed", "play"):
            value = rng.choice([v for v in BAD_VALUES if v != 1.5])
        else:
            value = rng.choice(BAD_VALUES)
        return json.dumps({"type": command, key: value})
    if kind == "huge":
        filler = "".join(rng.choices(string.ascii_letters, k=64))
        return json.dumps({"type": "step", "n": 1, "pad": filler * (SETTINGS.max_message_bytes // 64 + 1)})
    return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))


def test_fuzzed_messages_get_error_frames_and_the_server_stays_up(server):
    """300 random and malformed messages each earn an error frame; afterwards the session is
    unchanged, a ping still gets a pong, a new viewer still connects and /healthz is ok."""
    created = server.create()
    rng = random.Random(20240607)
    messages = [fuzz_message(rng) for _ in range(300)]

    async def scenario():
        codes = []
        async with presenter_of(server, created, max_size=None) as ws:
            await receive_until(ws, lambda f: f["type"] == "snapshot")
            for message in messages:
                await ws.send(message)
                step, frames = await ping(ws)
                errors = [f for f in frames if f["type"] == "error"]
                assert len(errors) == 1, (message[:200], frames)
                assert step == 0, message[:200]
                codes.append(errors[0]["code"])
        async with connect(server.ws_url(created)) as fresh:
            snapshot = (await receive_until(fresh, lambda f: f["type"] in STATE_TYPES))[-1]
            pong_step, _ = await ping(fresh)
        return codes, snapshot, pong_step

    codes, snapshot, pong_step = run(scenario())

    assert set(codes) <= {"bad_json", "bad_message", "unknown_type", "bad_value", "too_large"}
    assert {"bad_json", "bad_message", "unknown_type", "bad_value", "too_large"} <= set(codes)
    assert snapshot["type"] == "snapshot" and snapshot["step"] == pong_step == 0
    assert snapshot["status"]["playing"] is False and snapshot["status"]["breakpoints"] == []
    assert server.http.get("/healthz").json()["status"] == "ok"


def test_deeply_nested_json_gets_an_error_frame_and_the_connection_stays_open(server):
    """A 20 kB message of nested brackets (under the size limit) is answered with an error frame."""
    created = server.create()

    async def scenario():
        async with presenter_of(server, created) as ws:
            await receive_until(ws, lambda f: f["type"] == "snapshot")
            await ws.send("[" * 10_000 + "]" * 10_000)
            error = await receive_until(ws, lambda f: f["type"] == "error")
            step, _ = await ping(ws)
        return error[-1], step

    error, step = run(scenario(), timeout_s=10)

    assert error["code"] in ("bad_json", "bad_message", "too_large")
    assert step == 0


def test_server_survives_deeply_nested_json(server):
    """Whatever happens to that one connection, the server and the session carry on."""
    created = server.create()

    async def scenario():
        async with presenter_of(server, created) as ws:
            await receive_until(ws, lambda f: f["type"] == "snapshot")
            await ws.send("[" * 10_000 + "]" * 10_000)
            try:
                await ping(ws)
            except ConnectionClosed:
                pass
        async with connect(server.ws_url(created)) as fresh:
            return await ping(fresh)

    step, _ = run(scenario(), timeout_s=10)

    assert step == 0
    assert server.http.get("/healthz").json()["status"] == "ok"


def test_a_long_step_command_does_not_stall_the_other_viewers(server):
    """While the presenter's `step 4000` runs, a viewer's pings are answered, each at a step part
    of the way there: the long command takes turns with the event loop."""
    created = server.create(BIG_POOL)

    async def scenario():
        async with presenter_of(server, created) as presenter, \
                connect(server.ws_url(created)) as viewer:
            await receive_until(presenter, lambda f: f["type"] == "snapshot")
            await receive_until(viewer, lambda f: f["type"] == "snapshot")
            await presenter.send(json.dumps({"type": "step", "n": 4000}))
            answers = []
            for _ in range(3):
                started = time.monotonic()
                step, _ = await ping(viewer)
                answers.append((step, time.monotonic() - started))
            final = await receive_until(presenter, lambda f: f["type"] == "status" and f["step"] == 4000, 5000)
        return answers, final[-1]["step"]

    answers, final_step = run(scenario(), timeout_s=60)

    assert final_step == 4000
    assert any(0 < step < 4000 for step, _ in answers), answers
    assert max(wait for _, wait in answers) < 1.0, answers
