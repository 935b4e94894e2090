"""The engine's step loop over simulated time: arrivals -> schedule -> model step -> postprocess.

`Simulation` owns the clock, the scheduler (with its KV cache), the cost model and the metrics.
Each `step()` returns a `StepRecord`; `snapshot()` / `restore()` let a caller step back to any
earlier point.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..engine.config import EngineConfig
from ..engine.engine_loop import BatchQueueLoop, EnginePass
from ..engine.kv_cache import KVCacheView
from ..engine.policies import make_scheduler
from ..engine.request import Request
from ..engine.scheduler import SchedulerOutput, UpdateResult
from ..engine.step_record import ScheduledChunk, StepRecord
from ..timing.cost_model import CostModel
from ..timing.eager import EagerLaunch
from ..timing.presets import GPUS, MODELS
from ..timing.v0_host_time import engine_host_time
from ..workload.workload import RequestSpec, RequestTable, Workload
from .aborts import PendingAborts
from .api_server import APIServer
from .arrivals import arrival_order
from .frozen_state import FrozenState, SimulationState
from .metrics import SLO, MetricsCollector
from .servable import check_servable
from .vllm_stats import VllmStats


class SimulationStalled(RuntimeError):
    """Nothing can run and nothing will arrive: the remaining requests can never be served."""


@dataclass(frozen=True)
class PlannedStep:
    """What one step scheduled (the scheduler's output, its chunks as the record shows them, the async
    engine-loop pass), when it began, the requests that arrived for it and the KV counters before it."""

    output: SchedulerOutput
    scheduled: list[ScheduledChunk]
    engine_pass: EnginePass | None
    clock_before: float
    arrived: list[str]
    counters_before: tuple[int, int, int, int]
    # Requests aborted at the step's start (their clients went away: sim/aborts.py).
    aborted: list[str] = field(default_factory=list)


class Simulation:
    def __init__(
        self,
        config: EngineConfig,
        workload: Workload | Sequence[RequestSpec],
        cost_model: CostModel | None = None,
        keep_finished: bool = True,
        slo: SLO | None = None,
        api_server: APIServer | None = None,
    ):
        if not isinstance(workload, Workload):
            workload = Workload(list(workload))
        self.config = config
        self.workload = workload
        self.cost_model = cost_model or CostModel(MODELS["llama-3.1-8b"], GPUS["h200"])
        self.host_time = engine_host_time(config)
        self.eager_launch_s = EagerLaunch().seconds(self.cost_model.model.layers) if config.policy == "naive" else 0.0
        # Finished requests stay inspectable unless a long headless run asks for bounded memory.
        self.keep_finished = keep_finished
        self.finished_requests: dict[str, Request] = {}
        self._validate_workload()
        self.scheduler = make_scheduler(config)
        # Async scheduling: vLLM's engine loop with a batch queue, and when the GPU is next free.
        self.engine_loop = BatchQueueLoop(self.scheduler) if config.async_scheduling else None
        self._gpu_free_at = 0.0
        self.metrics = MetricsCollector(config.block_size, SLO() if slo is None else slo)
        if config.speculative_config:
            self.metrics.spec_decode = self.scheduler.spec_stats
        # Served (`vllm serve`): requests and tokens pass through the API server; None: `LLM.generate`.
        self.api_server = self.metrics.front_end = api_server
        self.step_index = 0
        self.clock_s = 0.0
        # Restores so far, in no snapshot: each starts a new series of vLLM's counters (app/vllm_metrics.py).
        self.num_restores = 0
        # Open loop: requests reach the engine in arrival order (ties in workload order), read
        # from the workload one at a time so a long run holds only those in flight. Closed loop:
        # a heap of (release time, order, spec), the first `concurrency` at once, one more per finish.
        self._arrival_order = arrival_order(workload)
        self._next_arrival = 0
        first = min(workload.concurrency, len(workload.requests))
        self._pending = [(0.0, i, workload.requests[i]) for i in range(first)]
        self._next_release = first
        self.pending_aborts = PendingAborts()

    def _validate_workload(self) -> None:
        self.validate_requests(self.workload.requests)

    def validate_requests(self, specs: Sequence[RequestSpec]) -> None:
        """Raise ConfigError for a request this engine could never serve (or a duplicate id). A synthetic
        workload numbers its requests, so only other workloads can repeat an id."""
        check_servable(self.config, specs, check_ids=not isinstance(self.workload.requests, RequestTable))

    # -- fed from outside (a cluster's router) -------------------------------------------------
    def submit(self, spec: RequestSpec, order: int) -> None:
        """Hand this engine one more request; it arrives at `spec.arrival_time` (order breaks ties)."""
        heapq.heappush(self._pending, (spec.arrival_time, order, spec))

    def abort(self, request_id: str, abort_time: float) -> None:
        """The client of `request_id` went away at `abort_time`: the first step starting at or
        after then (once the request has arrived) finishes it as aborted (sim/aborts.py)."""
        if request_id not in self.finished_requests:
            self.pending_aborts.add(request_id, abort_time)

    @property
    def num_pending(self) -> int:
        """Requests of the workload that have not reached the engine yet."""
        unreleased = len(self.workload.requests) - self._next_release if self.workload.concurrency else 0
        in_flight = self.api_server.num_in_flight if self.api_server is not None else 0
        return len(self._arrival_order) - self._next_arrival + len(self._pending) + unreleased + in_flight

    def next_step_time(self) -> float | None:
        """When the next step would start, or None while there is nothing to do or to wait for."""
        if self.scheduler.has_unfinished_requests():
            return self.clock_s
        return max(self.clock_s, arrival_time) if (arrival_time := self._next_arrival_time()) is not None else None

    # -- stepping ---------------------------------------------------------------------------
    def _next_arrival_time(self) -> float | None:
        """When the next request reaches the engine core: its arrival, or once the API server passes it on."""
        if self.api_server is None:
            return self.next_client_time()
        return self.api_server.next_ready_s(self)

    def next_client_time(self) -> float | None:
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
            order, spec = self.api_server.pass_on() if self.api_server is not None else self.take_client_request()
            request = Request(
                spec.request_id,
                spec.prompt_token_ids,
                spec.max_tokens,
                arrival_time=self.clock_s if self.workload.arrivals_by_step else spec.arrival_time,
                priority=spec.priority,
                arrival_index=order,
            )
            self.scheduler.add_request(request)
            arrived.append(spec.request_id)
            # A replayed trace's client that went away: aborted before the first step at or after then
            # (a row with the same fields as RequestSpec but no abort_time, an engine Request, never aborts).
            if (abort_time := getattr(spec, "abort_time", None)) is not None:
                self.pending_aborts.add(spec.request_id, abort_time)
        return arrived

    def take_client_request(self) -> tuple[int, RequestSpec]:
        """The next request a client sends (`next_client_time`: when), in arrival order (ties in workload order)."""
        if self._pending:
            _, order, spec = heapq.heappop(self._pending)
            return order, spec
        order = self._arrival_order[self._next_arrival]
        self._next_arrival += 1
        return order, self.workload.requests[order]

    def _release_next(self, now: float) -> None:
        """Closed loop: a client whose request finished (the step's last tokens sent) sends its next one now."""
        if self.workload.concurrency and self._next_release < len(self.workload.requests):
            spec = self.workload.requests[self._next_release]
            heapq.heappush(self._pending, (now, self._next_release, dataclasses.replace(spec, arrival_time=now)))
            self._next_release += 1

    def step(self) -> StepRecord:
        """Run one engine iteration and return what it did: schedule, time, update, record."""
        batch = self.plan_step()
        return self.finish_step(batch, *self.step_end(batch))

    def plan_step(self) -> PlannedStep:
        """A step's first half: arrivals admitted and the batch scheduled, not yet timed. Lockstep
        data-parallel ranks time their batches together (cluster/lockstep.py), then `finish_step`."""
        if self.done:
            raise StopIteration("the simulation has finished every request")
        clock_before, arrived = self._admit_arrivals()
        counters_before = self.scheduler.kv_cache_manager.counters()  # before the aborts: their frees are this step's
        aborted = self.pending_aborts.apply(clock_before, self.scheduler)
        if self.keep_finished:
            self.finished_requests.update((request.request_id, request) for request in aborted)
        return self._schedule(clock_before, arrived, counters_before, [request.request_id for request in aborted])

    def finish_step(self, batch: PlannedStep, clock_after: float, breakdown: dict[str, float]) -> StepRecord:
        """A step's second half, once it ends at `clock_after`: update, record, observe."""
        result = self._update(batch, clock_after)
        record = self._record(batch, result, clock_after, breakdown)
        self._observe(batch.output, result, record)
        self.step_index += 1
        self.clock_s = clock_after
        return record

    def _admit_arrivals(self) -> tuple[float, list[str]]:
        """The step's start (an idle engine waits for the next request: the clock jumps to its
        arrival) and the requests that reached the engine by then."""
        if not self.scheduler.has_unfinished_requests() and not self.workload.arrivals_by_step:
            self.clock_s = max(self.clock_s, self._next_arrival_time())
        clock_before = self.clock_s
        arrived = self._add_arrivals()
        if self.scheduler.decision_trace is not None:
            self.scheduler.decision_trace.start_step(self.scheduler)
        return clock_before, arrived

    def _schedule(self, now: float, arrived: list[str], counters_before: tuple[int, int, int, int],
                  aborted: list[str]) -> PlannedStep:
        """This step's batch: schedule() itself, or one pass of the async engine loop (which may
        also complete the oldest batch in flight)."""
        if self.engine_loop is None:
            output = self.scheduler.schedule(now=now)
            engine_pass = None
        else:
            engine_pass = self.engine_loop.step(now, self._async_batch_done_at)
            output = engine_pass.scheduled or SchedulerOutput()
        batch = PlannedStep(output, self._chunks(output), engine_pass, now, arrived, counters_before, aborted)
        self._wait_if_blocked(batch)
        return batch

    def _wait_if_blocked(self, batch: PlannedStep) -> None:
        """Nothing ran and nothing changed: wait for the next arrival, or stop if none will come."""
        scheduler = self.scheduler
        # A step that only reports aborts is vLLM's too: its scheduler schedules once more for them.
        if batch.scheduled or scheduler.running or batch.output.preempted_reqs or self._batches_in_flight or batch.aborted:
            return
        if self._next_arrival_time() is None:
            raise SimulationStalled(
                f"step {self.step_index}: nothing can be scheduled and no request will arrive "
                f"({len(scheduler.waiting)} waiting, {scheduler.kv_cache_manager.num_free_blocks} free blocks)"
            )
        if not self.workload.arrivals_by_step:
            self.clock_s = max(self.clock_s, self._next_arrival_time())

    def step_end(self, batch: PlannedStep, moe_num_tokens: int | None = None) -> tuple[float, dict[str, float]]:
        """When a planned step ends, and what its time was made of (a DP rank's MoE layers see
        `moe_num_tokens`, every rank's tokens)."""
        num_scheduled, clock_before = len(batch.scheduled), batch.clock_before
        if batch.engine_pass is None:
            step_s, breakdown = self._gpu_time(batch.output, moe_num_tokens)
            # A multi-step window's later passes skip the scheduler, and its host work with it.
            host_s = self.host_time.seconds(num_scheduled) if batch.output.is_first_multi_step else 0.0
            if host_s:
                # Synchronous scheduling: the GPU waits for the host's work on every step.
                breakdown["host"] = host_s
                step_s += host_s
            return max(self.clock_s, clock_before + step_s), breakdown
        # The pass returns at once while the GPU runs (only its CPU scheduling time), or waits
        # for the oldest batch in flight to come back.
        breakdown = self._gpu_time(batch.output)[1] if num_scheduled else {}
        if batch.engine_pass.completed is None:
            return max(self.clock_s, clock_before + self.host_time.seconds(num_scheduled)), breakdown
        return max(self.clock_s, batch.engine_pass.completed_at), breakdown

    def _update(self, batch: PlannedStep, clock_after: float) -> UpdateResult:
        """The model's output: tokens sampled, requests finished (kept if asked, and in a closed
        loop each finish releases the client's next request)."""
        if batch.engine_pass is None:
            result = self.scheduler.update_from_output(batch.output, now=clock_after)
        else:
            result = batch.engine_pass.update or UpdateResult([], [])
        if self.api_server is not None:  # the tokens reach their clients: token and finish times are theirs
            self.api_server.stream(result, self.scheduler.requests, batch.clock_before, clock_after, self)
        for request in result.finished:
            self.pending_aborts.discard(request.request_id)
            if self.keep_finished:
                self.finished_requests[request.request_id] = request
            self._release_next(clock_after + (self.api_server.last_stream_s if self.api_server is not None else 0.0))
        return result

    def _record(self, batch: PlannedStep, result: UpdateResult, clock_after: float, breakdown: dict[str, float]) -> StepRecord:
        scheduler, kv, output = self.scheduler, self.scheduler.kv_cache_manager, batch.output
        clock_before, arrived = batch.clock_before, batch.arrived
        allocated, freed, evicted, hit = (after - before for after, before in zip(kv.counters(), batch.counters_before))
        kv_events = kv.take_events()
        trace = scheduler.decision_trace
        return StepRecord(
            step=self.step_index,
            clock_s_before=clock_before,
            clock_s_after=clock_after,
            step_s=clock_after - clock_before,
            scheduled=batch.scheduled,
            arrived=arrived,
            admitted=output.scheduled_new_reqs,
            resumed=output.scheduled_resumed_reqs,
            preempted=output.preempted_reqs,
            finished=[request.request_id for request in result.finished],
            aborted=batch.aborted,
            sampled=result.sampled,
            cached_tokens=output.num_cached_tokens,
            swapped_out=output.swapped_out,
            swapped_in=output.swapped_in,
            num_blocks_allocated=allocated,
            num_blocks_freed=freed,
            num_blocks_evicted=evicted,
            num_blocks_hit=hit,
            num_running=len(scheduler.running),
            num_waiting=len(scheduler.waiting),
            num_swapped=len(scheduler.swapped),
            num_free_blocks=kv.num_free_blocks,
            kv_usage=kv.usage,
            cost_breakdown=breakdown,
            decisions=trace.end_step(output.preempted_reqs, kv_events, batch.aborted) if trace is not None else None,
            scheduled_spec_decode_tokens=output.scheduled_spec_decode_tokens,
            num_accepted_tokens=result.num_accepted,
            kv_events=kv_events,
            front_end_s=self.api_server.last_stream_s if self.api_server is not None else 0.0,
        )

    def _observe(self, output: SchedulerOutput, result: UpdateResult, record: StepRecord) -> None:
        """The step's prefix-cache counts, finishes and gauges into the metrics."""
        metrics, kv = self.metrics, self.scheduler.kv_cache_manager
        # The engine counts hits as vLLM does (prefix_cache_stats.py); KV that came from another
        # engine is none of them (the replica counts its local lookup, which finds nothing).
        stats = self.scheduler.prefix_cache_stats
        metrics.prefix_queries, metrics.prefix_hits = stats.queries, stats.hits
        for request in result.finished:
            metrics.observe_finished(request)
        if metrics.vllm is not None:
            metrics.vllm.record(record, self.scheduler.requests, result.finished)
        tokens_in_cache = sum(r.num_computed_tokens for r in self.scheduler.running) - kv.num_shared_slots
        metrics.observe_step(record, kv.num_used_blocks, tokens_in_cache)

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

    def _gpu_time(self, output: SchedulerOutput, moe_num_tokens: int | None = None) -> tuple[float, dict[str, float]]:
        """The batch's time on the GPU from the cost model (verification of drafts included: they
        are tokens of the batch), drafting, and any swapping; the host's work is not in it."""
        step_s, breakdown = self.cost_model.step_time(
            ((n, output.num_computed_before[rid]) for rid, n in output.num_scheduled_tokens.items()),
            len(output.sampling_reqs), moe_num_tokens,
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
        if self.eager_launch_s:  # the naive loop has no CUDA graphs: each step launches every layer's kernels
            step_s += breakdown.setdefault("eager", self.eager_launch_s)
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
            FrozenState((self.scheduler, self.engine_loop, self.metrics, self.api_server, self.pending_aborts)),
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
        self.scheduler, self.engine_loop, self.metrics, self.api_server, self.pending_aborts = state.frozen.thaw()
        self._gpu_free_at = state.gpu_free_at
        self.finished_requests = dict(state.finished_requests)
        self.num_restores += 1

    # -- read-only views --------------------------------------------------------------------
    def enable_kv_events(self) -> None:
        """From now on each step's record carries the KV cache's events (`StepRecord.kv_events`),
        for viewers that redraw only the blocks and tables that changed."""
        self.scheduler.kv_cache_manager.enable_events()

    def enable_vllm_stats(self) -> None:
        """Count every step from now on as vLLM's Prometheus logger would (`metrics.vllm`, for /metrics)."""
        self.metrics.vllm = VllmStats(self.config.max_model_len)

    def kv_view(self) -> KVCacheView:
        """A read-only look at the KV cache as it is now (ask again after `restore`)."""
        return KVCacheView(self.scheduler.kv_cache_manager)

    def request(self, request_id: str) -> Request:
        """A request that has arrived, unfinished or finished (if kept)."""
        return self.scheduler.requests.get(request_id) or self.finished_requests[request_id]

    def block_table(self, request_id: str) -> tuple[int, ...]:
        return tuple(self.scheduler.kv_cache_manager.get_block_ids(request_id))

    def queue_ids(self) -> dict[str, list[str]]:
        return {queue: [r.request_id for r in getattr(self.scheduler, queue)] for queue in ("waiting", "running", "swapped")}
