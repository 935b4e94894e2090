"""`serve --openai` under a real uvicorn in a thread, for the tests that drive it with real clients."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
import uvicorn

from app.kv_events_publisher import ZmqEventPublisher
from app.main import create_app, uvicorn_options
from app.openai.engine import ServeLimits
from app.openai.replicas import bind_replica_sockets
from app.openai.serve import ServeOptions, attach_openai
from app.settings import Settings
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults
from tests.paths import REPO

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def default_scenario() -> Scenario:
    return Scenario.from_dict(with_vllm_defaults(PRESET_SCENARIOS["default"]), name="default")


class OpenAIServer:
    def __init__(self, scenario: Scenario | None = None, limits: ServeLimits | None = None, trace_path=None,
                 **settings):
        self.settings = Settings(**settings)
        self.app = attach_openai(create_app(self.settings),
                                 ServeOptions(scenario or default_scenario(), MODEL, trace_path, limits=limits))
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                                    **uvicorn_options(self.settings)))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-openai", daemon=True)

    def __enter__(self) -> "OpenAIServer":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    @property
    def served(self):
        return self.app.state.served

    @property
    def sim(self):
        return self.served.engine.sim

    def request_of(self, response_id: str):
        """The simulation's request behind a response id (`chatcmpl-req-00003` -> `req-00003`)."""
        return self.sim.request(response_id.split("-", 1)[1])

    def wait_idle(self, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.sim.has_work() or self.served.engine.taken:
            assert time.monotonic() < deadline, "the served engine did not finish its requests"
            time.sleep(0.02)


class ReplicaServers:
    """`serve --openai --replicas N` under a real uvicorn in a thread, each replica on a free port."""

    def __init__(self, replicas: int = 2, limits: ServeLimits | None = None, trace_path=None, kv_events=None):
        self.settings = Settings()
        self.sockets = bind_replica_sockets("127.0.0.1", 0, replicas)
        self.ports = [sock.getsockname()[1] for sock in self.sockets]
        # --kv-events-config: a publisher per replica, as the CLI opens them (rank i's endpoints offset by i).
        self.publishers = [ZmqEventPublisher(kv_events.for_rank(rank)) for rank in range(replicas)] if kv_events else []
        self.options = ServeOptions(default_scenario(), MODEL, trace_path, limits=limits, replicas=replicas,
                                    kv_event_publishers=tuple(self.publishers[1:]))
        self.app = attach_openai(create_app(self.settings, self.publishers[0] if self.publishers else None),
                                 self.options, self.ports)
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", **uvicorn_options(self.settings)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": self.sockets}, daemon=True)
        self.urls = [f"http://127.0.0.1:{port}" for port in self.ports]

    def __enter__(self) -> "ReplicaServers":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def sim(self, replica: int):
        return self.app.state.served_fleet.served[replica].engine.sim

    def client(self, replica: int) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.urls[replica]}/v1", api_key="unused", max_retries=0)


class ServeProcess:
    """`servescope serve` as a process of its own, on a free port, its output in `log_path`."""

    def __init__(self, log_path: Path, *args: str):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", str(self.port), *args],
                                        cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT, env=dict(os.environ))
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, self.read_log()
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "servescope serve did not start"
            time.sleep(0.1)

    def read_log(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)
        self.log.close()
