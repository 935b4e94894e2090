"""A fleet of replicas behind a router: one replica is the single engine exactly; each router
policy routes as specified; a fleet run is deterministic per seed."""

import pytest

from scheduler_core.cluster import Cluster, Replica, Router, fleet_report
from scheduler_core.cluster.scenario import ClusterScenario
from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import PRESET_SCENARIOS, Scenario, with_vllm_defaults
from scheduler_core.sim.simulation import Simulation
from scheduler_core.workload.workload import RequestSpec, unique_prompt

CONFIG = EngineConfig(num_gpu_blocks=400, max_num_seqs=16, max_num_batched_tokens=256, max_model_len=2048)


def replica(index=0, config=CONFIG):
    return Replica(index, "colocated", Simulation(config, []))


def spec(rid, prompt, arrival=0.0, max_tokens=8):
    return RequestSpec(rid, arrival, prompt, max_tokens)


@pytest.mark.parametrize("name", ["default", "qwen-7b-l40s-sharegpt-128", "llama-70b-h100-tp4-conversation"])
def test_one_replica_fleet_is_the_single_engine_step_for_step(name):
    """Open and closed loop, tight memory with preemptions and prefix hits: every step record and
    every metric equal."""
    data = PRESET_SCENARIOS[name]
    scenario = Scenario.from_dict({**data, "workload": {**data["workload"], "num_requests": 80}}, name)
    single = scenario.build()
    expected = list(single.records())
    fleet = ClusterScenario.from_dict({**scenario.to_dict(), "cluster": {"replicas": 1}}, name).build()
    records = [event.record for event in fleet.events() if event.kind == "step"]
    assert records == expected
    report, single_report = fleet_report(fleet), single.metrics.report()
    for key, value in single_report.items():
        if key != "wall_s":
            assert report[key] == value, key
    assert report["replicas"][0]["ttft_s"] == single_report["ttft_s"]
    assert report["router"]["decisions"] == {"replica-0": 80}


def test_round_robin_takes_replicas_in_turn():
    pool = [replica(i) for i in range(3)]
    router = Router("round-robin")
    chosen = [router.route(spec(f"r{i}", unique_prompt(i, 32)), pool).index for i in range(7)]
    assert chosen == [0, 1, 2, 0, 1, 2, 0]
    assert router.decisions == {"replica-0": 3, "replica-1": 2, "replica-2": 2}


def test_least_requests_picks_the_fewest_outstanding_then_the_lowest_index():
    pool = [replica(i) for i in range(3)]
    for i in range(2):
        pool[0].sim.submit(spec(f"a{i}", unique_prompt(i, 32)), i)
    pool[2].sim.submit(spec("c0", unique_prompt(9, 32)), 9)
    router = Router("least-requests")
    assert router.route(spec("x", unique_prompt(20, 32)), pool).index == 1
    pool[1].sim.submit(spec("b0", unique_prompt(10, 32)), 10)
    # 1 and 2 both hold one now: the lower index wins.
    assert router.route(spec("y", unique_prompt(21, 32)), pool).index == 1


def test_least_kv_picks_the_replica_with_the_lowest_kv_usage():
    pool = [replica(i) for i in range(2)]
    # Replica 0 holds a long prompt's blocks; replica 1 two short ones (more requests, less KV).
    pool[0].sim.submit(spec("long", unique_prompt(0, 1024)), 0)
    pool[1].sim.submit(spec("s0", unique_prompt(1, 16)), 1)
    pool[1].sim.submit(spec("s1", unique_prompt(2, 16)), 2)
    for r in pool:
        r.sim.step()
    assert pool[0].kv_usage > pool[1].kv_usage
    assert Router("least-kv").route(spec("x", unique_prompt(5, 32)), pool).index == 1
    assert Router("least-requests").route(spec("x", unique_prompt(5, 32)), pool).index == 0


def test_prefix_aware_routes_to_the_replica_caching_most_of_the_prompt():
    system_a = tuple(range(100, 100 + 128))  # eight full blocks
    system_b = tuple(range(500, 500 + 64))   # four
    pool = [replica(i) for i in range(3)]
    # Replica 1 served a request with system prompt A; replica 2 one with B, plus a queue.
    pool[1].sim.submit(spec("a", system_a + tuple(unique_prompt(0, 40))), 0)
    pool[2].sim.submit(spec("b", system_b + tuple(unique_prompt(1, 40))), 1)
    for r in pool[1:]:
        r.sim.run()
    pool[2].sim.submit(spec("queued", unique_prompt(3, 40), arrival=50.0), 3)
    router = Router("prefix-aware")
    assert router.route(spec("a2", system_a + tuple(unique_prompt(4, 40))), pool).index == 1
    assert router.last_reason == "8 cached prefix blocks"
    # A partial match still counts: the first four blocks of A.
    assert router.route(spec("a3", system_a[:64] + tuple(unique_prompt(5, 40))), pool).index == 1
    assert router.route(spec("b2", system_b + tuple(unique_prompt(6, 40))), pool).index == 2
    # No cache holds it: the fewest outstanding requests (0 and 1 are idle; lowest index).
    assert router.route(spec("new", unique_prompt(7, 200)), pool).index == 0
    # Without prefix caching nothing is ever found.
    off = [replica(i, EngineConfig(num_gpu_blocks=400, enable_prefix_caching=False)) for i in range(2)]
    assert off[1].num_cached_prefix_blocks([1, 2]) == 0


def test_session_affinity_keeps_a_session_on_its_first_replica():
    pool = [replica(i) for i in range(2)]
    router = Router("session-affinity", session_of=lambda s: s.request_id.split("/")[0])
    assert router.route(spec("alice/1", unique_prompt(0, 32)), pool).index == 0
    pool[0].sim.submit(spec("alice/1", unique_prompt(0, 32)), 0)
    assert router.route(spec("bob/1", unique_prompt(1, 32)), pool).index == 1
    pool[1].sim.submit(spec("bob/1", unique_prompt(1, 32)), 1)
    pool[1].sim.submit(spec("carol/0", unique_prompt(2, 32)), 2)
    # Alice stays on 0 and Bob on 1 whatever the load.
    assert [router.route(spec(f"{who}/2", unique_prompt(3, 32)), pool).index for who in ("alice", "bob")] == [0, 1]
    # By default a session is the prompt's first block: a conversation's turns share their start.
    default = Router("session-affinity")
    turn = tuple(range(1000, 1016))
    first = default.route(spec("t1", turn + (1, 2)), pool).index
    assert default.route(spec("t2", turn + (1, 2, 3, 4)), pool).index == first


def fleet_scenario(router, replicas=3, seed=4):
    """Twelve system prompts of 32 blocks each; a replica's cache holds about five of them."""
    return ClusterScenario.from_dict({
        "model": "llama-3.1-8b", "gpu": "h200",
        "engine": {"num_gpu_blocks": 240, "max_num_batched_tokens": 512, "max_num_seqs": 32},
        "workload": {"num_requests": 120, "arrival_rate": 30.0, "lengths": "fixed", "prompt_len": 64, "output_len": 32,
                     "shared_prefix_len": 512, "num_shared_prefixes": 12, "seed": seed},
        "cluster": {"replicas": replicas, "router": router},
    })


def test_fleet_runs_are_deterministic_per_seed():
    runs = []
    for _ in range(2):
        fleet = fleet_scenario("least-kv").build()
        runs.append([(e.kind, e.time_s, e.replica, e.request_id, e.record) for e in fleet.events()])
    assert runs[0] == runs[1]
    other = fleet_scenario("least-kv", seed=5).build()
    assert [(e.kind, e.time_s) for e in other.events()] != [(e[0], e[1]) for e in runs[0]]


def test_prefix_aware_routing_raises_the_fleet_hit_rate_over_round_robin():
    """Three system prompts over three replicas: prefix-aware sends each prompt to the replica that
    caches it, round-robin spreads them over all three."""
    reports = {}
    for router in ("round-robin", "prefix-aware"):
        fleet = fleet_scenario(router).build()
        fleet.run()
        reports[router] = fleet_report(fleet)
    assert reports["prefix-aware"]["prefix_cache_hit_rate"] > reports["round-robin"]["prefix_cache_hit_rate"] + 0.05
    assert reports["prefix-aware"]["num_requests"] == reports["round-robin"]["num_requests"] == 120
    assert sum(reports["prefix-aware"]["router"]["decisions"].values()) == 120


def test_cluster_settings_are_checked_by_name():
    base = {"engine": {"num_gpu_blocks": 600}, "workload": {"num_requests": 4}}
    for cluster, field in (({"replicas": 0}, "cluster.replicas"), ({"router": "random"}, "cluster.router"),
                           ({"replica": 2}, "cluster.replica"), ({"prefill": {}}, "cluster.decode"),
                           ({"prefill": {"tp": 0}, "decode": {}}, "cluster.prefill.tensor_parallel_size"),
                           ({"prefill": {}, "decode": {}, "link": "pigeon"}, "cluster.link")):
        with pytest.raises(ConfigError) as error:
            ClusterScenario.from_dict({**base, "cluster": cluster})
        assert error.value.field == field
    with pytest.raises(ConfigError):
        Cluster([Simulation(CONFIG, [])], [spec("huge", unique_prompt(0, 4000))])


def test_servescope_run_takes_a_cluster_scenario(tmp_path, capsys):
    import json

    from scheduler_core.cli.main import main

    path = tmp_path / "fleet.toml"
    path.write_text('model = "llama-3.1-8b"\n[engine]\nnum_gpu_blocks = 600\n'
                    '[workload]\nnum_requests = 40\narrival_rate = 20.0\nlengths = "fixed"\nprompt_len = 300\noutput_len = 20\n'
                    '[cluster]\nrouter = "least-requests"\n[cluster.prefill]\nreplicas = 1\ntp = 2\n'
                    '[cluster.decode]\nreplicas = 2\n')
    assert main(["run", str(path), "--json", str(tmp_path / "out.json"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "prefill-0" in out and "decode-1" in out and "KV transfer over infiniband: 40 transfers" in out
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["num_requests"] == 40 and report["kv_transfer"]["num_blocks"] == 40 * 19
    assert [r["replica"] for r in report["replicas"]] == ["prefill-0", "decode-0", "decode-1"]
    assert report["scenario"]["cluster"]["prefill"]["tp"] == 2
    # --replicas turns any scenario into a fleet; bad values name their field.
    assert main(["run", "default", "--replicas", "2", "--router", "prefix-aware", "--num-requests", "20", "--no-progress"]) == 0
    assert "replica-1" in capsys.readouterr().out
    assert main(["run", "default", "--replicas", "0"]) == 2
    assert "cluster.replicas" in capsys.readouterr().err


def test_a_replica_alone_repeats_its_part_of_the_fleet():
    """The single-engine view of replica 1: the requests routed to it, through a lone engine,
    give the very step records the replica had in the fleet."""
    from scheduler_core.cluster.replica_view import ReplicaScenario

    scenario = fleet_scenario("prefix-aware", replicas=2)
    fleet = scenario.build()
    in_fleet = [e.record for e in fleet.events() if e.kind == "step" and e.replica == "replica-1"]
    alone = ReplicaScenario.of(scenario, "replica-1")
    assert len(alone.requests) == fleet.router.decisions["replica-1"]
    assert list(alone.build().records()) == in_fleet
    assert alone.to_dict()["fleet"]["cluster"]["replicas"] == 2
    with pytest.raises(ConfigError, match="replica-0, replica-1"):
        ReplicaScenario.of(scenario, "replica-7")


def test_fleet_timeline_frames_stay_within_budget():
    from scheduler_core.lessons.fleet_timeline import fleet_timeline

    timeline = fleet_timeline(fleet_scenario("round-robin").build(), max_frames=40, num_cells=50)
    assert len(timeline["frames"]) <= 42
    assert [r["name"] for r in timeline["replicas"]] == ["replica-0", "replica-1", "replica-2"]
    busy = [f for f in timeline["frames"] if any(r["running"] for r in f["replicas"])]
    assert busy and all(len(r["grid"]) <= 50 for f in timeline["frames"] for r in f["replicas"])
    assert any(set(r["grid"]) - {".", "c"} for f in busy for r in f["replicas"])
    assert timeline["num_events"] == 120 and timeline["events"][0]["kind"] == "route"
    assert timeline["frames"][-1]["replicas"][0]["finished"] == timeline["report"]["replicas"][0]["num_requests"]


def test_a_pool_on_another_gpu_takes_vllm_s_batch_defaults_for_that_gpu():
    """Batch limits left to vLLM's defaults on the scenario's H200 are an A100's defaults in a pool
    on A100s; limits the scenario sets stay as set."""
    def fleet(engine: dict) -> ClusterScenario:
        data = with_vllm_defaults({"model": "llama-3.1-8b", "gpu": "h200", "engine": engine,
                                   "workload": {"num_requests": 20, "arrival_rate": 5.0, "seed": 1}})
        data["cluster"] = {"prefill": {"replicas": 1}, "decode": {"replicas": 1, "gpu": "a100-40g"}}
        return ClusterScenario.from_dict(data, "split")

    split = fleet({})
    assert (split.prefill.engine.max_num_seqs, split.prefill.engine.max_num_batched_tokens) == (1024, 8192)
    assert (split.decode.engine.max_num_seqs, split.decode.engine.max_num_batched_tokens) == (256, 2048)
    pinned = fleet({"max_num_seqs": 128, "max_num_batched_tokens": 4096})
    assert (pinned.decode.engine.max_num_seqs, pinned.decode.engine.max_num_batched_tokens) == (128, 4096)
