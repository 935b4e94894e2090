"""A client that goes away mid-answer, against a real uvicorn: its request is aborted as vLLM's
API server aborts it (the engine frees its blocks before its next step, the client's quota is
free at once), whether it closed a stream or dropped the connection of a whole answer."""

import dataclasses
import time

import httpx
import pytest

from app.openai.engine import ServeLimits
from scheduler_core.engine.request import RequestStatus
from tests.app.openai_server import OpenAIServer
from tests.sim.decisions import decisions

pytestmark = pytest.mark.slow

LONG = {"prompt": "Tell me everything about paged attention.", "max_tokens": 3000, "ignore_eos": True}


@pytest.fixture
def server():
    # One live request per client: a second is refused until the first is gone.
    with OpenAIServer(limits=ServeLimits(max_live_per_client=1)) as server:
        yield server


def wait_for(condition, what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.01)


def assert_aborted(server, request_id: str) -> None:
    """The engine has aborted it: finished as aborted, no blocks, nothing running, and /metrics says so."""
    wait_for(lambda: server.sim.request(request_id).status == RequestStatus.FINISHED_ABORTED, "the request aborted")
    assert server.sim.block_table(request_id) == () and not server.sim.scheduler.running
    wait_for(lambda: not server.served.engine.taken, "the abort's step released")
    metrics = httpx.get(f"{server.url}/metrics", timeout=5).text
    running = [line for line in metrics.splitlines() if line.startswith("vllm:num_requests_running{")]
    assert running and running[0].endswith(" 0.0")
    # vLLM counts no finished request for a client's abort (its front end drops the request's state).
    assert not any(line.startswith("vllm:request_success_total{") and 'finished_reason="abort"' in line
                   and not line.endswith(" 0.0") for line in metrics.splitlines())


def submit_again(server) -> int:
    return httpx.post(f"{server.url}/v1/completions", json={**LONG, "max_tokens": 2}, timeout=10).status_code


def test_a_stream_closed_after_two_events_is_aborted_and_its_quota_freed(server):
    with httpx.Client(base_url=server.url, timeout=10) as http:
        with http.stream("POST", "/v1/completions", json={**LONG, "stream": True}) as response:
            # Held, not left by a `break`: a dropped line iterator closes httpx's connection.
            lines, num_events = response.iter_lines(), 0
            while num_events < 2:
                num_events += next(lines).startswith("data: ")
            request_id = next(iter(server.served.engine.streams))
            assert submit_again(server) == 429  # its one live request is still held
    # The connection is closed with the stream unread: the client has gone.
    wait_for(lambda: not server.served.engine.streams, "the client's live request released")
    assert submit_again(server) == 200
    assert_aborted(server, request_id)
    assert server.sim.request(request_id).num_output_tokens < LONG["max_tokens"]


def test_a_whole_answers_dropped_connection_is_aborted_and_its_quota_freed(server):
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.url}/v1/completions", json=LONG, timeout=httpx.Timeout(10, read=0.5))
    request_id = "req-00000"
    wait_for(lambda: not server.served.engine.streams, "the client's live request released")
    assert submit_again(server) == 200
    assert_aborted(server, request_id)
    assert server.sim.request(request_id).num_output_tokens < LONG["max_tokens"]


def test_a_served_runs_trace_replays_its_abort_step_for_step(tmp_path):
    """The `--trace` file keeps the abort's time: replayed headless, the same steps abort the same request."""
    path = tmp_path / "served.jsonl"
    with OpenAIServer(trace_path=path) as server:
        live_records, publish = [], server.served.engine.live.publish_steps
        server.served.engine.live.publish_steps = lambda records: (live_records.extend(records), publish(records))
        with httpx.Client(base_url=server.url, timeout=10) as http:
            with http.stream("POST", "/v1/completions", json={**LONG, "stream": True}) as response:
                lines, num_events = response.iter_lines(), 0
                while num_events < 3:
                    num_events += next(lines).startswith("data: ")
        assert submit_again(server) == 200
        server.wait_idle()
        scenario = server.served.engine.live.session.scenario
    workload = dataclasses.replace(scenario.workload, num_requests=2, num_shared_prefixes=1)
    replay = dataclasses.replace(scenario, trace=str(path), workload=workload)

    replayed = list(replay.build().records())

    assert [r.aborted for r in live_records if r.aborted] == [["req-00000"]]
    assert [(decisions(r), r.aborted) for r in replayed] == [(decisions(r), r.aborted) for r in live_records]
