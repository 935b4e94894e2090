"""What vLLM's Prometheus stat logger would hold after the same iterations (vLLM 0.33's
`PrometheusStatLogger`, fed by the engine's `IterationStats` and `SchedulerStats`).

vLLM counts at set points, and so does this, from the step records:
- an iteration's stats exist only if some request produced output in it (a new token, or its finish):
  a step of prompt chunks that sample nothing observes no `iteration_tokens_total`;
- a request's prompt is counted whole (`prompt_tokens`, by source: computed or found in the prefix
  cache) in the iteration of its first token, not chunk by chunk; generated tokens in the iteration
  that produced them, and one inter-token latency per output, however many tokens it carried
  (speculative decoding);
- a preemption is an event on the request, so it is counted with that request's next output;
- the per-request histograms (e2e, queue, prefill, decode, inference, preemptions, ...) are observed
  when it finishes, with its phases measured between its first schedule, first token and last token.
Gauges are set after each step, as vLLM's scheduler stats are.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..engine.request import Request, RequestStatus
from ..engine.step_record import StepRecord

# vLLM's bucket families (vllm/v1/metrics/buckets.py), upper bounds in seconds or in counts.
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                           240.0, 480.0, 960.0, 1920.0, 7680.0)
TIME_TO_FIRST_TOKEN_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                               10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
INTER_TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                               20.0, 40.0, 80.0)
ITERATION_TOKENS_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
REQUEST_PARAMS_N_BUCKETS = (1, 2, 5, 10, 20)
REQUEST_NUM_PREEMPTIONS_BUCKETS = (1, 2, 3, 4, 5, 10, 20)

# vLLM's `FinishReason`, as its `finished_reason` label spells them.
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
_FINISH_REASON_OF = {RequestStatus.FINISHED_STOPPED: "stop", RequestStatus.FINISHED_LENGTH_CAPPED: "length",
                     RequestStatus.FINISHED_ABORTED: "abort"}


def request_tokens_buckets(max_model_len: int) -> tuple[int, ...]:
    """The token-count family: 1, 2, 5, 10, 20, 50, ... up to max_model_len."""
    buckets, scale = [], 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > max_model_len:
                return tuple(buckets)
            buckets.append(mantissa * scale)
        scale *= 10


class FixedHistogram:
    """A Prometheus histogram: how many observations fell at or under each upper bound, their sum."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: Sequence[float]):
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound (+Inf)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def observe_all(self, values: Sequence[float]) -> None:
        """The values in turn (a decode step brings one inter-token latency per running request)."""
        counts, bounds, total = self.counts, self.bounds, self.sum
        for value in values:
            counts[bisect_left(bounds, value)] += 1
            total += value
        self.sum = total
        self.count += len(values)

    def cumulative(self) -> list[int]:
        """Counts at or under each bound, then +Inf (the `_bucket` samples)."""
        out, running = [], 0
        for count in self.counts:
            running += count
            out.append(running)
        return out


@dataclass(slots=True)
class _RequestStats:
    """vLLM's `RequestStateStats`: what the front end tracks of a request between its outputs."""

    num_generation_tokens: int = 0
    first_token_ts: float | None = None
    last_token_ts: float = 0.0
    # Preemptions not yet reported: vLLM reports them with the request's next output.
    num_unreported_preemptions: int = 0


class VllmStats:
    """Counters, gauges and histograms under vLLM's metric names (without the `vllm:` prefix)."""

    def __init__(self, max_model_len: int):
        self.num_requests_running = 0
        self.num_requests_waiting = 0
        self.kv_cache_usage_perc = 0.0
        self.num_preemptions = 0
        self.prompt_tokens = 0
        # `prompt_tokens_by_source`: local_compute and local_cache_hit (no KV connector here).
        self.prompt_tokens_computed = 0
        self.prompt_tokens_cached = 0
        self.generation_tokens = 0
        self.request_success = dict.fromkeys(FINISH_REASONS, 0)
        request_tokens = request_tokens_buckets(max_model_len)
        self.histograms = {
            "request_prompt_tokens": FixedHistogram(request_tokens),
            "request_generation_tokens": FixedHistogram(request_tokens),
            "iteration_tokens_total": FixedHistogram(ITERATION_TOKENS_BUCKETS),
            "request_max_num_generation_tokens": FixedHistogram(request_tokens),
            "request_params_n": FixedHistogram(REQUEST_PARAMS_N_BUCKETS),
            "request_params_max_tokens": FixedHistogram(request_tokens),
            "time_to_first_token_seconds": FixedHistogram(TIME_TO_FIRST_TOKEN_BUCKETS),
            "inter_token_latency_seconds": FixedHistogram(INTER_TOKEN_LATENCY_BUCKETS),
            "request_time_per_output_token_seconds": FixedHistogram(INTER_TOKEN_LATENCY_BUCKETS),
            "e2e_request_latency_seconds": FixedHistogram(REQUEST_LATENCY_BUCKETS),
            "request_queue_time_seconds": FixedHistogram(REQUEST_LATENCY_BUCKETS),
            "request_inference_time_seconds": FixedHistogram(REQUEST_LATENCY_BUCKETS),
            "request_prefill_time_seconds": FixedHistogram(REQUEST_LATENCY_BUCKETS),
            "request_decode_time_seconds": FixedHistogram(REQUEST_LATENCY_BUCKETS),
            "request_num_preemptions": FixedHistogram(REQUEST_NUM_PREEMPTIONS_BUCKETS),
            "request_prefill_kv_computed_tokens": FixedHistogram(request_tokens),
        }
        # Unfinished requests seen so far (dropped at their finish, so memory follows the batch).
        self._requests: dict[str, _RequestStats] = {}

    def record(self, record: StepRecord, requests: Mapping[str, Request], finished: Sequence[Request]) -> None:
        """One step: its outputs into the counters and histograms, its gauges set."""
        now, live = record.clock_s_after, self._requests
        for rid in record.preempted:
            live.setdefault(rid, _RequestStats()).num_unreported_preemptions += 1
        for rid in record.aborted:
            # A client's abort is no finished output: vLLM's front end drops the request's state
            # (OutputProcessor.abort_requests) and records nothing for it, not even request_success.
            live.pop(rid, None)
        finished_by_id = {request.request_id: request for request in finished}
        histograms = self.histograms
        ttft = histograms["time_to_first_token_seconds"]
        inter_token_latencies = []
        num_outputs = num_new_tokens = num_prompt_computed = 0
        for rid in dict.fromkeys([*record.sampled, *finished_by_id]) if finished else record.sampled:
            request = finished_by_id.get(rid) or requests.get(rid)
            if request is None:
                continue
            stats = live.get(rid)
            if stats is None:
                stats = live[rid] = _RequestStats()
            new_tokens = request.num_output_tokens - stats.num_generation_tokens
            if new_tokens <= 0 and rid not in finished_by_id:
                continue  # a stale output (async scheduling, preempted since): nothing reaches the client
            num_outputs += 1
            num_new_tokens += new_tokens
            stats.num_generation_tokens = request.num_output_tokens
            if stats.num_unreported_preemptions:
                self.num_preemptions += stats.num_unreported_preemptions
                stats.num_unreported_preemptions = 0
            if stats.first_token_ts is None:
                cached = max(request.num_cached_tokens, 0)
                self.prompt_tokens += request.num_prompt_tokens
                self.prompt_tokens_computed += request.num_prompt_tokens - cached
                self.prompt_tokens_cached += cached
                num_prompt_computed += request.num_prompt_tokens - cached
                ttft.observe(now - request.arrival_time)
                stats.first_token_ts = now
            else:
                inter_token_latencies.append(now - stats.last_token_ts)
            stats.last_token_ts = now
            if rid in finished_by_id:
                self._finish(request, live.pop(rid), now)
        histograms["inter_token_latency_seconds"].observe_all(inter_token_latencies)
        self.generation_tokens += num_new_tokens
        if num_outputs:
            histograms["iteration_tokens_total"].observe(num_prompt_computed + num_new_tokens)
        self.num_requests_running = record.num_running
        # vLLM V1 has no swapped queue: a request swapped out waits to run again.
        self.num_requests_waiting = record.num_waiting + record.num_swapped
        self.kv_cache_usage_perc = record.kv_usage

    def _finish(self, request: Request, stats: _RequestStats, now: float) -> None:
        """vLLM's `FinishedRequestStats`: the request's phases, observed once it has finished."""
        histograms = self.histograms
        self.request_success[_FINISH_REASON_OF.get(request.status, "length")] += 1
        scheduled = request.first_scheduled_time
        first, last = stats.first_token_ts, stats.last_token_ts
        decode_s = last - first
        histograms["e2e_request_latency_seconds"].observe(now - request.arrival_time)
        histograms["request_queue_time_seconds"].observe(scheduled - request.arrival_time)
        histograms["request_prefill_time_seconds"].observe(first - scheduled)
        histograms["request_inference_time_seconds"].observe(last - scheduled)
        histograms["request_decode_time_seconds"].observe(decode_s)
        histograms["request_num_preemptions"].observe(request.num_preemptions)
        histograms["request_prefill_kv_computed_tokens"].observe(request.num_prompt_tokens - max(request.num_cached_tokens, 0))
        histograms["request_prompt_tokens"].observe(request.num_prompt_tokens)
        histograms["request_generation_tokens"].observe(stats.num_generation_tokens)
        # The first token is the prefill's: the mean is over the tokens after it.
        tpot = decode_s / (stats.num_generation_tokens - 1) if stats.num_generation_tokens > 1 else 0.0
        histograms["request_time_per_output_token_seconds"].observe(tpot)
        histograms["request_max_num_generation_tokens"].observe(stats.num_generation_tokens)  # n = 1: the only one
        histograms["request_params_n"].observe(1)
        histograms["request_params_max_tokens"].observe(request.max_tokens)
