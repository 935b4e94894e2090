"""A session driven the way a page or an API client drives it, through FastAPI's TestClient:
shared by the app tests (test_api.py, test_why_api.py)."""

import json
import threading
import time

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from app import wire
from app.main import create_app, uvicorn_options
from app.settings import Settings
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, with_vllm_defaults


def app_client(**settings) -> TestClient:
    # "testserver" is the host name TestClient sends.
    return TestClient(create_app(Settings(heartbeat_s=0.2, allowed_hosts=("testserver",), **settings)))


def create(client, **body) -> dict:
    response = client.post("/api/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def step_session(client, created: dict, num_steps: int) -> list[dict]:
    """Step a session over its websocket, at most 200 steps per command so each comes back as a
    delta; returns the step records the deltas carried (each its last step's)."""
    records: list[dict] = []
    with client.websocket_connect(f"/ws/{created['session_id']}") as ws:
        ws.send_json({"type": "auth", "token": created["control_token"]})
        remaining = num_steps
        while remaining:
            n = min(remaining, 200)
            ws.send_json({"type": "step", "n": n})
            for _ in range(50):
                message = ws.receive()
                if message.get("bytes") is not None and (frame := wire.decode(message["bytes"]))["type"] == "delta":
                    records.append(frame["last_record"])
                    break
            else:
                pytest.fail("no delta after a step command")
            remaining -= n
    return records


def default_scenario() -> dict:
    """The default preset as a session runs it: with vLLM's defaults for what it leaves open."""
    data = json.loads(json.dumps(PRESET_SCENARIOS["default"]))
    data["name"] = "default"
    return with_vllm_defaults(data)


class Server:
    """The app under a real uvicorn in a thread, so its state can be looked at while it serves."""

    def __init__(self, settings: Settings):
        self.app = create_app(settings)
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                                    **uvicorn_options(settings)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def create(self, body: dict | None = None) -> dict:
        response = httpx.post(f"http://127.0.0.1:{self.port}/api/sessions", json=body or {"preset": "default"})
        assert response.status_code == 201, response.text
        return response.json()

    def ws_url(self, created: dict) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/{created['session_id']}"
