"""The engine's step loop over simulated time: arrivals -> schedule -> model step -> postprocess.

`Simulation` owns the clock, the scheduler (with its KV cache), the cost model and the metrics.
Each `step()` returns a `StepRecord`; `snapshot()` / `restore()` let a caller step back to any
earlier point.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..engine.config import EngineConfig
from ..engine.engine_loop import BatchQueueLoop
from ..engine.kv_cache import KVCacheView
from ..engine.kv_cache_manager import cdiv
from ..engine.policies import make_scheduler
from ..engine.policies.vllm_v0 import watermark_blocks
from ..engine.request import Request
from ..engine.scheduler import SchedulerOutput, UpdateResult
from ..engine.step_record import ScheduledChunk, StepRecord
from ..errors import ConfigError
from ..timing.cost_model import CostModel
from ..timing.host_time import NO_HOST_TIME, HostTime
from ..timing.presets import GPUS, MODELS
from ..workload.workload import RequestSpec, RequestTable, Workload
from .frozen_state import FrozenState
from .metrics import SLO, MetricsCollector


def arrival_order(workload: Workload) -> Sequence[int]:
    """Open loop: workload indices by arrival time, ties in workload order (a `range` when the
    workload is already in order, as synthetic workloads and loaded traces are)."""
    if workload.concurrency:
        return range(0)
    requests = workload.requests
    times = requests.arrival_time if isinstance(requests, RequestTable) else [spec.arrival_time for spec in requests]
    if all(a <= b for a, b in zip(times, times[1:])):
        return range(len(times))
    return sorted(range(len(times)), key=times.__getitem__)


class SimulationStalled(RuntimeError):
    """Nothing can run and nothing will arrive: the remaining requests can never be served."""


@dataclass(frozen=True)
class SimulationState:
    """An opaque copy of everything that changes as the simulation steps."""

    step_index: int
    clock_s: float
    next_arrival: int
    pending: list
    next_release: int
    # The scheduler, the engine loop and the metrics, frozen together so the copies share what
    # the originals share (the loop drives its scheduler, the metrics read its draft counters).
    frozen: FrozenState
    finished_requests: dict
    gpu_free_at: float = 0.0


class Simulation:
    def __init__(
        self,
        config: EngineConfig,
        workload: Workload | Sequence[RequestSpec],
        cost_model: CostModel | None = None,
        keep_finished: bool = True,
        slo: SLO = SLO(),
    ):
        if not isinstance(workload, Workload):
            workload = Workload(list(workload))
        self.config = config
        self.workload = workload
        self.cost_model = cost_model or CostModel(MODELS["llama-3.1-8b"], GPUS["h200"])
        self.host_time = HostTime() if config.policy == "vllm-v1" else NO_HOST_TIME
        # Finished requests stay inspectable unless a long headless run asks for bounded memory.
        self.keep_finished = keep_finished
        self.finished_requests: dict[str, Request] = {}
        self._validate_workload()
        self.scheduler = make_scheduler(config)
        # Async scheduling: vLLM's engine loop with a batch queue, and when the GPU is next free.
        self.engine_loop = BatchQueueLoop(self.scheduler) if config.async_scheduling else None
        self._gpu_free_at = 0.0
        self.metrics = MetricsCollector(config.block_size, slo)
        if config.speculative_config:
            self.metrics.spec_decode = self.scheduler.spec_stats
        self.step_index = 0
        self.clock_s = 0.0
        # Open loop: requests reach the engine in arrival order (ties in workload order), read
        # from the workload one at a time so a long run holds only those in flight. Closed loop:
        # a heap of (release time, order, spec), the first `concurrency` at once, one more per finish.
        self._arrival_order = arrival_order(workload)
        self._next_arrival = 0
        first = min(workload.concurrency, len(workload.requests))
        self._pending = [(0.0, i, workload.requests[i]) for i in range(first)]
        self._next_release = first
        # Requests whose KV arrived from another engine (`receive_external_kv`), until admitted.
        self._external_computed: dict[str, int] = {}

    def _validate_workload(self) -> None:
        self.validate_requests(self.workload.requests)

    def validate_requests(self, specs: Sequence[RequestSpec]) -> None:
        """Raise ConfigError for a request this engine could never serve (or a duplicate id)."""
        config = self.config
        usable_blocks = config.num_gpu_blocks - 1
        if config.policy == "vllm-v0":
            # V0 admits only above its watermark (vLLM V0 would mark such a request ignored).
            usable_blocks -= watermark_blocks(config.num_gpu_blocks)
        # A synthetic workload numbers its requests, so only other workloads can repeat an id.
        check_ids = not isinstance(self.workload.requests, RequestTable)
        seen = set()
        for spec in specs:
            where = f"workload[{spec.request_id}]"
            if check_ids:
                if spec.request_id in seen:
                    raise ConfigError(f"{where}.request_id", "duplicate request id")
                seen.add(spec.request_id)
            if len(spec.prompt_token_ids) > config.max_model_len:
                raise ConfigError(
                    f"{where}.prompt_token_ids",
                    f"prompt of {len(spec.prompt_token_ids)} tokens exceeds max_model_len={config.max_model_len}",
                )
            if config.kv_allocator == "contiguous":
                needed = cdiv(config.max_model_len, config.block_size)
            else:
                needed = cdiv(min(len(spec.prompt_token_ids) + spec.max_tokens, config.max_model_len), config.block_size)
            if needed > usable_blocks:
                raise ConfigError(
                    "num_gpu_blocks",
                    f"request {spec.request_id} needs {needed} blocks at its longest but the pool has {usable_blocks}",
                )

    # -- fed from outside (a cluster's router) -------------------------------------------------
    def submit(self, spec: RequestSpec, order: int) -> None:
        """Hand this engine one more request; it arrives at `spec.arrival_time` (order breaks ties)."""
        heapq.heappush(self._pending, (spec.arrival_time, order, spec))

    def receive_external_kv(self, request_id: str, num_tokens: int) -> None:
        """`num_tokens` of this request's KV came from another engine (a prefill replica's, through a
        KV connector). vLLM counts them in its external prefix-cache stats
        (`vllm:external_prefix_cache_hits`), not as hits of this engine's prefix cache."""
        self._external_computed[request_id] = num_tokens

    @property
    def num_pending(self) -> int:
        """Requests handed to this engine that have not arrived yet."""
        return len(self._pending)

    def next_step_time(self) -> float | None:
        """When the next step would start, or None while there is nothing to do or to wait for."""
        if self.scheduler.has_unfinished_requests():
            return self.clock_s
        return max(self.clock_s, self._pending[0][0]) if self._pending else None

    # -- stepping ---------------------------------------------------------------------------
    def receive_external_kv(self, request_id: str, num_tokens: int) -> None:
        """`num_tokens` of this request's KV came from another engine (a prefill replica's, through a
        KV connector). vLLM counts them in its external prefix-cache stats
        (`vllm:external_prefix_cache_hits`), not as hits of this engine's prefix cache."""
        self._external_computed[request_id] = num_tokens

    @property
    def num_pending(self) -> int:
        """Requests of the workload that have not reached the engine yet."""
        unreleased = len(self.workload.requests) - self._next_release if self.workload.concurrency else 0
        return len(self._arrival_order) - self._next_arrival + len(self._pending) + unreleased

    def _next_arrival_time(self) -> float | None:
        if self._pending:
            return self._pending[0][0]
        if self._next_arrival < len(self._arrival_order):
            return self.workload.requests[self._arrival_order[self._next_arrival]].arrival_time
        return None

    @property
    def done(self) -> bool:
        return self._next_arrival_time() is None and not self.scheduler.has_unfinished_requests()

    @property
    def num_requests(self) -> int:
        return len(self.workload.requests)

    def _now(self) -> float:
        """What arrival times are measured against: the clock, or the step for step-indexed traces."""
        return self.step_index if self.workload.arrivals_by_step else self.clock_s

    def _add_arrivals(self) -> list[str]:
        arrived = []
        now = self._now()
        while (arrival_time := self._next_arrival_time()) is not None and arrival_time <= now:
            if self._pending:
                _, order, spec = heapq.heappop(self._pending)
            else:
                order = self._arrival_order[self._next_arrival]
                spec = self.workload.requests[order]
                self._next_arrival += 1
            request = Request(
                spec.request_id,
                spec.prompt_token_ids,
                spec.max_tokens,
                arrival_time=self.clock_s if self.workload.arrivals_by_step else arrival_time,
                priority=spec.priority,
                arrival_index=order,
            )
            self.scheduler.add_request(request)
            arrived.append(spec.request_id)
        return arrived

    def _release_next(self, now: float) -> None:
        """Closed loop: a client whose request finished sends its next one now."""
        if self.workload.concurrency and self._next_release < len(self.workload.requests):
            spec = self.workload.requests[self._next_release]
            heapq.heappush(self._pending, (now, self._next_release, dataclasses.replace(spec, arrival_time=now)))
            self._next_release += 1

    def step(self) -> StepRecord:
        """Run one engine iteration and return what it did."""
        if self.done:
            raise StopIteration("the simulation has finished every request")
        scheduler, kv = self.scheduler, self.scheduler.kv_cache_manager
        if not scheduler.has_unfinished_requests() and not self.workload.arrivals_by_step:
            # An idle engine waits for the next request; the clock jumps to its arrival.
            self.clock_s = max(self.clock_s, self._next_arrival_time())
        clock_before = self.clock_s
        arrived = self._add_arrivals()
        allocated, freed, evicted, hit = kv.counters()
        trace = scheduler.decision_trace
        if trace is not None:
            trace.start_step(scheduler)

        requests = scheduler.requests
        if self.engine_loop is None:
            output = scheduler.schedule(now=clock_before)
            scheduled = self._chunks(output)
        else:
            engine_pass = self.engine_loop.step(clock_before, self._async_batch_done_at)
            output = engine_pass.scheduled or SchedulerOutput()
            scheduled = self._chunks(output)
        if not scheduled and not scheduler.running and not output.preempted_reqs and not self._batches_in_flight:
            if self._next_arrival_time() is None:
                raise SimulationStalled(
                    f"step {self.step_index}: nothing can be scheduled and no request will arrive "
                    f"({len(scheduler.waiting)} waiting, {kv.num_free_blocks} free blocks)"
                )
            # Blocked until the next arrival changes something.
            if not self.workload.arrivals_by_step:
                self.clock_s = max(self.clock_s, self._next_arrival_time())

        if self.engine_loop is None:
            step_s, breakdown = self._gpu_time(output)
            host_s = self.host_time.seconds(len(scheduled))
            if host_s:
                # Synchronous scheduling: the GPU waits for the host's work on every step.
                breakdown["host"] = host_s
                step_s += host_s
            clock_after = max(self.clock_s, clock_before + step_s)
            result = scheduler.update_from_output(output, now=clock_after)
        else:
            # The pass returns at once while the GPU runs (only its CPU scheduling time), or waits
            # for the oldest batch in flight to come back.
            breakdown = self._gpu_time(output)[1] if scheduled else {}
            if engine_pass.completed is None:
                clock_after = max(self.clock_s, clock_before + self.host_time.seconds(len(scheduled)))
            else:
                clock_after = max(self.clock_s, engine_pass.completed_at)
            result = engine_pass.update or UpdateResult([], [])
        allocated_after, freed_after, evicted_after, hit_after = kv.counters()
        kv_events = kv.take_events()

        metrics = self.metrics
        external = ({rid: self._external_computed.pop(rid) for rid in output.num_cached_tokens
                     if rid in self._external_computed} if self._external_computed else {})
        if kv.enable_caching:
            for rid, num_cached in output.num_cached_tokens.items():
                request = requests.get(rid) or next(r for r in result.finished if r.request_id == rid)
                metrics.observe_admission(request.num_tokens - (rid in result.sampled and self.engine_loop is None),
                                          num_cached - external.get(rid, 0))
        for request in result.finished:
            metrics.observe_finished(request)
            if self.keep_finished:
                self.finished_requests[request.request_id] = request
            self._release_next(clock_after)

        record = StepRecord(
            step=self.step_index,
            clock_s_before=clock_before,
            clock_s_after=clock_after,
            step_s=clock_after - clock_before,
            scheduled=scheduled,
            arrived=arrived,
            admitted=output.scheduled_new_reqs,
            resumed=output.scheduled_resumed_reqs,
            preempted=output.preempted_reqs,
            finished=[request.request_id for request in result.finished],
            sampled=result.sampled,
            cached_tokens=output.num_cached_tokens,
            swapped_out=output.swapped_out,
            swapped_in=output.swapped_in,
            num_blocks_allocated=allocated_after - allocated,
            num_blocks_freed=freed_after - freed,
            num_blocks_evicted=evicted_after - evicted,
            num_blocks_hit=hit_after - hit,
            num_running=len(scheduler.running),
            num_waiting=len(scheduler.waiting),
            num_swapped=len(scheduler.swapped),
            num_free_blocks=kv.num_free_blocks,
            kv_usage=kv.usage,
            cost_breakdown=breakdown,
            decisions=trace.end_step(output.preempted_reqs, kv_events) if trace is not None else None,
            scheduled_spec_decode_tokens=output.scheduled_spec_decode_tokens,
            num_accepted_tokens=result.num_accepted,
            kv_events=kv_events,
        )
        tokens_in_cache = sum(r.num_computed_tokens for r in scheduler.running) - kv.num_shared_slots
        metrics.observe_step(record, kv.num_used_blocks, tokens_in_cache)
        self.step_index += 1
        self.clock_s = clock_after
        return record

    def _chunks(self, output: SchedulerOutput) -> list[ScheduledChunk]:
        requests = self.scheduler.requests
        sampling = set(output.sampling_reqs)
        chunks = []
        for rid, num_tokens in output.num_scheduled_tokens.items():
            computed_before = output.num_computed_before[rid]
            # (Under async scheduling the request may already have finished in this pass's update.)
            request = requests.get(rid) or self.finished_requests.get(rid)
            num_prompt_tokens = request.num_prompt_tokens if request else 0
            # A decode is one token, plus the drafts it verifies under speculative decoding.
            num_drafts = output.scheduled_spec_decode_tokens.get(rid, 0)
            decode = num_tokens == 1 + num_drafts and rid in sampling and computed_before >= num_prompt_tokens
            chunks.append(ScheduledChunk(rid, num_tokens, computed_before, "decode" if decode else "prefill"))
        return chunks

    def _gpu_time(self, output: SchedulerOutput) -> tuple[float, dict[str, float]]:
        """The batch's time on the GPU from the cost model (verification of drafts included: they
        are tokens of the batch), drafting, and any swapping; the host's work is not in it."""
        step_s, breakdown = self.cost_model.step_time(
            ((n, output.num_computed_before[rid]) for rid, n in output.num_scheduled_tokens.items()),
            len(output.sampling_reqs),
        )
        spec = self.config.speculative_config
        if spec and output.sampling_reqs:
            # The drafter proposes the next drafts for every request that samples.
            breakdown["draft"] = self.cost_model.draft_time(spec.method, spec.num_speculative_tokens, len(output.sampling_reqs))
            step_s += breakdown["draft"]
        num_swapped_blocks = sum(n for _, n in output.swapped_out) + sum(n for _, n in output.swapped_in)
        if num_swapped_blocks:
            breakdown["swap"] = self.cost_model.swap_time(num_swapped_blocks, self.config.block_size)
            step_s += breakdown["swap"]
        return step_s, breakdown

    def _async_batch_done_at(self, output: SchedulerOutput) -> float:
        """When a batch scheduled now comes back: the CPU prepares it while the GPU still runs the
        one before, so the batch starts once both are done."""
        gpu_s, _ = self._gpu_time(output)
        start = max(self._gpu_free_at, self.clock_s + self.host_time.seconds(len(output.num_scheduled_tokens)))
        self._gpu_free_at = start + gpu_s
        return self._gpu_free_at

    @property
    def _batches_in_flight(self) -> int:
        return len(self.engine_loop.in_flight) if self.engine_loop else 0

    def records(self, max_steps: int | None = None) -> Iterator[StepRecord]:
        """Step until every request has finished (or `max_steps` more steps), yielding each record."""
        count = 0
        while not self.done and (max_steps is None or count < max_steps):
            yield self.step()
            count += 1

    def run(self, max_steps: int | None = None) -> int:
        """Step to the end without keeping records; returns the number of steps taken."""
        return sum(1 for _ in self.records(max_steps))

    # -- stepping back ----------------------------------------------------------------------
    def snapshot(self) -> SimulationState:
        """Everything needed to resume from this exact point (O(requests + blocks))."""
        # Finished requests never change again, so the snapshot shares them.
        return SimulationState(
            self.step_index,
            self.clock_s,
            self._next_arrival,
            list(self._pending),
            self._next_release,
            FrozenState((self.scheduler, self.engine_loop, self.metrics)),
            dict(self.finished_requests),
            self._gpu_free_at,
        )

    def restore(self, state: SimulationState) -> None:
        """Return to a snapshot; the snapshot stays valid for further restores."""
        self.step_index = state.step_index
        self.clock_s = state.clock_s
        self._next_arrival = state.next_arrival
        self._pending = list(state.pending)
        self._next_release = state.next_release
        self.scheduler, self.engine_loop, self.metrics = state.frozen.thaw()
        self._gpu_free_at = state.gpu_free_at
        self.finished_requests = dict(state.finished_requests)

    # -- read-only views --------------------------------------------------------------------
    def enable_kv_events(self) -> None:
        """From now on each step's record carries the KV cache's events (`StepRecord.kv_events`),
        for viewers that redraw only the blocks and tables that changed."""
        self.scheduler.kv_cache_manager.enable_events()

    def kv_view(self) -> KVCacheView:
        """A read-only look at the KV cache as it is now (ask again after `restore`)."""
        return KVCacheView(self.scheduler.kv_cache_manager)

    def request(self, request_id: str) -> Request:
        """A request that has arrived, unfinished or finished (if kept)."""
        return self.scheduler.requests.get(request_id) or self.finished_requests[request_id]

    def block_table(self, request_id: str) -> tuple[int, ...]:
        return tuple(self.scheduler.kv_cache_manager.get_block_ids(request_id))

    def queue_ids(self) -> dict[str, list[str]]:
        scheduler = self.scheduler
        return {
            "waiting": [r.request_id for r in scheduler.waiting],
            "running": [r.request_id for r in scheduler.running],
            "swapped": [r.request_id for r in scheduler.swapped],
        }
