"""Budgets per client and per server on the work a request can ask for: worker slots reserved
before a process starts, a worker killed when its client hangs up, and rate limits (429 with
Retry-After) on every endpoint that computes, counted per client address and for the server."""

import asyncio
import signal
import socket
import time
from types import SimpleNamespace

import pytest
from fastapi import HTTPException
from fastapi.testclient import TestClient

from app.main import create_app
from app.rate_limits import RateLimit
from app.settings import Settings
from app.workers import WorkerSlots, start_worker, stop_worker
from tests.app.clients import Server

TEST_HOST = ("testserver",)


def test_simultaneous_requests_start_at_most_the_limit_of_workers():
    """Twelve starts in the same turn of the event loop: two processes, ten 429s, and every slot
    free again once the two are stopped."""
    settings = Settings(max_concurrent_exports=2)
    workers = WorkerSlots(settings.max_concurrent_exports)
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(settings=settings, export_workers=workers)))

    async def scenario():
        started = await asyncio.gather(*(start_worker(request, {"kind": "sleep"}) for _ in range(12)),
                                       return_exceptions=True)
        processes = [p for p in started if not isinstance(p, BaseException)]
        refused = [e for e in started if isinstance(e, HTTPException)]
        assert len(processes) == 2 and len(workers.processes) == 2 and len(workers) == 2
        assert len(refused) == 10 and all(e.status_code == 429 and "Retry-After" in e.headers for e in refused)
        for process in processes:
            await stop_worker(process, workers)
        assert len(workers) == 0 and not workers.processes

    asyncio.run(scenario())


# The largest sweep the web runs: far longer than the five seconds the test allows its worker.
LONG_SWEEP = (b'{"scenario": {"workload": {"num_requests": 500}}, '
              b'"axes": {"engine.max_num_seqs": [8, 16, 32, 64, 96, 128, 192, 256], "workload.seed": [1, 2, 3]}}')


@pytest.mark.slow
def test_a_worker_whose_client_hangs_up_is_killed_within_five_seconds():
    with Server(Settings(export_timeout_s=120)) as server:
        workers = server.app.state.export_workers
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(b"POST /api/sweep HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (len(LONG_SWEEP), LONG_SWEEP))
        deadline = time.monotonic() + 30
        while not workers.processes:
            assert time.monotonic() < deadline, "the sweep's worker did not start"
            time.sleep(0.05)
        (process,) = workers.processes
        time.sleep(0.5)
        assert process.returncode is None  # still computing when its client leaves
        client.close()
        hung_up = time.monotonic()
        while len(workers):
            assert time.monotonic() - hung_up < 5, "the abandoned worker still holds its slot"
            time.sleep(0.05)
        deadline = time.monotonic() + 5
        while process.returncode is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.returncode == -signal.SIGKILL  # killed, not finished


def test_a_why_replay_takes_one_of_the_servers_worker_slots():
    """The "why" replays' own slot is one of the server's: with a fleet run and a sweep computing,
    no "why" worker starts (at most 2 processes of any kind), and a "why" running leaves one."""
    exports = WorkerSlots(2)
    why = WorkerSlots(1, "steps' reasons are being replayed", within=exports)
    why.reserve()
    assert len(exports) == 1
    exports.reserve()
    with pytest.raises(HTTPException) as busy:
        exports.reserve()
    assert busy.value.status_code == 429
    why.release()
    exports.reserve()
    with pytest.raises(HTTPException):
        why.reserve()  # both server slots are taken
    assert len(why) == 0 and len(exports) == 2


def test_a_token_bucket_allows_its_burst_then_refuses_with_the_wait():
    limit = RateLimit("validations", per_client_per_s=1.0, per_server_per_s=100.0, burst=3)
    for _ in range(3):
        limit.check("127.0.0.2")
    with pytest.raises(HTTPException) as refused:
        limit.check("127.0.0.2")
    assert refused.value.status_code == 429 and refused.value.headers["Retry-After"] == "1"
    assert "each client may ask for 1 a second" in refused.value.detail
    limit.check("127.0.0.3")  # another client has its own bucket


def test_the_server_limit_holds_however_many_clients_share_it():
    limit = RateLimit("validations", per_client_per_s=1.0, per_server_per_s=2.0, burst=2)  # server burst 4
    for client in ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"):
        limit.check(client)
    with pytest.raises(HTTPException) as refused:
        limit.check("127.0.0.6")
    assert "the server answers 2 a second" in refused.value.detail


def test_a_refused_request_takes_no_token():
    limit = RateLimit("sweeps", per_client_per_s=1.0, per_server_per_s=1.0, burst=1)
    limit.check("a")
    for _ in range(5):
        with pytest.raises(HTTPException):
            limit.check("a")
    time.sleep(1.05)
    limit.check("a")


def public_client(address: str, app) -> TestClient:
    return TestClient(app, client=(address, 50000))


HUGE = {"engine": {"num_gpu_blocks": 131072, "max_model_len": 32768},
        "workload": {"num_requests": 20000, "lengths": "uniform", "prompt_len": 8000, "prompt_len_high": 30000,
                     "arrival_rate": 1000, "output_len": 512, "output_len_high": 1024}}


def test_validating_the_largest_scenario_costs_half_a_burst_per_client():
    """A classroom server: the largest scenario validates twice, then 429 with Retry-After; a small
    one from another student still validates."""
    app = create_app(Settings.from_env(public=True, allowed_hosts=TEST_HOST))
    with public_client("127.0.0.2", app) as attacker, public_client("127.0.0.3", app) as student:
        codes = [attacker.post("/api/scenarios/validate", json={"scenario": HUGE}).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        refused = attacker.post("/api/scenarios/validate", json={"scenario": HUGE})
        assert int(refused.headers["Retry-After"]) >= 1 and "validations" in refused.json()["detail"]
        assert student.post("/api/scenarios/validate", json={"preset": "default"}).status_code == 200


@pytest.mark.parametrize("method,path,body", [
    ("post", "/api/sweep", {"preset": "default", "axes": {"workload.seed": [1, 2]}}),
    ("post", "/api/fleet", {"preset": "default", "cluster": {"replicas": 2}}),
])
def test_fleet_runs_and_sweeps_are_rate_limited_per_client(method, path, body):
    settings = Settings(allowed_hosts=TEST_HOST, compute_per_client_per_s=0.01, compute_per_server_per_s=1.0,
                        compute_burst=1)
    app = create_app(settings)
    with public_client("127.0.0.2", app) as first, public_client("127.0.0.3", app) as second:
        assert getattr(first, method)(path, json=body).status_code == 200
        refused = getattr(first, method)(path, json=body)
        assert refused.status_code == 429 and "Retry-After" in refused.headers
        assert getattr(second, method)(path, json=body).status_code == 200


def test_session_creation_and_exports_are_rate_limited():
    settings = Settings(allowed_hosts=TEST_HOST, compute_per_client_per_s=0.01, compute_per_server_per_s=1.0,
                        compute_burst=1)
    with public_client("127.0.0.2", create_app(settings)) as client:
        created = client.post("/api/sessions", json={"preset": "default"}).json()
        assert client.post("/api/sessions", json={"preset": "default"}).status_code == 429
        token = {"x-control-token": created["control_token"]}
        assert client.get(f"/api/sessions/{created['session_id']}/export/steps.jsonl", headers=token).status_code == 200
        assert client.get(f"/api/sessions/{created['session_id']}/export/steps.jsonl", headers=token).status_code == 429


def test_why_answers_from_the_cache_cost_nothing_and_uncached_ones_are_limited():
    settings = Settings(allowed_hosts=TEST_HOST, heartbeat_s=0.2, compute_per_client_per_s=0.01,
                        compute_per_server_per_s=1.0, compute_burst=1)
    app = create_app(settings)
    with public_client("127.0.0.2", app) as presenter, public_client("127.0.0.3", app) as stranger:
        created = presenter.post("/api/sessions", json={"preset": "default"}).json()
        sid = created["session_id"]
        with presenter.websocket_connect(f"/ws/{sid}") as ws:
            ws.send_json({"type": "auth", "token": created["control_token"]})
            ws.send_json({"type": "step", "n": 20})
            while app.state.manager.get(sid).session.step < 20:
                time.sleep(0.01)
        assert stranger.get(f"/api/sessions/{sid}/steps/5/why").status_code == 200
        for _ in range(3):  # the same step again: cached, free
            assert stranger.get(f"/api/sessions/{sid}/steps/5/why").status_code == 200
        refused = stranger.get(f"/api/sessions/{sid}/steps/6/why")
        assert refused.status_code == 429 and "uncached step reasons" in refused.json()["detail"]


def refused_viewer(client: TestClient, session_id: str) -> dict:
    with client.websocket_connect(f"/ws/{session_id}") as ws:
        frame = ws.receive_json()
        closed = ws.receive()
    assert closed["type"] == "websocket.close" and closed["code"] == 4429
    return frame


def first_frame(ws) -> None:
    ws.receive_bytes()  # the snapshot: this viewer is in


def test_a_session_takes_at_most_its_cap_of_viewers():
    app = create_app(Settings(allowed_hosts=TEST_HOST, max_viewers_per_session=2))
    with public_client("127.0.0.2", app) as client:
        sid = client.post("/api/sessions", json={"preset": "default"}).json()["session_id"]
        with client.websocket_connect(f"/ws/{sid}") as one, client.websocket_connect(f"/ws/{sid}") as two:
            first_frame(one), first_frame(two)
            frame = refused_viewer(client, sid)
            assert frame["code"] == "too_many_viewers" and "2 viewers" in frame["message"]
        with client.websocket_connect(f"/ws/{sid}") as again:  # the two left: room again
            first_frame(again)


def test_each_client_holds_at_most_its_cap_of_viewers_across_sessions():
    app = create_app(Settings(allowed_hosts=TEST_HOST, max_viewers_per_client=2))
    with public_client("127.0.0.2", app) as attacker, public_client("127.0.0.3", app) as student:
        first = attacker.post("/api/sessions", json={"preset": "default"}).json()["session_id"]
        second = attacker.post("/api/sessions", json={"preset": "default"}).json()["session_id"]
        with attacker.websocket_connect(f"/ws/{first}") as one, attacker.websocket_connect(f"/ws/{second}") as two:
            first_frame(one), first_frame(two)
            assert "each client may have 2 viewers" in refused_viewer(attacker, first)["message"]
            with student.websocket_connect(f"/ws/{first}") as theirs:
                first_frame(theirs)


def test_a_public_server_caps_each_clients_viewers():
    assert Settings.from_env(public=True).max_viewers_per_client == 16
    assert Settings().max_viewers_per_client == 0
