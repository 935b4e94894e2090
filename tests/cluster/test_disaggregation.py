"""Disaggregated prefill and decode: a request prefills on one pool, its KV moves over a link, and
the other pool decodes it; TTFT spans all three."""

import pytest

from scheduler_core.cluster import LINKS, Cluster, fleet_report, kv_transfer_cost
from scheduler_core.cluster.scenario import ClusterScenario
from scheduler_core.engine.config import EngineConfig
from scheduler_core.sim.simulation import Simulation
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.host_time import HostTime
from scheduler_core.timing.presets import GPUS, MODELS
from scheduler_core.workload.workload import RequestSpec, unique_prompt

MODEL = MODELS["llama-3.1-8b"]
PREFILL_COST = CostModel(MODEL, GPUS["h100-sxm"], tp=2)
DECODE_COST = CostModel(MODEL, GPUS["h200"], tp=1)


def split_fleet(requests, link="infiniband", decode_blocks=400):
    prefill = Simulation(EngineConfig(num_gpu_blocks=400, max_num_batched_tokens=2048), [], PREFILL_COST)
    decode = Simulation(EngineConfig(num_gpu_blocks=decode_blocks, max_num_batched_tokens=256), [], DECODE_COST)
    return Cluster([prefill], requests, decode=[decode], link=LINKS[link])


@pytest.mark.parametrize("link", sorted(LINKS))
def test_ttft_is_prefill_plus_transfer_plus_first_decode(link):
    arrival = 0.5
    fleet = split_fleet([RequestSpec("r", arrival, unique_prompt(0, 512), 4)], link)
    events = list(fleet.events())
    prefill_s = PREFILL_COST.step_time([(512, 0)], 1)[0]
    transfer = kv_transfer_cost(MODEL, LINKS[link], 511, 16, prefill_tp=2, decode_tp=1)
    first_decode_s = DECODE_COST.step_time([(1, 511)], 1)[0]
    assert transfer.num_blocks == 32 and transfer.num_bytes == 32 * 16 * MODEL.kv_bytes_per_token
    assert transfer.seconds == pytest.approx(LINKS[link].latency_s + transfer.num_bytes / LINKS[link].bandwidth)

    report = fleet_report(fleet)
    # Each replica's engine steps synchronously: its host's work for that one request comes on top.
    host_s = HostTime().seconds(1)
    assert report["ttft_s"]["mean"] == pytest.approx(prefill_s + host_s + transfer.seconds + first_decode_s + host_s, rel=1e-12)
    assert [e.kind for e in events] == ["route", "step", "transfer", "landed"] + ["step"] * 4
    assert events[2].time_s == pytest.approx(arrival + prefill_s + host_s)
    assert events[3].time_s == pytest.approx(arrival + prefill_s + host_s + transfer.seconds)
    # The decode pool computed the last prompt token over the transferred 511, then three decodes.
    first = events[4].record
    assert [(c.num_tokens, c.num_computed_before) for c in first.scheduled] == [(1, 511)]
    assert report["num_requests"] == 1 and report["replicas"][1]["num_requests"] == 1
    assert report["kv_transfer"] == {"link": link, "num_transfers": 1, "num_blocks": 32, "bytes": transfer.num_bytes,
                                     "seconds_total": transfer.seconds, "seconds_mean": transfer.seconds}
    # Later tokens come at the decode pool's step time: TPOT is its decode cost and its host's work.
    assert report["tpot_s"]["mean"] == pytest.approx(
        sum(DECODE_COST.step_time([(1, 512 + i)], 1)[0] + host_s for i in range(3)) / 3, rel=1e-3)


def test_transferred_kv_is_not_a_prefix_cache_hit_of_the_decode_replica():
    """The decode replica holds the prompt's KV because it was sent there, not because its prefix
    cache had it: as in vLLM (its external prefix-cache stats are apart from the local cache's), the
    decode side looks the prompt up and finds nothing; only a prompt seen before is a hit."""
    shared = unique_prompt(0, 512)
    requests = [RequestSpec("first", 0.0, shared, 4), RequestSpec("again", 1.0, shared, 4)]
    fleet = split_fleet(requests)
    for _ in fleet.events():
        pass
    report = fleet_report(fleet)
    prefill, decode = report["replicas"]
    assert decode["prefix_cache_hit_rate"] == 0.0
    # The prefill replica's second look-up finds the first request's 31 full blocks (496 tokens).
    assert prefill["prefix_cache_hit_rate"] == pytest.approx(496 / 1024)
    assert report["prefix_cache_hit_rate"] == pytest.approx(496 / 2048)


def test_decode_pool_kv_fills_with_transferred_blocks_and_waits_for_room():
    """Two 512-token prompts but room for one: the second transfer starts only when the first
    request's blocks come back."""
    requests = [RequestSpec(f"r{i}", 0.0, unique_prompt(i, 512), 8) for i in range(2)]
    fleet = split_fleet(requests, decode_blocks=40)
    decode = fleet.decode_pool[0].sim
    transfers = []
    for event in fleet.events():
        if event.kind == "transfer":
            transfers.append(event)
            if len(transfers) == 1:
                # The whole prompt's 32 blocks are the decode side's before a byte arrives.
                assert decode.scheduler.kv_cache_manager.num_used_blocks == 32
    assert len(transfers) == 2
    finish_first = decode.metrics.last_finish_s  # both finished: the second strictly later
    assert transfers[1].time_s > transfers[0].time_s
    assert fleet_report(fleet)["num_requests"] == 2 and finish_first > transfers[1].time_s


def test_disaggregated_scenario_builds_its_pools():
    scenario = ClusterScenario.from_dict({
        "model": "llama-3.1-8b", "gpu": "h200",
        "workload": {"num_requests": 40, "arrival_rate": 8.0, "lengths": "fixed", "prompt_len": 1024, "output_len": 64},
        "cluster": {"link": "nvlink", "prefill": {"replicas": 1, "tp": 2, "gpu": "h100-sxm"},
                    "decode": {"replicas": 2, "engine": {"max_num_seqs": 64}}},
    })
    assert scenario.num_gpus == 4
    fleet = scenario.build()
    assert [r.name for r in fleet.replicas] == ["prefill-0", "decode-0", "decode-1"]
    assert fleet.entry_pool[0].sim.cost_model.tp == 2 and fleet.decode_pool[1].sim.config.max_num_seqs == 64
    fleet.run()
    report = fleet_report(fleet)
    assert report["num_requests"] == 40 and report["kv_transfer"]["num_transfers"] == 40
    assert report["kv_transfer"]["num_blocks"] == 40 * 64
    assert sum(report["decode_router"]["decisions"].values()) == 40
    assert ClusterScenario.from_dict(scenario.to_dict()).to_dict() == scenario.to_dict()


def test_an_mla_transfer_sends_the_whole_latent_over_each_link():
    link = LINKS["infiniband"]
    one = kv_transfer_cost(MODELS["deepseek-r1"], link, 1024, 16, 1, 1)
    eight = kv_transfer_cost(MODELS["deepseek-r1"], link, 1024, 16, 8, 8)
    assert one.num_bytes == 1024 * 70_272 and eight.seconds == pytest.approx(one.seconds)
