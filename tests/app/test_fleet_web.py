"""The fleet and sweep pages and their API: bounded runs that keep nothing on the server, inputs
through the web schema (a 422 names the field), nothing that could name a file. The pages in a
real browser: tests/browser/test_fleet_web_e2e.py."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.frames import finite
from app.main import create_app
from app.settings import Settings
from scheduler_core.cluster.scenario import ClusterScenario
from scheduler_core.lessons.fleet import FLEET_LESSONS_BY_NAME
from scheduler_core.lessons.fleet_timeline import fleet_timeline

SMALL = {"name": "small", "engine": {"num_gpu_blocks": 600, "max_num_batched_tokens": 512, "max_num_seqs": 256},
         "workload": {"num_requests": 60, "arrival_rate": 20.0, "lengths": "fixed", "prompt_len": 200, "output_len": 16,
                      "shared_prefix_len": 64, "num_shared_prefixes": 4}}


@pytest.fixture(scope="module")
def client():
    # "testserver" is the host name TestClient sends.
    with TestClient(create_app(Settings(allowed_hosts=("testserver",)))) as c:
        yield c


def locations(response) -> list[list]:
    return [error["loc"] for error in response.json()["detail"]]


def test_a_fleet_run_returns_frames_and_metrics_and_keeps_no_state(client):
    response = client.post("/api/fleet", json={"scenario": SMALL, "cluster": {"replicas": 3, "router": "prefix-aware"}})
    assert response.status_code == 200
    run = response.json()
    assert [r["name"] for r in run["replicas"]] == ["replica-0", "replica-1", "replica-2"]
    assert run["frames"] and all(len(f["replicas"]) == 3 for f in run["frames"])
    assert run["report"]["num_requests"] == 60 and sum(run["report"]["router"]["decisions"].values()) == 60
    assert run["num_gpus"] == 3
    # The numbers are the core's: the same fleet run headless gives the same report.
    data = {k: v for k, v in run["scenario"].items() if v is not None}  # JSON has no infinite SLO
    fleet = ClusterScenario.from_dict(data).build()
    fleet.run()
    from scheduler_core.cluster import fleet_report
    assert run["report"]["ttft_s"]["p99"] == pytest.approx(fleet_report(fleet)["ttft_s"]["p99"])
    assert client.get("/api/sessions").json() == []
    assert client.get("/fleet").status_code == 200 and client.get("/sweep").status_code == 200
    assert client.get("/api/sessions").json() == []


@pytest.mark.slow
def test_a_fleet_runs_in_a_worker_process_within_the_servers_budget():
    """Off the event loop, in a process the server kills when its time is up: past the budget the
    POST is a 503 saying so, and no worker is left behind; a run within it is the one computed
    in the server's own process, number for number."""
    body = {"lesson": "disaggregation", "arm": "split"}
    app = create_app(Settings(allowed_hosts=("testserver",), export_timeout_s=0.3))
    with TestClient(app) as c:
        response = c.post("/api/fleet", json=body)
        assert response.status_code == 503 and "fleet runs are limited to 0.3 s" in response.json()["detail"]
        assert len(app.state.export_workers) == 0
    with TestClient(create_app(Settings(allowed_hosts=("testserver",)))) as c:
        run = c.post("/api/fleet", json=body).json()
    here = fleet_timeline(FLEET_LESSONS_BY_NAME["disaggregation"].scenario("split").build())
    assert run["report"] == json.loads(json.dumps(finite(here["report"])))


def test_a_split_fleet_reports_its_transfers(client):
    response = client.post("/api/fleet", json={"scenario": SMALL, "cluster": {
        "link": "ethernet", "prefill": {"replicas": 1, "tp": 2}, "decode": {"replicas": 2, "max_num_seqs": 32}}})
    assert response.status_code == 200
    run = response.json()
    assert [r["role"] for r in run["replicas"]] == ["prefill", "decode", "decode"]
    assert run["report"]["kv_transfer"]["num_transfers"] == 60 and run["report"]["kv_transfer"]["link"] == "ethernet"
    assert {e["kind"] for e in run["events"]} == {"route", "transfer", "landed"}
    assert run["num_gpus"] == 4


@pytest.mark.parametrize("body, location", [
    ({"cluster": {"replicas": 9}}, ["body", "cluster", "replicas"]),
    ({"cluster": {"router": "random"}}, ["body", "cluster", "router"]),
    ({"cluster": {"prefill": {"replicas": 5}, "decode": {}}}, ["body", "cluster", "prefill", "replicas"]),
    ({"scenario": {**SMALL, "workload": {"num_requests": 5000}}}, ["body", "scenario", "workload", "num_requests"]),
    ({"scenario": {**SMALL, "trace": "/etc/passwd"}}, ["body", "scenario", "trace"]),
    ({"scenario": {**SMALL, "engine": {"num_gpu_blocks": 10**8}}}, ["body", "scenario", "engine", "num_gpu_blocks"]),
])
def test_bad_fleets_are_422_naming_the_field(client, body, location):
    response = client.post("/api/fleet", json=body)
    assert response.status_code == 422
    assert location in locations(response)


def test_a_replica_opens_as_a_single_engine_session(client):
    body = {"scenario": SMALL, "cluster": {"replicas": 2, "router": "round-robin"}}
    response = client.post("/api/fleet/replica", json={**body, "replica": "replica-1"})
    assert response.status_code == 201
    created = response.json()
    info = client.get(f"/api/sessions/{created['session_id']}").json()
    assert info["num_requests"] == 30  # round-robin: every other request
    assert info["scenario"]["fleet"]["cluster"]["replicas"] == 2
    client.delete(f"/api/sessions/{created['session_id']}", headers={"X-Control-Token": created["control_token"]})
    for replica, code in (("replica-5", 422), ("decode-0", 422), ("../../etc/passwd", 422)):
        assert client.post("/api/fleet/replica", json={**body, "replica": replica}).status_code == code


def test_the_page_sweep_runs_a_bounded_grid(client):
    response = client.post("/api/sweep", json={
        "scenario": SMALL, "cluster": {"replicas": 1, "router": "least-requests"},
        "axes": {"cluster.replicas": [1, 2], "workload.arrival_rate": [10, 40]}, "slo_ttft_ms": 200})
    assert response.status_code == 200
    result = response.json()
    assert result["keys"] == ["cluster.replicas", "workload.arrival_rate"] and result["slo_ttft_s"] == 0.2
    assert [r["point"] for r in result["rows"]] == [0, 1, 2, 3]
    assert [r["num_gpus"] for r in result["rows"]] == [1, 1, 2, 2]
    assert result["rows"][3]["ttft_s.p99"] < result["rows"][1]["ttft_s.p99"]


@pytest.mark.parametrize("axes, location", [
    ({"trace": ["/etc/passwd"]}, ["body", "axes", "trace", "[key]"]),
    ({"model": ["/etc/passwd"]}, ["body", "axes", "model", "[key]"]),
    ({"cluster.replicas": [1, 20]}, ["body", "axes", "cluster.replicas"]),
    ({"engine.max_num_seqs": list(range(1, 6)), "tp": [1, 2, 3, 4, 5]}, ["body", "axes"]),
    ({"workload.num_requests": [2000, 2001, 4000, 4001, 4002, 4003]}, ["body", "axes"]),
    ({"workload.num_requests": [10, 20.5]}, ["body", "axes", "workload.num_requests"]),
    ({"engine.max_num_seqs": [0]}, ["body", "axes", "engine.max_num_seqs"]),
    ({"gpu": ["tpu"]}, ["body", "axes", "gpu"]),
    ({"engine.num_gpu_blocks": [600, 10**8]}, ["body", "axes", "engine.num_gpu_blocks"]),
])
def test_bad_page_sweeps_are_422_naming_the_field(client, axes, location):
    response = client.post("/api/sweep", json={"scenario": SMALL, "axes": axes})
    assert response.status_code == 422, response.json()
    assert location in locations(response)


def test_a_sweep_with_two_wrong_axes_names_both(client):
    response = client.post("/api/sweep", json={"scenario": SMALL, "cluster": {"replicas": 1},
                                               "axes": {"cluster.replicas": [1, 99], "workload.arrival_rate": [4, -8]}})
    assert response.status_code == 422
    assert locations(response) == [["body", "axes", "cluster.replicas"], ["body", "axes", "workload.arrival_rate"]]


def test_the_sweep_check_names_the_fields_wrong_now_and_runs_nothing(client, monkeypatch):
    def no_run(*args, **kwargs):
        raise AssertionError("a check runs no sweep")

    monkeypatch.setattr("app.routes.fleet.worker_result", no_run)
    body = {"scenario": SMALL, "cluster": {"replicas": 1}, "axes": {"cluster.replicas": [1, 99], "workload.arrival_rate": [4, 8]}}
    assert locations(client.post("/api/sweep/check", json=body)) == [["body", "axes", "cluster.replicas"]]
    body["axes"] = {"cluster.replicas": [1, 2], "workload.arrival_rate": [4, -8]}
    assert locations(client.post("/api/sweep/check", json=body)) == [["body", "axes", "workload.arrival_rate"]]
    body["axes"]["workload.arrival_rate"] = [4, 8]
    response = client.post("/api/sweep/check", json=body)
    assert response.status_code == 200 and response.json() == {"points": 4}
