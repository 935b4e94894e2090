"""`serve --openai --replicas N`: N served engines, each a whole vLLM-compatible server on a port
of its own, driven by real clients over one real uvicorn listening on both ports: a request lands
on the replica it was sent to, each /metrics counts its own engine alone, vLLM's
`X-data-parallel-rank` header reaches a replica through the first port, and the budgets that
bound the machine hold for the fleet as a whole."""

import asyncio
import random
import statistics
import time

import aiohttp
import httpx
import openai
import pytest

from app.cli import main as servescope_main
from app.kv_events_config import KVEventsConfig, offset_endpoint
from app.openai.engine import ServeLimits
from tests.app.openai_server import MODEL, ReplicaServers, ServeProcess
from tests.app.test_kv_events import Subscriber, caught_up
from tests.app.test_openai_clients import random_prompt
from tests.app.vllm_bench_client import bench_request

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    with ReplicaServers(trace_path=tmp_path_factory.mktemp("traces") / "served.jsonl") as fleet:
        yield fleet


def metric_value(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


def test_a_request_lands_on_the_replica_whose_port_it_was_sent_to(fleet):
    first = fleet.client(0).completions.create(model=MODEL, prompt="to replica zero", max_tokens=4,
                                               extra_body={"ignore_eos": True})
    second = fleet.client(1).completions.create(model=MODEL, prompt="to replica one " * 3, max_tokens=6,
                                                extra_body={"ignore_eos": True})
    # Each replica numbers its own requests (`cmpl-req-00000` on both): its engine's are its alone.
    engines = [fleet.app.state.served_fleet.served[replica].engine for replica in (0, 1)]
    prompts = [[len(spec.prompt_token_ids) for spec in engine.source.requests] for engine in engines]

    assert first.usage.prompt_tokens in prompts[0] and second.usage.prompt_tokens in prompts[1]
    assert first.usage.prompt_tokens not in prompts[1] and second.usage.prompt_tokens not in prompts[0]
    assert second.usage.completion_tokens == 6 and first.usage.completion_tokens == 4


def test_each_replicas_metrics_count_its_own_engine_alone(fleet):
    client = fleet.client(1)
    for _ in range(2):
        client.completions.create(model=MODEL, prompt="counted on one", max_tokens=3, extra_body={"ignore_eos": True})
    scraped = [httpx.get(f"{url}/metrics").text for url in fleet.urls]
    sessions = [fleet.app.state.served_fleet.served[i].engine.live.session.session_id for i in (0, 1)]

    for replica in (0, 1):
        sim = fleet.sim(replica)
        assert metric_value(scraped[replica], "vllm:request_success_total") == sim.metrics.num_finished
        assert f'engine="{sessions[replica]}' in scraped[replica]
        assert f'engine="{sessions[1 - replica]}' not in scraped[replica]


def test_every_replica_is_healthy_and_serves_the_model(fleet):
    for url in fleet.urls:
        assert httpx.get(f"{url}/health").status_code == 200
        assert httpx.get(f"{url}/v1/models").json()["data"][0]["id"] == MODEL


def test_the_rank_header_on_the_first_port_reaches_another_replica(fleet):
    before = len(fleet.app.state.served_fleet.served[1].engine.source.requests)
    answer = httpx.post(f"{fleet.urls[0]}/v1/completions", headers={"X-data-parallel-rank": "1"},
                        json={"prompt": "by header", "max_tokens": 2}, timeout=30)

    assert answer.status_code == 200
    assert len(fleet.app.state.served_fleet.served[1].engine.source.requests) == before + 1


def test_a_rank_out_of_range_is_vllms_400(fleet):
    answer = httpx.post(f"{fleet.urls[0]}/v1/completions", headers={"X-data-parallel-rank": "2"},
                        json={"prompt": "nowhere", "max_tokens": 2})

    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == "data_parallel_rank 2 is out of range [0, 2)."
    assert answer.json()["error"]["param"] == "X-data-parallel-rank"


def test_the_dashboard_is_on_the_first_port_only(fleet):
    assert httpx.get(f"{fleet.urls[0]}/fleet").status_code == 200
    answer = httpx.get(f"{fleet.urls[1]}/fleet")
    assert answer.status_code == 404 and f"port {fleet.ports[0]}" in answer.json()["detail"]
    assert httpx.get(f"{fleet.urls[1]}/api/sessions").status_code == 404


def test_every_port_checks_the_host_and_the_origin(fleet):
    for url in fleet.urls:
        assert httpx.get(f"{url}/v1/models", headers={"Host": "evil.example"}).status_code in (400, 421)
        refused = httpx.post(f"{url}/v1/completions", headers={"Origin": "http://evil.example"},
                             json={"prompt": "x", "max_tokens": 1})
        assert refused.status_code == 403


def test_the_fleet_api_shows_each_replica_live(fleet):
    picture = httpx.get(f"{fleet.urls[0]}/api/served/replicas").json()

    assert [r["port"] for r in picture["replicas"]] == fleet.ports
    for replica, shown in enumerate(picture["replicas"]):
        engine = fleet.app.state.served_fleet.served[replica].engine
        assert shown["requests"] == len(engine.source.requests) and shown["view_url"].endswith("/view")
        assert len(shown["grid"]) <= 160 and 0 <= shown["kv"] <= 1


def test_each_replica_writes_a_trace_of_its_own(fleet):
    fleet.client(0).completions.create(model=MODEL, prompt="traced", max_tokens=1)
    paths = [fleet.options.trace_path_of(replica) for replica in (0, 1)]

    assert [p.name for p in paths] == ["served.0.jsonl", "served.1.jsonl"]
    for replica, path in enumerate(paths):
        assert len(path.read_text().splitlines()) == len(fleet.app.state.served_fleet.served[replica].engine.source.requests)


def test_the_unfinished_requests_are_bounded_for_the_whole_fleet():
    """Two replicas, a server budget of two unfinished requests: one long stream on each, and a
    third request on either replica finds the server full."""
    with ReplicaServers(limits=ServeLimits(max_live_requests=2)) as fleet:
        streams = [fleet.client(replica).completions.create(model=MODEL, prompt="hold on", max_tokens=200, stream=True,
                                                           extra_body={"ignore_eos": True}) for replica in (0, 1)]
        firsts = [next(iter(stream)) for stream in streams]
        with pytest.raises(openai.APIStatusError) as refused:
            fleet.client(1).completions.create(model=MODEL, prompt="one more", max_tokens=1)
        for stream in streams:
            stream.close()

    assert all(first.choices for first in firsts)
    assert refused.value.status_code == 503 and "at most 2 unfinished requests" in refused.value.message


def test_each_replica_publishes_its_kv_events_as_a_data_parallel_rank(tmp_path):
    """A publisher per replica, at the endpoint offset as vLLM offsets a DP rank's: replica 1's
    subscriber gets replica 1's blocks, marked data_parallel_rank 1; replica 0's, none of them."""
    config = KVEventsConfig(enable_kv_cache_events=True, endpoint=f"ipc://{tmp_path}/kv")
    with ReplicaServers(kv_events=config) as fleet:
        assert [p.endpoint for p in fleet.publishers] == [f"ipc://{tmp_path}/kv", f"ipc://{tmp_path}/kv_dp1"]
        subscribers = [Subscriber(publisher.endpoint, None) for publisher in fleet.publishers]
        try:
            time.sleep(0.3)  # a SUB's subscription reaches the PUB a moment after it connects
            fleet.client(1).completions.create(model=MODEL, prompt="cached on one " * 40, max_tokens=4)
            for subscriber, publisher in zip(subscribers, fleet.publishers):
                subscriber.receive(until=caught_up(publisher))
        finally:
            for subscriber in subscribers:
                subscriber.close()

    assert subscribers[1].batches and {batch.data_parallel_rank for batch in subscribers[1].batches} == {1}
    assert subscribers[1].cached
    assert not subscribers[0].cached and {batch.data_parallel_rank for batch in subscribers[0].batches} <= {0}


@pytest.mark.parametrize("endpoint, rank, offset", [
    ("tcp://*:5557", 0, "tcp://*:5557"), ("tcp://*:5557", 3, "tcp://*:5560"), ("tcp://*:0", 2, "tcp://*:0"),
    ("tcp://router.lan:6000", 1, "tcp://router.lan:6001"), ("inproc://kv", 1, "inproc://kv_dp1"),
    ("ipc:///run/kv", 2, "ipc:///run/kv_dp2")])
def test_a_ranks_endpoint_is_offset_as_vllm_offsets_it(endpoint, rank, offset):
    assert offset_endpoint(endpoint, rank) == offset
    assert KVEventsConfig(enable_kv_cache_events=True, endpoint=endpoint, replay_endpoint="tcp://*:5558") \
        .for_rank(rank).replay_endpoint == f"tcp://*:{5558 + rank}"


def test_serve_replicas_listens_on_consecutive_ports_and_names_each(tmp_path):
    trace = tmp_path / "served.jsonl"
    server = ServeProcess(tmp_path / "log.txt", "--openai", "--replicas", "2", "--save-trace", str(trace))
    try:
        second = f"http://127.0.0.1:{server.port + 1}"
        assert httpx.get(f"{second}/health").status_code == 200
        httpx.post(f"{second}/v1/completions", json={"prompt": "on the second port", "max_tokens": 2}, timeout=30)
        log = server.read_log()
    finally:
        server.stop()
    assert f"replica 1: {second}/v1" in log and "X-data-parallel-rank: 0 to 1" in log
    assert len((tmp_path / "served.1.jsonl").read_text().splitlines()) == 1
    assert (tmp_path / "served.0.jsonl").read_text() == ""


def test_a_replica_count_out_of_bounds_is_an_error_line(capsys):
    assert servescope_main(["serve", "--openai", "--replicas", "17"]) == 2
    err = capsys.readouterr().err
    assert "replicas: must be >= 1 and <= 16, got 17" in err and "Traceback" not in err


async def bench_fleet(fleet: ReplicaServers, per_replica: int, output_len: int, seed: int) -> list[tuple[int, object]]:
    """`per_replica` streams at once on every replica's port, each as `vllm bench serve` sends and times it."""
    rng = random.Random(seed)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        jobs = [(replica, bench_request(session, url, MODEL, random_prompt(rng, rng.randrange(5, 300)), output_len,
                                        ignore_eos=True))
                for replica, url in enumerate(fleet.urls) for _ in range(per_replica)]
        outputs = await asyncio.gather(*(job for _, job in jobs))
    return [(replica, output) for (replica, _), output in zip(jobs, outputs)]


def test_every_replica_paces_its_own_streams_on_the_wall_clock():
    """Replicas share one event loop: each one's token events still leave at its own steps' ends,
    never early, the median within the single engine's tolerance (tests/app/test_openai_clients.py);
    the worst event may be later, as twice the streams and both engines share this process (and
    its GIL) with the clients, on a 2-core machine that runs other jobs."""
    with ReplicaServers(replicas=2) as fleet:
        asyncio.run(bench_fleet(fleet, 1, 2, seed=0))  # a cold server's first requests
        outputs = asyncio.run(bench_fleet(fleet, 8, 32, seed=1))
        lateness = {0: [], 1: []}
        for replica, output in outputs:
            assert output.success, output.error
            engine = fleet.app.state.served_fleet.served[replica].engine
            request = engine.sim.request(output.response_id.split("-", 1)[1])
            assert request.num_prompt_tokens == output.prompt_len  # the replica addressed served it
            client_time, num_tokens = output.start_time + output.ttft, 0
            for i, text in enumerate(output.event_texts):
                client_time += output.itl[i - 1] if i else 0.0
                num_tokens += len(text.split())
                lateness[replica].append(client_time - (engine.origin + request.token_times[num_tokens - 1]))
    for replica, late in lateness.items():
        ms = sorted(x * 1e3 for x in late)
        print(f"\nreplica {replica}: token events late by min {ms[0]:.2f}, median {statistics.median(ms):.2f}, "
              f"p90 {ms[int(len(ms) * 0.9)]:.2f}, max {ms[-1]:.2f} ms over {len(ms)} events")
        assert ms[0] > -1.0 and ms[-1] < 200.0 and statistics.median(ms) < 40.0


def completion(url: str, prompt, **headers) -> httpx.Response:
    return httpx.post(f"{url}/v1/completions", json={"prompt": prompt, "max_tokens": 1}, headers=headers, timeout=30)


def test_the_prompt_tokens_kept_are_bounded_for_the_whole_fleet():
    with ReplicaServers(limits=ServeLimits(max_prompt_tokens=30)) as fleet:
        first = completion(fleet.urls[0], list(range(1, 21)))
        second = completion(fleet.urls[1], list(range(1, 21)))

    assert first.status_code == 200
    assert second.status_code == 503
    assert second.json()["error"]["message"].startswith("this server's 2 served sessions have taken 30 prompt tokens in all")


def test_the_servers_request_rate_is_shared_by_the_fleet_and_a_clients_is_each_replicas():
    """A client's bucket is each replica's own, the server's is the fleet's: with a server burst of
    3, three requests spread over two replicas pass and a fourth anywhere is refused by the server."""
    limits = ServeLimits(requests_per_client_per_s=0.01, requests_per_server_per_s=0.015, burst=2)
    with ReplicaServers(limits=limits) as fleet:
        answers = [completion(url, "rate") for url in (fleet.urls[0], fleet.urls[1], fleet.urls[1])]
        server_refused = completion(fleet.urls[0], "rate")  # replica 0 has a token left for this client

    assert [a.status_code for a in answers] == [200, 200, 200]
    assert server_refused.status_code == 429 and "the server answers" in server_refused.json()["error"]["message"]
