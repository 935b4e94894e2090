"""vLLM's data-parallel load balancer: which engine core (DP rank) of one deployment gets a request.

vLLM 0.33.0's API server (`DPLBAsyncMPClient.get_core_engine_for_request`, vllm/v1/engine/core_client.py)
scores every rank from two things: the DP coordinator's latest snapshot of the rank's (waiting,
running, KV cache usage), which `DPCoordinatorProc` (vllm/v1/engine/coordinator.py) publishes at
most every 100 ms, and its own exact count of requests it sent there that have not finished:

    score = max(in flight, waiting + running) + waiting x 6 x max(0, KV usage - 0.5)

The lowest score wins, scanning from a start index that moves on by one after every request (so
equal scores go round-robin), and the chosen rank's `waiting` in the snapshot goes up by one until
the next snapshot replaces it. One API server is assumed (`client_count` 1). The snapshot is
taken at the first request at least 100 ms after the last one (vLLM's timer fires on its own;
between two requests nothing the balancer reads can differ but by the steps taken meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence

from .replica import Replica

# DPCoordinatorProc's min_stats_update_interval_ms.
STATS_UPDATE_INTERVAL_S = 0.1
# Waiting requests weigh more as the rank's KV cache fills past half (3x waiting when full).
KV_PRESSURE_WEIGHT = 6.0
KV_PRESSURE_FROM = 0.5


class DPLoadBalancer:
    """Chooses the DP rank for each request as vLLM's front end does, from stale counts plus its own."""

    def __init__(self, stats_interval_s: float = STATS_UPDATE_INTERVAL_S):
        self.stats_interval_s = stats_interval_s
        self.counts: list[list[float]] = []  # per rank: [waiting, running, kv usage] as last published
        self._next_snapshot_s = 0.0
        self._start = 0

    def publish(self, ranks: Sequence[Replica]) -> None:
        """The coordinator's snapshot of every rank's scheduler, as it is now."""
        self.counts = [[len(r.sim.scheduler.waiting), len(r.sim.scheduler.running), r.kv_usage] for r in ranks]

    def score(self, rank: int, in_flight: int) -> float:
        waiting, running, kv_usage = self.counts[rank]
        score = max(in_flight, waiting + running)
        if waiting:
            score += waiting * KV_PRESSURE_WEIGHT * max(0.0, kv_usage - KV_PRESSURE_FROM)
        return score

    def choose(self, ranks: Sequence[Replica], now_s: float) -> tuple[Replica, str]:
        """The rank for a request arriving at `now_s`, and why."""
        if now_s >= self._next_snapshot_s or len(self.counts) != len(ranks):
            self.publish(ranks)
            self._next_snapshot_s = now_s + self.stats_interval_s
        best, best_score = 0, float("inf")
        for i in range(len(ranks)):
            index = (self._start + i) % len(ranks)
            score = self.score(index, ranks[index].num_outstanding)
            if score < best_score:
                best, best_score = index, score
        self.counts[best][0] += 1
        self._start = (self._start + 1) % len(ranks)
        return ranks[best], f"lowest DP score {best_score:g}"
