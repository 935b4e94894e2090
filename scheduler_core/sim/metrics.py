"""What a user of the engine would measure, aggregated as the simulation streams.

Latency distributions go into log-bucketed histograms (0.5% relative resolution), so a run of a
million requests keeps the same memory as a run of a hundred; means and counts are exact.
Names follow vLLM's benchmark reports (TTFT, TPOT, ITL, E2E) and its Prometheus metrics.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.request import Request
from ..engine.step_record import StepRecord
from ..utils import cdiv

PERCENTILES = (50, 90, 95, 99)


class StreamingHistogram:
    """Positive values in buckets of relative width `resolution`; exact count, sum, min and max."""

    # Bucket indices of recent values, kept because they repeat: the requests finishing in one
    # step ran mostly the same steps, so they bring the same inter-token latencies (32 requests
    # of 512 tokens finishing together cost 14 ms of logarithms without it, 3 ms with it).
    MAX_REMEMBERED = 4096

    def __init__(self, resolution: float = 0.005, smallest: float = 1e-7):
        self._log_base = math.log1p(resolution)
        self._smallest = smallest
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0
        self._index_of: dict[float, int] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_index_of": {}}  # a cache: checkpoints need not carry it

    def add(self, value: float) -> None:
        self.add_all((value,))

    def add_all(self, values: Sequence[float]) -> None:
        """The values in turn (the same total, to the last bit, as adding them one by one), at a
        fraction of the cost: a finishing request brings one inter-token latency per output token."""
        if not values:
            return
        self.count += len(values)
        total = self.total
        for value in values:  # not sum(): since Python 3.12 it compensates, and totals would differ
            total += value
        self.total = total
        self.min = min(self.min, min(values))
        self.max = max(self.max, max(values))
        log, smallest, log_base, buckets = math.log, self._smallest, self._log_base, self.buckets
        index_of = self._index_of
        if len(index_of) > self.MAX_REMEMBERED:
            index_of.clear()
        known = index_of.get
        indices = []
        for value in values:
            index = known(value)
            if index is None:
                index = index_of[value] = int(log(max(value, smallest) / smallest) / log_base)
            indices.append(index)
        for index, count in Counter(indices).items():
            buckets[index] = buckets.get(index, 0) + count

    def _value_at_rank(self, rank: int) -> float:
        """The rank-th smallest value (0-based), to within the bucket resolution."""
        if rank <= 0:
            return self.min
        if rank >= self.count - 1:
            return self.max
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen > rank:
                middle = self._smallest * math.exp((index + 0.5) * self._log_base)
                return min(self.max, max(self.min, middle))
        return self.max

    def percentile(self, q: float) -> float:
        """The q-th percentile, interpolated between order statistics as numpy does (vLLM's
        benchmarks use numpy), each order statistic to within the bucket resolution."""
        if not self.count:
            return math.nan
        rank = q / 100 * (self.count - 1)
        low = math.floor(rank)
        low_value = self._value_at_rank(low)
        if rank == low:
            return low_value
        return low_value + (self._value_at_rank(low + 1) - low_value) * (rank - low)

    def bins(self, max_bins: int = 60) -> list[list[float]]:
        """[[lower bound, count], ...] ascending, adjacent buckets merged to at most `max_bins`."""
        items = sorted(self.buckets.items())
        merge = max(1, cdiv(len(items), max_bins))
        return [
            [self._smallest * math.exp(items[start][0] * self._log_base), sum(c for _, c in items[start : start + merge])]
            for start in range(0, len(items), merge)
        ]

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    def summary(self) -> dict[str, float]:
        out = {"mean": self.mean}
        out.update({f"p{q}": self.percentile(q) for q in PERCENTILES})
        return out


@dataclass(frozen=True)
class SLO:
    """Service-level objectives for goodput: a request counts if it meets both."""

    ttft_s: float = math.inf
    tpot_s: float = math.inf


class MetricsCollector:
    """Fed every step record and every finished request; reports vLLM-benchmark metrics."""

    def __init__(self, block_size: int, slo: SLO = SLO()):
        self.block_size = block_size
        # The scheduler's spec-decode counters, when drafts are on (reported under vLLM's names).
        self.spec_decode = None
        # vLLM's Prometheus counters, when a caller asked for them (Simulation.enable_vllm_stats).
        self.vllm = None
        # The API server of a served run (sim/api_server.py), whose share of the latencies is reported.
        self.front_end = None
        self.slo = slo
        self.ttft = StreamingHistogram()
        self.tpot = StreamingHistogram()
        self.itl = StreamingHistogram()
        self.e2e = StreamingHistogram()
        self.queue = StreamingHistogram()
        self.num_finished = 0
        self.num_good = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.num_steps = 0
        self.num_preemptions = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.first_arrival_s = math.inf
        self.last_finish_s = 0.0
        self.busy_s = 0.0
        # Time-weighted sums over simulated time (step_s x gauge).
        self.kv_usage_weighted = 0.0
        self.fragmentation_weighted = 0.0
        self.fragmentation_time = 0.0

    def observe_step(self, record: StepRecord, num_used_blocks: int, num_tokens_in_cache: int) -> None:
        self.num_steps += 1
        self.num_preemptions += len(record.preempted)
        self.busy_s += record.step_s
        self.kv_usage_weighted += record.kv_usage * record.step_s
        if num_used_blocks:
            allocated_slots = num_used_blocks * self.block_size
            self.fragmentation_weighted += (1 - num_tokens_in_cache / allocated_slots) * record.step_s
            self.fragmentation_time += record.step_s

    def observe_finished(self, request: Request) -> None:
        times = request.token_times
        self.num_finished += 1
        self.input_tokens += request.num_prompt_tokens
        self.output_tokens += request.num_output_tokens
        self.first_arrival_s = min(self.first_arrival_s, request.arrival_time)
        self.last_finish_s = max(self.last_finish_s, request.finish_time)
        ttft = times[0] - request.arrival_time
        e2e = request.finish_time - request.arrival_time
        self.ttft.add(ttft)
        self.e2e.add(e2e)
        self.queue.add(request.first_scheduled_time - request.arrival_time)
        tpot = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
        if len(times) > 1:
            self.tpot.add(tpot)
            self.itl.add_all([later - earlier for earlier, later in zip(times, times[1:])])
        if ttft <= self.slo.ttft_s and tpot <= self.slo.tpot_s:
            self.num_good += 1

    def report(self, wall_s: float = math.nan) -> dict:
        """Every metric, under stable key names (documented in the README)."""
        duration = self.last_finish_s - self.first_arrival_s if self.num_finished else 0.0
        per_s = (lambda n: n / duration) if duration > 0 else (lambda n: math.nan)
        return {
            "num_requests": self.num_finished,
            "num_steps": self.num_steps,
            "simulated_s": duration,
            "wall_s": wall_s,
            "requests_per_s": per_s(self.num_finished),
            "input_tokens_per_s": per_s(self.input_tokens),
            "output_tokens_per_s": per_s(self.output_tokens),
            "goodput_requests_per_s": per_s(self.num_good),
            "slo_attainment": self.num_good / self.num_finished if self.num_finished else math.nan,
            "ttft_s": self.ttft.summary(),
            "tpot_s": self.tpot.summary(),
            "itl_s": self.itl.summary(),
            "e2e_s": self.e2e.summary(),
            "queue_s": self.queue.summary(),
            "preemptions": self.num_preemptions,
            "kv_usage_mean": self.kv_usage_weighted / self.busy_s if self.busy_s else 0.0,
            "fragmentation": self.fragmentation_weighted / self.fragmentation_time if self.fragmentation_time else 0.0,
            "prefix_cache_hit_rate": self.prefix_hits / self.prefix_queries if self.prefix_queries else 0.0,
            **(self.spec_decode.report() if self.spec_decode is not None else {}),
            **(self.front_end.report() if self.front_end is not None else {}),
        }
