"""`servescope serve` as a real process: what its access log holds, and how fast it stops."""

import asyncio
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from app import wire
from app.export_worker import write_export
from app.routes.api import scenario_from
from app.schemas import SessionCreate
from tests.paths import REPO

# Each test starts `servescope serve` as a process of its own and waits on it: seconds apiece.
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServeProcess:
    def __init__(self, log_path: Path, *args: str, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port), *args],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, self.read_log()
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "servescope serve did not start"
            time.sleep(0.1)
        self.http = httpx.Client(base_url=self.url, timeout=10)

    def read_log(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(*args: str, env: dict[str, str] | None = None) -> ServeProcess:
        started.append(ServeProcess(tmp_path / f"serve-{len(started)}.log", *args, env=env))
        return started[-1]

    yield start
    for process in started:
        process.stop()


def frame_of(message: str | bytes) -> dict:
    """State frames come binary (app/wire.py, protocol v2), the others as JSON text."""
    return wire.decode(message) if isinstance(message, bytes) else json.loads(message)


async def presenter_commands(ws_url: str, token: str, commands: list[dict], wait_for: str = "pong") -> None:
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "auth", "token": token}))
        for command in commands:
            await ws.send(json.dumps(command))
        await ws.send(json.dumps({"type": "ping"}))
        while frame_of(await asyncio.wait_for(ws.recv(), 10))["type"] != wait_for:
            pass


def test_the_control_token_never_reaches_the_access_log(serve):
    """What a presenter's browser requests, and what an API client does with a session, leave
    the token out of every logged line."""
    server = serve("--log-level", "info")
    server.http.get("/", follow_redirects=True)
    created = server.http.post("/api/sessions", json={"preset": "default"}).json()
    token, sid = created["control_token"], created["session_id"]
    asyncio.run(presenter_commands(created["websocket_url"], token, [{"type": "step", "n": 3}]))
    for path in (f"/s/{sid}", f"/s/{sid}/view", f"/api/sessions/{sid}/export/metrics.json"):
        server.http.get(path, headers={"x-control-token": token})
    assert server.http.get(f"/api/sessions/{sid}").json()["step"] == 3
    assert server.http.delete(f"/api/sessions/{sid}", headers={"x-control-token": token}).status_code == 204
    time.sleep(0.3)
    log = server.read_log()
    assert f"DELETE /api/sessions/{sid}" in log and f"/ws/{sid}" in log  # the access log is on
    assert token not in log and "token=" not in log


# /proc counts CPU time in clock ticks: a difference of two readings is off by up to one.
CPU_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(the process's own CPU seconds, its reaped children's), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime) * CPU_TICK_S, (cutime + cstime) * CPU_TICK_S


def replay_cpu_s(num_steps: int) -> float:
    """CPU seconds the replay behind a trace export of the default preset's first `num_steps` steps
    costs here, in this process: the yardstick for the server's and the worker's shares, so the
    test asks the same of a fast machine and a slow one."""
    scenario = scenario_from(SessionCreate(preset="default"))
    started = time.process_time()
    write_export("trace", scenario, num_steps, io.StringIO())
    return time.process_time() - started


def test_a_trace_export_is_written_by_a_worker_process_not_the_server(serve):
    """The replay behind trace.json costs the server process (its event loop, its viewers) next to
    nothing: a worker process does it, and its output streams through."""
    server = serve()
    created = server.http.post("/api/sessions", json={"preset": "default"}).json()
    sid, token = created["session_id"], created["control_token"]
    asyncio.run(presenter_commands(created["websocket_url"], token, [{"type": "seek", "step": 3000}]))
    assert server.http.get(f"/api/sessions/{sid}").json()["step"] == 3000
    own_before, children_before = cpu_seconds(server.process.pid)
    response = server.http.get(f"/api/sessions/{sid}/export/trace.json", headers={"x-control-token": token})
    own_after, children_after = cpu_seconds(server.process.pid)
    slices = [e for e in json.loads(response.text)["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == 3000
    # The worker (reaped before the response ends, so counted in the server's children) spent at
    # least about what the replay costs; the server, which only passed the bytes on, a small part of it.
    worker_s, server_s, replay_s = children_after - children_before, own_after - own_before, replay_cpu_s(3000)
    assert worker_s > 0.8 * replay_s and server_s < replay_s / 3 + CPU_TICK_S, (worker_s, server_s, replay_s)


def test_at_most_two_exports_are_written_at_once(serve):
    server = serve()
    created = server.http.post("/api/sessions", json={"preset": "default"}).json()
    sid, token = created["session_id"], created["control_token"]
    asyncio.run(presenter_commands(created["websocket_url"], token, [{"type": "seek", "step": 2000}]))
    url, headers = f"/api/sessions/{sid}/export/trace.json", {"x-control-token": token}
    with server.http.stream("GET", url, headers=headers) as first, server.http.stream("GET", url, headers=headers) as second:
        assert first.status_code == second.status_code == 200
        third = server.http.get(url, headers=headers)
        assert third.status_code == 429 and "try again" in third.json()["detail"]
    # Abandoned downloads give their places back (their workers are killed) within moments.
    deadline = time.monotonic() + 3
    while (status := server.http.get(url, headers=headers).status_code) == 429 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status == 200


# -- long commands stop when nobody wants them any more --------------------------------------
# 20,000 requests: a run of tens of thousands of steps, far more than these tests wait for.
LONG_RUN = {"scenario": {"name": "long", "workload": {"num_requests": 20000, "arrival_rate": 50.0}}}
SEEK_FAR = {"type": "seek", "step": 10_000_000}


def cpu_busy_s(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)[0]
    time.sleep(seconds)
    return cpu_seconds(pid)[0] - before


def session_step(server: ServeProcess, sid: str, after_s: float = 0.0) -> int:
    time.sleep(after_s)
    return server.http.get(f"/api/sessions/{sid}").json()["step"]


async def start_long_seek(ws_url: str, token: str):
    ws = await connect(ws_url)
    await ws.send(json.dumps({"type": "auth", "token": token}))
    await ws.send(json.dumps(SEEK_FAR))
    return ws


async def delete_within_a_second(server, sid: str, token: str) -> None:
    started = time.monotonic()
    response = await asyncio.to_thread(server.http.delete, f"/api/sessions/{sid}", headers={"x-control-token": token})
    assert response.status_code == 204
    assert time.monotonic() - started < 1.0


def assert_nothing_left(server) -> None:
    """No session left, and nothing left running in the server process."""
    time.sleep(0.2)
    assert cpu_busy_s(server.process.pid, 1.0) < 0.15
    assert server.http.get("/healthz").json()["sessions"] == 0


def test_a_long_seek_is_cancelled_by_delete_within_a_second(serve):
    server = serve()
    created = server.http.post("/api/sessions", json=LONG_RUN).json()
    sid, token = created["session_id"], created["control_token"]

    async def scenario():
        ws = await start_long_seek(created["websocket_url"], token)
        await asyncio.sleep(1.0)
        assert 0 < session_step(server, sid) < session_step(server, sid, after_s=0.3)  # the seek is running
        await delete_within_a_second(server, sid, token)
        await ws.close()

    asyncio.run(scenario())
    assert_nothing_left(server)


def test_a_long_seek_stops_when_its_presenter_disconnects(serve):
    server = serve()
    created = server.http.post("/api/sessions", json=LONG_RUN).json()

    async def scenario():
        ws = await start_long_seek(created["websocket_url"], created["control_token"])
        await asyncio.sleep(1.5)
        await ws.close()

    asyncio.run(scenario())
    time.sleep(1.0)
    assert cpu_busy_s(server.process.pid, 1.0) < 0.15
    step = server.http.get(f"/api/sessions/{created['session_id']}").json()["step"]
    time.sleep(0.5)
    assert 0 < step == server.http.get(f"/api/sessions/{created['session_id']}").json()["step"]


def test_sigterm_stops_the_server_within_a_second_even_mid_command(serve):
    server = serve()
    created = server.http.post("/api/sessions", json=LONG_RUN).json()

    async def scenario():
        ws = await start_long_seek(created["websocket_url"], created["control_token"])
        await asyncio.sleep(1.5)
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(server.process.wait, 5)
        return time.monotonic() - started, ws

    elapsed, _ = asyncio.run(scenario())
    assert elapsed < 1.0, f"took {elapsed:.2f} s"


# -- a step back late in a long session replays from a far checkpoint, in slices -------------
# Two checkpoints, thinned as the run grows: once a session reaches 64 * 2**k steps they are step 0
# and that step, so a step back from there restores step 0 and replays all but one of the steps.
FEW_CHECKPOINTS = {"SERVESCOPE_CHECKPOINT_INTERVAL": "64", "SERVESCOPE_MAX_CHECKPOINTS": "2"}
NEAREST_FAR, FARTHEST = 64 * 2**8, 64 * 2**13
# The step back must outlast what the tests watch during it, on any machine: the session goes on
# doubling its length until going there took this long, and the step back replays the same steps.
REPLAY_AT_LEAST_S = 3.0
# Arrivals the engine keeps up with: cheap steps, and many of them (over 600,000) before the run ends.
STEADY_RUN = {"scenario": {"name": "steady", "workload": {"num_requests": 20000, "arrival_rate": 5.0}}}


def session_far_along(server: ServeProcess) -> tuple[dict, int]:
    """A session and the step it was taken to: a power of two times 64, far enough that replaying
    from step 0 to there takes at least REPLAY_AT_LEAST_S on this machine."""
    created = server.http.post("/api/sessions", json=STEADY_RUN).json()
    started, far = time.monotonic(), NEAREST_FAR
    while True:
        asyncio.run(presenter_commands(created["websocket_url"], created["control_token"], [{"type": "seek", "step": far}]))
        assert server.http.get(f"/api/sessions/{created['session_id']}").json()["step"] == far
        if time.monotonic() - started >= REPLAY_AT_LEAST_S or far == FARTHEST:
            return created, far
        far *= 2


async def start_step_back(created: dict):
    ws = await connect(created["websocket_url"])
    await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
    await ws.send(json.dumps({"type": "step_back", "n": 1}))
    return ws


async def replay_under_way(server: ServeProcess, sid: str, far: int) -> None:
    """Until the step back from `far` has restored step 0 and replays (its command is read on
    another connection than the one asking)."""
    deadline = time.monotonic() + 10
    while session_step(server, sid) >= far:
        assert time.monotonic() < deadline, "the step back did not start"
        await asyncio.sleep(0.02)


def test_a_long_step_back_is_cancelled_by_delete_within_a_second(serve):
    server = serve(env=FEW_CHECKPOINTS)
    created, far = session_far_along(server)
    sid, token = created["session_id"], created["control_token"]

    async def scenario():
        ws = await start_step_back(created)
        await replay_under_way(server, sid, far)
        # Replaying from step 0, and the server answers meanwhile.
        assert 0 < session_step(server, sid) < session_step(server, sid, after_s=0.3) < far - 1
        await delete_within_a_second(server, sid, token)
        await ws.close()

    asyncio.run(scenario())
    assert_nothing_left(server)


def test_a_long_step_back_leaves_another_sessions_viewers_their_frames_and_pongs(serve):
    server = serve(env=FEW_CHECKPOINTS)
    far_session, far = session_far_along(server)
    sid = far_session["session_id"]
    other = server.http.post("/api/sessions", json=STEADY_RUN).json()
    longest_s = 5.0

    async def scenario():
        async with connect(other["websocket_url"], max_size=None) as viewer:
            await viewer.send(json.dumps({"type": "auth", "token": other["control_token"]}))
            await viewer.send(json.dumps({"type": "play", "steps_per_s": 20}))
            stepping_back = await start_step_back(far_session)
            await replay_under_way(server, sid, far)
            # The figures are taken while the step back replays, and only then (at most longest_s).
            started, pongs_s, states = time.monotonic(), [], 0
            while session_step(server, sid) < far - 1 and time.monotonic() - started < longest_s:
                sent = time.monotonic()
                await viewer.send(json.dumps({"type": "ping"}))
                while (frame := frame_of(await asyncio.wait_for(viewer.recv(), 10)))["type"] != "pong":
                    states += frame["type"] in ("snapshot", "delta")
                pongs_s.append(time.monotonic() - sent)
                await asyncio.sleep(0.1)
            window_s = time.monotonic() - started
            await stepping_back.close()
            return pongs_s, states, window_s

    pongs_s, states, window_s = asyncio.run(scenario())
    assert len(pongs_s) >= 5, (pongs_s, window_s)  # the step back lasted long enough to watch
    assert max(pongs_s) < 0.5, pongs_s
    assert states / window_s > 5, (states, window_s)
