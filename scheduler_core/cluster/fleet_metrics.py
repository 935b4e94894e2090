"""A fleet's metrics: each replica's report, and the fleet's under the same keys.

The fleet's latencies and throughput are what its users see: every colocated replica's finished
requests, or in a disaggregated fleet the decode pool's (its requests carry their original
arrival time, so TTFT spans prefill, transfer and the first decode step). Gauges (KV usage,
fragmentation), preemptions and prefix-cache counts add up over every replica.
"""

from __future__ import annotations

import math

from ..sim.api_server import APIServer
from ..sim.metrics import MetricsCollector, StreamingHistogram
from .cluster import Cluster

LATENCIES = ("ttft", "tpot", "itl", "e2e", "queue")


def merge_histograms(into: StreamingHistogram, other: StreamingHistogram) -> None:
    for index, count in other.buckets.items():
        into.buckets[index] = into.buckets.get(index, 0) + count
    into.count += other.count
    into.total += other.total
    into.min = min(into.min, other.min)
    into.max = max(into.max, other.max)


def merge_metrics(user_facing: list[MetricsCollector], others: list[MetricsCollector]) -> MetricsCollector:
    """One collector for the fleet: latencies from `user_facing`, counts and gauges from all."""
    fleet = MetricsCollector(user_facing[0].block_size, user_facing[0].slo)
    for collector in user_facing:
        for name in LATENCIES:
            merge_histograms(getattr(fleet, name), getattr(collector, name))
        for name in ("num_finished", "num_good", "input_tokens", "output_tokens"):
            setattr(fleet, name, getattr(fleet, name) + getattr(collector, name))
        fleet.first_arrival_s = min(fleet.first_arrival_s, collector.first_arrival_s)
        fleet.last_finish_s = max(fleet.last_finish_s, collector.last_finish_s)
    for collector in user_facing + others:
        for name in ("num_steps", "num_preemptions", "prefix_queries", "prefix_hits", "busy_s",
                     "kv_usage_weighted", "fragmentation_weighted", "fragmentation_time"):
            setattr(fleet, name, getattr(fleet, name) + getattr(collector, name))
    if servers := [collector.front_end for collector in user_facing + others if collector.front_end is not None]:
        fleet.front_end = APIServer.merged(servers)
    return fleet


def fleet_report(cluster: Cluster, wall_s: float = math.nan) -> dict:
    """The fleet's metrics (the single engine's keys), then per replica, the router's decisions
    and the KV transfers."""
    user_facing = cluster.decode_pool if cluster.disaggregated else cluster.entry_pool
    others = cluster.entry_pool if cluster.disaggregated else []
    fleet = merge_metrics([r.sim.metrics for r in user_facing], [r.sim.metrics for r in others])
    report = fleet.report(wall_s)
    report["replicas"] = [
        {"replica": replica.name, "role": replica.role, **replica.sim.metrics.report()} for replica in cluster.replicas
    ]
    for entry in report["replicas"]:
        del entry["wall_s"]
    report["router"] = {"policy": cluster.router.policy, "decisions": dict(sorted(cluster.router.decisions.items()))}
    if cluster.lockstep is not None:
        # An MoE model's DP ranks: steps taken together, and the dummy batches idle ranks ran in them.
        report["lockstep"] = {"num_steps": cluster.lockstep.num_steps, "num_dummy_batches": cluster.lockstep.num_dummy_batches}
    if cluster.disaggregated:
        totals = cluster.transfers
        report["decode_router"] = {"policy": cluster.decode_router.policy,
                                   "decisions": dict(sorted(cluster.decode_router.decisions.items()))}
        report["kv_transfer"] = {
            "link": cluster.link.name,
            "num_transfers": totals.num_transfers,
            "num_blocks": totals.num_blocks,
            "bytes": totals.num_bytes,
            "seconds_total": totals.seconds,
            "seconds_mean": totals.seconds / totals.num_transfers if totals.num_transfers else 0.0,
        }
    return report

