"""A fleet of engine replicas behind a router, advanced together on one simulated clock.

Every replica is a full `Simulation` with its own scheduler, KV cache and clock. The fleet is a
discrete-event loop: the earliest thing to happen next wins, be it a request arriving at the
router, a KV transfer landing, or a replica's next step (ties: arrivals and transfers first, then
the lowest replica index). A replica's step runs from its own clock to the step's end, exactly as
it would alone, so a one-replica fleet repeats the single engine step for step.

Disaggregated serving splits the fleet into a prefill pool and a decode pool: a request prefills
on one (with max_tokens=1, as vLLM's disaggregation proxy sends it), its KV blocks move over a
link, and the decode pool computes its last prompt token and samples every output token, so
TTFT = queueing + prefill + transfer + the first decode step.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..engine.request import Request
from ..engine.step_record import StepRecord
from ..errors import ConfigError
from ..sim.simulation import Simulation
from ..workload.workload import RequestSpec, Workload
from .kv_transfer import KVLink, KVTransferCost, kv_transfer_cost
from .lockstep import LockstepRanks
from .replica import Replica
from .router import Router

# Event kinds at the same instant run in this order, before any replica's step.
ARRIVAL, PREFILL_DONE, TRANSFER_DONE, RETRY_BLOCKS = range(4)


@dataclass(frozen=True)
class ClusterEvent:
    """One thing the fleet did: `route`, `transfer` (started), `landed` (transfer done) or `step`."""

    kind: str
    time_s: float
    replica: str
    request_id: str = ""
    detail: str = ""
    record: StepRecord | None = None
    # A route event's request as its replica received it (arrival time and, for prefill, max_tokens=1).
    spec: RequestSpec | None = None
    # A transfer event's cost: the blocks and bytes it moves and how long the link takes.
    transfer: KVTransferCost | None = None


@dataclass
class TransferTotals:
    """KV moved from the prefill to the decode pool."""

    num_transfers: int = 0
    num_blocks: int = 0
    num_bytes: int = 0
    seconds: float = 0.0


class Cluster:
    """N replicas behind a router (colocated), or a prefill pool and a decode pool joined by a link."""

    def __init__(self, replicas: Sequence[Simulation], workload: Workload | Sequence[RequestSpec],
                 router: Router | None = None, decode: Sequence[Simulation] = (),
                 link: KVLink | None = None, decode_router: Router | None = None, lockstep: bool = False,
                 pad_to_largest: bool = True):
        if not isinstance(workload, Workload):
            workload = Workload(list(workload))
        if workload.arrivals_by_step:
            raise ConfigError("trace", "a fleet needs arrival times in seconds, not step-indexed arrivals")
        if not replicas:
            raise ConfigError("cluster.replicas", "a fleet needs at least one replica")
        self.workload = workload
        self.disaggregated = bool(decode)
        if self.disaggregated and link is None:
            raise ConfigError("cluster.link", "a disaggregated fleet needs a KV link")
        entry_role = "prefill" if self.disaggregated else "rank" if lockstep else "colocated"
        self.entry_pool = [Replica(i, entry_role, sim) for i, sim in enumerate(replicas)]
        self.decode_pool = [Replica(i, "decode", sim) for i, sim in enumerate(decode)]
        self.replicas = self.entry_pool + self.decode_pool
        self.router = router or Router()
        self.decode_router = decode_router or Router("least-requests")
        self.link = link
        self.transfers = TransferTotals()
        # An MoE model's data-parallel ranks step together (lockstep.py); other replicas on their own.
        self.lockstep = LockstepRanks(self.entry_pool, pad_to_largest) if lockstep else None
        if lockstep and self.disaggregated:
            raise ConfigError("cluster", "lockstep data-parallel ranks form one colocated deployment")
        self._validate()
        # Events not yet handled: (time, kind, order, payload). Closed-loop workloads release the
        # first `concurrency` requests at once and one more per finished request.
        specs = workload.requests
        first = min(workload.concurrency, len(specs)) if workload.concurrency else len(specs)
        self._events = [(0.0 if workload.concurrency else s.arrival_time, ARRIVAL, i, s) for i, s in enumerate(specs[:first])]
        heapq.heapify(self._events)
        self._next_release = first
        self._event_order = len(specs)
        # Prefilling requests: id -> (original spec, arrival order).
        self._prefilling: dict[str, tuple[RequestSpec, int]] = {}

    def _validate(self) -> None:
        specs = self.workload.requests
        if self.disaggregated:
            for replica in self.decode_pool:
                config = replica.sim.config
                if config.policy != "vllm-v1" or config.kv_allocator != "paged":
                    raise ConfigError("cluster.decode.engine.policy",
                                      "the decode pool receives KV blocks: it needs policy vllm-v1 and the paged allocator")
                replica.sim.validate_requests(specs)
            prefill_specs = [dataclasses.replace(s, max_tokens=1) for s in specs]
            for replica in self.entry_pool:
                replica.sim.validate_requests(prefill_specs)
        else:
            for replica in self.entry_pool:
                replica.sim.validate_requests(specs)

    # -- the loop ---------------------------------------------------------------------------
    def _next_replica(self) -> tuple[float, Replica | None]:
        if self.lockstep is not None:  # the ranks step as one: rank 0 stands for the group
            when = self.lockstep.next_step_time()
            return (float("inf"), None) if when is None else (when, self.entry_pool[0])
        best_time, best = float("inf"), None
        for replica in self.replicas:
            when = replica.next_step_time()
            if when is not None and when < best_time:
                best_time, best = when, replica
        return best_time, best

    @property
    def done(self) -> bool:
        return not self._events and self._next_replica()[1] is None

    @property
    def next_time_s(self) -> float:
        """When the next thing happens: an event, or a replica's next step (inf when done)."""
        replica_time = self._next_replica()[0]
        return min(self._events[0][0], replica_time) if self._events else replica_time

    @property
    def clock_s(self) -> float:
        """The fleet's time: the latest any replica has reached."""
        return max(replica.sim.clock_s for replica in self.replicas)

    def step(self) -> list[ClusterEvent]:
        """Handle the next event (or every event at the same instant), or run one replica's step."""
        replica_time, replica = self._next_replica()
        if self._events and self._events[0][0] <= replica_time:
            return self._handle(heapq.heappop(self._events))
        if replica is None:
            raise StopIteration("the fleet has finished every request")
        return self._step_lockstep() if self.lockstep is not None else self._step_replica(replica)

    def events(self) -> Iterator[ClusterEvent]:
        while not self.done:
            yield from self.step()

    def run(self) -> int:
        """Run to the end; returns the number of replica steps taken."""
        return sum(1 for event in self.events() if event.kind == "step")

    # -- what each event does ---------------------------------------------------------------
    def _push(self, time_s: float, kind: int, payload) -> None:
        self._event_order += 1
        heapq.heappush(self._events, (time_s, kind, self._event_order, payload))

    def _handle(self, event) -> list[ClusterEvent]:
        time_s, kind, order, payload = event
        if kind == ARRIVAL:
            spec = payload
            replica = self.router.route(spec, self.entry_pool, time_s)
            if self.disaggregated:
                self._prefilling[spec.request_id] = (spec, order)
                spec = dataclasses.replace(spec, max_tokens=1)
            replica.sim.submit(spec, order)
            return [ClusterEvent("route", time_s, replica.name, spec.request_id, self.router.last_reason, spec=spec)]
        if kind == PREFILL_DONE:
            spec, order = payload
            replica = self.decode_router.route(spec, self.decode_pool)
            request = Request(spec.request_id, spec.prompt_token_ids, spec.max_tokens, spec.arrival_time,
                              spec.priority, arrival_index=order)
            replica.awaiting_blocks.append(request)
            return self._start_transfers(replica, time_s)
        if kind == TRANSFER_DONE:
            replica, request, num_tokens = payload
            replica.num_in_transfer -= 1
            replica.receive(request, num_tokens, time_s)
            return [ClusterEvent("landed", time_s, replica.name, request.request_id, f"{num_tokens} tokens of KV")]
        return self._start_transfers(payload, time_s)

    def _start_transfers(self, replica: Replica, now: float) -> list[ClusterEvent]:
        """Start the transfers of waiting requests, first come first served, while blocks allow."""
        started = []
        entry_tp = self.entry_pool[0].sim.cost_model.tp
        cost_model = replica.sim.cost_model
        while replica.awaiting_blocks:
            request = replica.awaiting_blocks[0]
            # The blocks cover the whole prompt; the transfer fills all but the last token, which
            # the decode step computes to sample from (vLLM recomputes it too).
            if not replica.reserve_blocks(request, request.num_prompt_tokens):
                break
            replica.awaiting_blocks.pop(0)
            num_tokens = request.num_prompt_tokens - 1
            cost = kv_transfer_cost(cost_model.model, self.link, num_tokens, replica.sim.config.block_size,
                                    entry_tp, cost_model.tp)
            totals = self.transfers
            totals.num_transfers += 1
            totals.num_blocks += cost.num_blocks
            totals.num_bytes += cost.num_bytes
            totals.seconds += cost.seconds
            replica.num_in_transfer += 1
            self._push(now + cost.seconds, TRANSFER_DONE, (replica, request, num_tokens))
            started.append(ClusterEvent("transfer", now, replica.name, request.request_id,
                                        f"{cost.num_blocks} blocks, {cost.num_bytes / 1e6:.1f} MB, {cost.seconds * 1e3:.3f} ms",
                                        transfer=cost))
        return started

    def _step_replica(self, replica: Replica) -> list[ClusterEvent]:
        return self._after_step(replica, replica.sim.step())

    def _step_lockstep(self) -> list[ClusterEvent]:
        """Every DP rank's step at once: batches where there is work, dummy batches elsewhere (counted
        by `LockstepRanks`, not logged: an idle rank runs one every step)."""
        return [event for replica, record in self.lockstep.step() for event in self._after_step(replica, record)]

    def _after_step(self, replica: Replica, record: StepRecord) -> list[ClusterEvent]:
        now = record.clock_s_after
        # A finished request's client (or the proxy, for a prefill) has it once the API server sent it.
        done_s = now + record.front_end_s
        for request_id in record.finished:
            if replica.role == "prefill":
                self._push(done_s, PREFILL_DONE, self._prefilling.pop(request_id))
            else:
                self._release_next(done_s)
        if replica.awaiting_blocks and record.num_blocks_freed:
            self._push(now, RETRY_BLOCKS, replica)
        return [ClusterEvent("step", record.clock_s_before, replica.name, record=record)]

    def _release_next(self, now: float) -> None:
        """Closed loop: a client whose request finished sends its next one now."""
        specs = self.workload.requests
        if self.workload.concurrency and self._next_release < len(specs):
            spec = dataclasses.replace(specs[self._next_release], arrival_time=now)
            heapq.heappush(self._events, (now, ARRIVAL, self._next_release, spec))
            self._next_release += 1
