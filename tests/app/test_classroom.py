"""A class on one server (`serve --public`): quotas per client, viewers that stop reading are
dropped and keep nothing alive, and a crowd joining costs each viewer one status frame."""

import asyncio
import json
import time

import pytest
import uvicorn
from fastapi.testclient import TestClient
from websockets.asyncio.client import connect

from app import wire
from app.cli import main as cli_main
from app.main import create_app
from app.settings import PUBLIC_DEFAULTS, Settings
from tests.app.clients import Server
from tests.app.raw_websocket import open_stalled_viewer


def frame_of(message: str | bytes) -> dict:
    """State frames come binary (app/wire.py, protocol v2), the others as JSON text."""
    return wire.decode(message) if isinstance(message, bytes) else json.loads(message)


@pytest.mark.slow
def test_a_crowd_joining_costs_each_viewer_a_few_status_frames_not_one_per_join():
    with Server(Settings()) as server:
        created = server.create()

        async def scenario():
            async with connect(server.ws_url(created)) as first:
                others = await asyncio.gather(*(connect(server.ws_url(created)) for _ in range(60)))
                status_frames, deadline = [], time.monotonic() + 1.5
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        frame = frame_of(await asyncio.wait_for(first.recv(), left))
                    except TimeoutError:
                        break
                    if frame["type"] == "status":
                        status_frames.append(frame)
                for ws in others:
                    await ws.close()
                return status_frames

        status_frames = asyncio.run(scenario())
    # At most one per 0.25 s while they arrive (a burst, here), where there used to be one per join.
    assert 1 <= len(status_frames) <= 10
    assert status_frames[-1]["viewers"] == 61


@pytest.mark.slow
def test_a_viewer_that_stops_reading_is_dropped_after_the_stall_timeout():
    """The session plays; one viewer (with a tiny receive buffer) never reads its frames, so its
    sends stall and it is dropped, while the presenter who reads keeps the session."""
    with Server(Settings(viewer_stall_s=1.0, heartbeat_s=0.2)) as server:
        created = server.create()
        live = server.app.state.manager.get(created["session_id"])
        stalled = open_stalled_viewer(server.port, created["session_id"])
        deadline = time.monotonic() + 5
        while not live.viewers:
            assert time.monotonic() < deadline, "the raw viewer never joined"
            time.sleep(0.02)

        async def play_until_the_stalled_viewer_is_gone():
            async with connect(server.ws_url(created)) as ws:
                await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
                await ws.send(json.dumps({"type": "play", "steps_per_s": 500}))
                deadline = time.monotonic() + 15
                while len(live.viewers) < 2:  # the presenter joins beside the stalled viewer
                    assert time.monotonic() < deadline, "the presenter never joined"
                    await asyncio.wait_for(ws.recv(), 5)
                while len(live.viewers) > 1:
                    assert time.monotonic() < deadline, "the stalled viewer was never dropped"
                    await asyncio.wait_for(ws.recv(), 5)
                return len(live.viewers)

        try:
            assert asyncio.run(play_until_the_stalled_viewer_is_gone()) == 1  # the presenter's
        finally:
            stalled.close()


@pytest.mark.slow
def test_a_viewer_that_never_reads_or_writes_does_not_keep_its_session_alive():
    with Server(Settings(idle_timeout_s=1.0, heartbeat_s=0.2)) as server:
        created = server.create()
        silent = open_stalled_viewer(server.port, created["session_id"])
        try:
            deadline = time.monotonic() + 10
            while server.app.state.manager.get(created["session_id"]) is not None:
                assert time.monotonic() < deadline, "a silent viewer kept its session alive"
                time.sleep(0.1)
        finally:
            silent.close()


def test_each_client_holds_at_most_its_quota_of_sessions():
    settings = Settings(allowed_hosts=("testserver",), max_sessions_per_client=2)
    with TestClient(create_app(settings)) as client:
        first = client.post("/api/sessions", json={"preset": "default"}).json()
        assert client.post("/api/sessions", json={"preset": "default"}).status_code == 201
        refused = client.post("/api/sessions", json={"preset": "default"})
        assert refused.status_code == 422 and "2 sessions" in refused.json()["detail"][0]["msg"]
        client.delete(f"/api/sessions/{first['session_id']}", headers={"x-control-token": first["control_token"]})
        assert client.post("/api/sessions", json={"preset": "default"}).status_code == 201


def listed_ids(client: TestClient) -> set[str]:
    return {session["session_id"] for session in client.get("/api/sessions").json()}


def students_sessions(settings: Settings) -> tuple[set[str], set[str], set[str]]:
    """Two students (two client addresses) create a session each: what each one's listing shows,
    and the two sessions' ids."""
    app = create_app(settings)
    with TestClient(app, client=("192.0.2.1", 50000)) as first:
        second = TestClient(app, client=("192.0.2.2", 50000))  # the same server (its lifespan is first's)
        ids = {first.post("/api/sessions", json={"preset": "default"}).json()["session_id"],
               second.post("/api/sessions", json={"preset": "default"}).json()["session_id"]}
        return listed_ids(first), listed_ids(second), ids


def test_a_public_server_lists_each_client_only_its_own_sessions():
    first_sees, second_sees, both = students_sessions(Settings(allowed_hosts=("testserver",), public=True))
    assert len(first_sees) == len(second_sees) == 1
    assert first_sees | second_sees == both


def test_a_loopback_server_lists_every_session():
    first_sees, second_sees, both = students_sessions(Settings(allowed_hosts=("testserver",)))
    assert first_sees == second_sees == both


def test_a_public_servers_metrics_show_a_client_its_own_session_only():
    """/metrics without ?session= is the caller's most recently active session, never another
    student's; on a loopback server it is the server's most recently active one."""
    for public in (True, False):
        app = create_app(Settings(allowed_hosts=("testserver",), public=public))
        with TestClient(app, client=("192.0.2.1", 50000)) as first:
            second = TestClient(app, client=("192.0.2.2", 50000))
            first.post("/api/sessions", json={"preset": "default"})
            first_metrics = first.get("/metrics").text
            second_metrics = second.get("/metrics").text
        assert "vllm:num_requests_waiting" in first_metrics
        assert ("vllm:num_requests_waiting" in second_metrics) is not public


def test_a_fleet_replicas_session_is_its_creators_own_and_counts_toward_its_quota():
    replica = {"preset": "default", "cluster": {"replicas": 2}, "replica": "replica-0"}
    settings = Settings(allowed_hosts=("testserver",), public=True, max_sessions_per_client=1)
    with TestClient(create_app(settings), client=("192.0.2.1", 50000)) as student:
        created = student.post("/api/fleet/replica", json=replica)
        assert created.status_code == 201
        assert listed_ids(student) == {created.json()["session_id"]}
        refused = student.post("/api/sessions", json={"preset": "default"})
        assert refused.status_code == 422 and "each client may hold 1 session at once" in refused.json()["detail"][0]["msg"]


def test_serve_public_binds_every_interface_with_classroom_limits(monkeypatch):
    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: started.update(app=app, **options))
    assert cli_main(["serve", "--public", "--port", "8123"]) == 0
    settings = started["app"].state.settings
    assert started["host"] == "0.0.0.0" and settings.public
    assert {name: getattr(settings, name) for name in PUBLIC_DEFAULTS} == PUBLIC_DEFAULTS
    assert Settings.from_env().max_sessions_per_client == 0


@pytest.mark.parametrize("args", [[], ["--host", "127.0.0.1"]])
def test_serve_without_public_stays_on_loopback(monkeypatch, args):
    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: started.update(app=app, **options))
    cli_main(["serve", *args])
    assert started["host"] == "127.0.0.1" and not started["app"].state.settings.public


@pytest.mark.slow
def test_play_at_twenty_steps_per_second_sends_twenty_frames_per_second():
    """One step per frame, every frame: timer jitter no longer leaves ticks without a step (it
    sent about 13 frames/s, some with two steps) and late ticks are made up."""
    with Server(Settings()) as server:
        created = server.create()

        async def scenario():
            async with connect(server.ws_url(created)) as ws:
                await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
                await ws.send(json.dumps({"type": "play", "steps_per_s": 20}))
                deltas, started = [], None
                while True:
                    frame = frame_of(await asyncio.wait_for(ws.recv(), 5))
                    if frame["type"] != "delta":
                        continue
                    started = started or time.monotonic()
                    if time.monotonic() - started > 3.0:
                        return deltas, time.monotonic() - started
                    deltas.append(frame)

        deltas, span_s = asyncio.run(scenario())
    steps = sum(len(delta["points"]) for delta in deltas)  # one chart point per step
    assert len(deltas) / span_s >= 18.5
    assert steps <= len(deltas) + 3  # one step per frame, bar a catch-up or two
