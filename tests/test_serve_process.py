"""`servescope serve` as a real process: what its access log holds, and how fast it stops."""

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServeProcess:
    def __init__(self, log_path: Path, *args: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port), *args],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
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

    def start(*args: str) -> ServeProcess:
        started.append(ServeProcess(tmp_path / f"serve-{len(started)}.log", *args))
        return started[-1]

    yield start
    for process in started:
        process.stop()


async def presenter_commands(ws_url: str, token: str, commands: list[dict], wait_for: str = "pong") -> None:
    async with connect(ws_url) as ws:
        await ws.send(json.dumps({"type": "auth", "token": token}))
        for command in commands:
            await ws.send(json.dumps(command))
        await ws.send(json.dumps({"type": "ping"}))
        while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != wait_for:
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
