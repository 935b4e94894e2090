"""vLLM's own Grafana dashboard over a real Prometheus scraping a real server: every one of its 12
panels has data while a session plays.

The dashboard is vLLM's examples/observability/prometheus_grafana/grafana.json, unchanged
(tests/vendor/vllm-grafana/). Prometheus is Debian's `prometheus` (CI installs it, as it does
chromium), started here with a half-second scrape interval; each panel's PromQL is asked of its
HTTP API with the dashboard's variables put in as Grafana would: `$model_name` from
`label_values(model_name)`, `$__rate_interval` as four scrape intervals.
"""

import json
import math
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from app.settings import Settings
from tests.app.clients import Server

pytestmark = pytest.mark.slow

PROMETHEUS = Path("/usr/bin/prometheus")
DASHBOARD = Path(__file__).parents[1] / "vendor" / "vllm-grafana" / "grafana.json"
SCRAPE_INTERVAL_S = 0.5
RATE_INTERVAL = f"{int(4 * SCRAPE_INTERVAL_S * 1000)}ms"  # Grafana's $__rate_interval: at least 4 scrapes
DEADLINE_S = 90
# Steady traffic that keeps every panel moving at real time: arrivals, queueing, finishes.
SCENARIO = {"name": "grafana", "engine": {"num_gpu_blocks": 1024, "max_num_seqs": 16, "max_num_batched_tokens": 512},
            "workload": {"num_requests": 5000, "arrival": "poisson", "arrival_rate": 40.0, "lengths": "uniform",
                         "prompt_len": 100, "prompt_len_high": 600, "output_len": 10, "output_len_high": 60, "seed": 5}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def prometheus(tmp_path):
    """A Prometheus of our own, on a free port, with its data in tmp_path; yields (start, its URL)."""
    if not PROMETHEUS.exists():
        pytest.skip(f"the Grafana test needs Debian's prometheus at {PROMETHEUS} (CI installs it)")
    processes = []

    def start(target_port: int, session_id: str) -> str:
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({  # YAML is a superset of JSON
            "global": {"scrape_interval": f"{int(SCRAPE_INTERVAL_S * 1000)}ms",
                       "scrape_timeout": f"{int(SCRAPE_INTERVAL_S * 1000)}ms"},
            "scrape_configs": [{"job_name": "servescope", "metrics_path": "/metrics",
                                "params": {"session": [session_id]},
                                "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}],
        }))
        with (tmp_path / "prometheus.log").open("w") as log:
            processes.append(subprocess.Popen(
                [str(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=log))
        return f"http://127.0.0.1:{port}"

    yield start
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def panel_queries(model_name: str) -> dict[str, list[str]]:
    """Each panel's PromQL, with the dashboard's template variables filled in."""
    dashboard = json.loads(DASHBOARD.read_text())
    return {panel["title"]: [target["expr"].replace("$model_name", model_name).replace("$__rate_interval", RATE_INTERVAL)
                             for target in panel["targets"]]
            for panel in dashboard["panels"]}


def has_data(api: httpx.Client, expr: str) -> bool:
    """Whether the query returns a series with a number in it over the last few seconds."""
    now = time.time()
    result = api.get("/api/v1/query_range", params={"query": expr, "start": now - 5, "end": now, "step": "1"}).json()
    assert result["status"] == "success", (expr, result)
    return any(math.isfinite(float(value)) for series in result["data"]["result"] for _, value in series["values"])


def play(server: Server, created: dict) -> None:
    """Play at real time (simulated seconds per wall second: 1), as a presenter's page would ask."""
    with connect(server.ws_url(created)) as ws:
        ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
        ws.send(json.dumps({"type": "play", "time_ratio": 1.0}))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the server says it plays
            message = ws.recv(timeout=5)
            if isinstance(message, str) and json.loads(message).get("playing"):
                return
    pytest.fail("the session did not start playing")


def test_every_panel_of_vllms_grafana_dashboard_has_data(prometheus):
    with Server(Settings(heartbeat_s=0.5)) as server:
        created = server.create({"scenario": SCENARIO})
        url = prometheus(server.port, created["session_id"])
        play(server, created)
        with httpx.Client(base_url=url, timeout=5) as api:
            deadline = time.monotonic() + DEADLINE_S
            model_names: list[str] = []
            while not model_names and time.monotonic() < deadline:
                time.sleep(SCRAPE_INTERVAL_S)
                try:
                    model_names = api.get("/api/v1/label/model_name/values").json()["data"]
                except httpx.TransportError:
                    continue  # Prometheus still starting
            assert model_names, "Prometheus never scraped /metrics"
            queries = panel_queries(model_names[0])
            assert len(queries) == 12
            empty = set(queries)
            while empty and time.monotonic() < deadline:
                time.sleep(SCRAPE_INTERVAL_S)
                empty = {title for title in empty if not any(has_data(api, expr) for expr in queries[title])}
            assert empty == set(), f"panels without data: {sorted(empty)}"
            # One series per finish reason (vLLM's `finished_reason` label), not one unlabeled total.
            (finish_reason,) = queries["Finish Reason"]
            series = api.get("/api/v1/query", params={"query": finish_reason}).json()["data"]["result"]
            assert {"length", "stop"} <= {one["metric"].get("finished_reason") for one in series}
