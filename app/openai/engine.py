"""A served session's engine on the wall clock: requests in as they arrive, tokens out as the
simulated steps that made them end.

Simulated time 0 is the wall-clock instant (`time.monotonic`, the clock the dashboard's play
runs on) of the first request; from then on simulated and wall seconds are the same (play's
`time_ratio` 1). A request's arrival is the wall time it was handed in. A step is taken once the
wall clock has reached its start, so it can use every request that arrived before it, and its
record, with the tokens it sampled, is released when the wall clock reaches its end: the
clients and the dashboard see it then. The engine so makes the decisions it would make headless
on the same arrivals (its trace replays step for step), and a client measures the simulated
TTFT and inter-token latencies, give or take the event loop's pacing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from dataclasses import dataclass

from fastapi import HTTPException

from scheduler_core.engine.step_record import StepRecord
from scheduler_core.errors import ConfigError
from scheduler_core.sim.live_source import LiveRequestSource, ServedSimulation
from scheduler_core.sim.simulation import SimulationStalled
from scheduler_core.workload.standin_eos import StandInEOS

from ..rate_limits import RateLimit
from .errors import OpenAIError
from .fleet_budget import FleetBudget
from .served_frames import ServedLiveSession
from .served_trace import ServedTrace

log = logging.getLogger("servescope.openai")
# The longest a pass of the loop steps before letting the event loop answer clients (a long
# catch-up after a stall goes on at the next pass).
STEP_SLICE_S = 0.005


@dataclass(frozen=True)
class ServeLimits:
    """What clients may make a served session hold: requests unfinished in the engine (each holds
    its KV blocks, a stream and a connection), per client and in all, and new requests a second."""

    max_live_requests: int = 512
    max_live_per_client: int = 128
    requests_per_client_per_s: float = 100.0
    requests_per_server_per_s: float = 400.0
    burst: float = 200.0
    # Prompt tokens the session keeps in all (its finished requests stay inspectable): about 4 bytes each.
    max_prompt_tokens: int = 50_000_000

    @classmethod
    def public(cls) -> "ServeLimits":
        """A classroom's: a few requests at a time per student."""
        return cls(max_live_requests=256, max_live_per_client=8, requests_per_client_per_s=2.0, burst=10.0)


class TokenStream:
    """One request's output as far as the wall clock has released it: counts, never the text
    (which the stand-in makes from the request's index), so its memory is the same at any length."""

    def __init__(self, request_id: str, index: int, num_prompt_tokens: int, output_len: int, finish_reason: str):
        self.request_id = request_id
        self.index = index
        self.num_prompt_tokens = num_prompt_tokens
        self.output_len = output_len
        self.finish_reason = finish_reason
        self.num_released = 0
        self.num_cached_tokens = 0
        self.finished = False
        self.aborted: str | None = None  # why the request will get no more tokens, if it will not
        self.changed = asyncio.Event()

    def release(self, num_tokens: int, finished: bool) -> None:
        if num_tokens > self.num_released or finished:
            self.num_released = max(self.num_released, num_tokens)
            self.finished = self.finished or finished
            self.changed.set()

    async def wait(self) -> tuple[int, bool]:
        """Tokens released so far and whether that is all, once more than before have come."""
        await self.changed.wait()
        self.changed.clear()
        if self.aborted:
            raise OpenAIError(503, self.aborted)
        return self.num_released, self.finished

    def abort(self, reason: str) -> None:
        self.aborted = reason
        self.changed.set()


def sent_at(record) -> float:
    """When a step's tokens leave the simulated API server: the step's end, then detokenizing and
    streaming them (`front_end_s`, sim/api_server.py)."""
    return record.clock_s_after + record.front_end_s


class ServedEngine:
    """The live session `live`, whose ServedSimulation takes its requests from `submit`."""

    def __init__(self, live: ServedLiveSession, source: LiveRequestSource, eos: StandInEOS, limits: ServeLimits,
                 trace_file=None, fleet: FleetBudget | None = None):
        self.live = live
        self.sim: ServedSimulation = live.session.sim
        self.source = source
        self.eos = eos
        self.limits = limits
        self.fleet = fleet or FleetBudget(limits)  # the server's budgets, shared with the other replicas' engines
        self.fleet.engines.append(self)
        self.rate = RateLimit("completion requests", limits.requests_per_client_per_s, limits.requests_per_server_per_s,
                              limits.burst, per_server=self.fleet.per_server)
        # An open text file the operator named: each request as a JSONL line.
        self.trace = ServedTrace(trace_file, source) if trace_file is not None else None
        # (request id, simulated time) of clients gone away, for the run loop to hand the engine.
        self.aborts: list[tuple[str, float]] = []
        self.streams: dict[str, TokenStream] = {}
        self.live_per_client: Counter[str] = Counter()
        self.owner: dict[str, str] = {}
        self.origin: float | None = None  # time.monotonic() at simulated time 0
        self.taken: deque[tuple[StepRecord, dict[str, int]]] = deque()  # steps waiting for their end
        self.wakeup = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.stalled = False  # the engine raised SimulationStalled: it takes no more steps
        live.session.playing, live.session.time_ratio = True, 1.0  # as the dashboard's status shows it

    # -- requests in --------------------------------------------------------------------------
    def now_s(self) -> float:
        return time.monotonic() - self.origin if self.origin is not None else 0.0

    async def submit(self, prompt_token_ids, max_tokens: int | None, ignore_eos: bool, client: str,
                     max_tokens_param: str = "max_tokens") -> TokenStream:
        """Check the request as vLLM does and hand it to the engine, arriving now; OpenAIError if
        it cannot be served (the field named) or a quota is spent."""
        max_model_len = self.sim.config.max_model_len
        if max_tokens is not None and max_tokens > max_model_len:
            raise OpenAIError(400, f"{max_tokens_param}={max_tokens} cannot be greater than max_model_len={max_model_len}. "
                                   "Please request fewer output tokens.", max_tokens_param)
        if len(prompt_token_ids) > max_model_len:
            raise OpenAIError(400, f"This model's maximum context length is {max_model_len} tokens. However, your prompt "
                                   f"contains {len(prompt_token_ids)} input tokens, which exceeds this limit even without "
                                   "any output tokens. Please reduce the length of the input prompt.", "input_tokens")
        if not prompt_token_ids:
            raise OpenAIError(400, "The prompt cannot be empty.", "prompt")
        # vLLM's budget: what the context leaves, or less if asked (its `get_max_tokens`).
        budget = min(max_model_len - len(prompt_token_ids), max_tokens or max_model_len)
        if budget < 1:
            raise OpenAIError(400, f"The prompt fills the model's context ({max_model_len} tokens): no room for output.",
                              "input_tokens")
        try:
            self.rate.check(client)
        except HTTPException as e:  # rate_limits' 429, in vLLM's shape
            raise OpenAIError(429, str(e.detail), headers=e.headers) from None
        async with self.live.lock:  # checked and counted at once: a burst waiting on the lock cannot overshoot
            self.check_room(client, len(prompt_token_ids))
            if self.origin is None:  # the first request arrives at 0 exactly, as a trace's first does
                self.origin = time.monotonic()
            arrival_s = self.now_s() if self.source.requests else 0.0
            index = len(self.source.requests)
            output_len, finish_reason = self.eos.output_length(index, budget, ignore_eos)
            try:
                request_id = self.source.submit(arrival_s, prompt_token_ids, output_len)
            except ConfigError as e:
                status = 503 if e.field == "request" else 400
                raise OpenAIError(status, e.reason, None if e.field == "request" else "prompt") from None
            stream = TokenStream(request_id, index, len(prompt_token_ids), output_len, finish_reason)
            self.streams[request_id] = stream
            self.owner[request_id] = client
            self.live_per_client[client] += 1
        self.wakeup.set()
        return stream

    def check_room(self, client: str, num_prompt_tokens: int) -> None:
        """OpenAIError unless the session has steps left and room for one more of `client`'s
        requests, and the server (all its replicas' engines) room for one more request of that prompt."""
        session = self.live.session
        if session.out_of_steps:
            raise OpenAIError(503, f"this served session has taken its {session.settings.max_steps_per_session} steps; "
                                   "start the server again for more")
        if self.fleet.num_prompt_tokens() + num_prompt_tokens > self.limits.max_prompt_tokens:
            raise OpenAIError(503, f"{self.fleet.holders()} taken {self.limits.max_prompt_tokens} prompt tokens in all; "
                                   "start the server again for more")
        if self.fleet.num_live() >= self.limits.max_live_requests:
            raise OpenAIError(503, f"the server holds at most {self.limits.max_live_requests} unfinished requests; "
                                   "try again shortly", headers={"Retry-After": "1"})
        if self.live_per_client[client] >= self.limits.max_live_per_client:
            raise OpenAIError(429, f"each client may have {self.limits.max_live_per_client} unfinished requests at once",
                              headers={"Retry-After": "1"})

    # -- the wall clock -------------------------------------------------------------------------
    def start(self) -> None:
        # Counted among the sessions playing, so the others' play takes a share of each tick that leaves it room.
        self.live.stepping.start(self.live)
        self.task = asyncio.create_task(self.run())

    async def run(self) -> None:
        """Release the steps whose end has come, take the steps whose start has come, sleep until
        the next of either (or a new request)."""
        while True:
            self.wakeup.clear()  # a request submitted from here on wakes the wait below
            self.live.session.last_activity = time.monotonic()  # never idle while it serves
            self.release_due()
            async with self.live.lock:
                self.hand_over_aborts()
                await self.take_due()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.wakeup.wait(), timeout=self.next_event_s())

    def next_event_s(self) -> float:
        """Seconds until the next step ends or may start; with nothing to do, a while short of the
        idle sessions' expiry (each pass marks the session active)."""
        if self.taken:
            return max(0.0, sent_at(self.taken[0][0]) - self.now_s())
        if self.sim.has_work() and not self.stalled and not self.live.session.out_of_steps:
            return max(0.0, self.sim.clock_s - self.now_s())
        return min(60.0, self.live.settings.idle_timeout_s / 4)

    async def take_due(self) -> None:
        """Every step whose start the wall clock has reached, one at a time (each step's token
        counts are read right after it), for at most STEP_SLICE_S."""
        session, deadline = self.live.session, time.monotonic() + STEP_SLICE_S
        while self.sim.has_work() and self.sim.clock_s < self.now_s() and not session.out_of_steps and not self.stalled:
            try:
                records, _ = session.advance(1, checkpoint_later=True)
            except SimulationStalled as e:  # cannot happen to a request validate_requests let in
                log.error("served engine stalled: %s", e)
                self.stalled = True
                return
            self.live.hold(records)  # its frame, of the state right after it, waits for its release too
            for record in records:
                ids = {*record.sampled, *record.finished}
                self.taken.append((record, {rid: self.sim.request(rid).num_output_tokens for rid in ids}))
            if session.checkpoint_due:
                await asyncio.to_thread(session.take_due_checkpoint)
            if time.monotonic() >= deadline:
                break
        if session.out_of_steps and self.streams:
            self.abort_all(f"this served session has taken its {session.settings.max_steps_per_session} steps; "
                           "start the server again for more")

    def release_due(self) -> None:
        """The steps whose end the wall clock has passed: to the dashboard and to the clients."""
        now, released = self.now_s(), []
        while self.taken and sent_at(self.taken[0][0]) <= now:
            record, counts = self.taken.popleft()
            released.append(record)
            finished = set(record.finished)
            for rid, count in counts.items():
                stream = self.streams.get(rid)
                if stream is None:
                    continue
                if rid in record.cached_tokens:
                    stream.num_cached_tokens = record.cached_tokens[rid]
                stream.release(count, rid in finished)
                if rid in finished:
                    self.finish(rid)
                    self.settle(rid)
        if released:
            self.live.publish_steps(released)

    def abort(self, request_id: str) -> None:
        """The client of `request_id` went away (closed its stream, or dropped the connection of a
        whole answer): vLLM's `AsyncLLM.abort`. It leaves the live count at once; the run loop hands
        the abort to the engine, which frees its blocks before its next step (sim/aborts.py)."""
        if request_id not in self.streams:
            return  # finished, or ended by the server, already
        self.aborts.append((request_id, self.now_s()))
        self.finish(request_id)
        self.wakeup.set()

    def hand_over_aborts(self) -> None:
        """The aborts asked for since the last pass, to the engine (under the session's lock:
        a checkpoint may be copying the engine in a thread)."""
        for request_id, abort_s in self.aborts:
            self.source.abort(request_id, abort_s)
            self.settle(request_id)
        self.aborts.clear()

    def settle(self, request_id: str) -> None:
        """`request_id`'s trace row is final (finished, aborted or ended by the server): it can be written."""
        if self.trace is not None:
            self.trace.settle(request_id)

    def finish(self, request_id: str) -> None:
        """A finished request leaves the live count (its stream stays with its response until sent)."""
        self.streams.pop(request_id, None)
        client = self.owner.pop(request_id, "")
        self.live_per_client[client] -= 1
        if not self.live_per_client[client]:
            del self.live_per_client[client]

    def abort_all(self, reason: str) -> None:
        """Every unfinished request ends with an error event (its stream) or a 503 (a whole answer)."""
        for request_id, stream in list(self.streams.items()):
            stream.abort(reason)
            self.finish(request_id)
            self.settle(request_id)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.live.stepping.stop(self.live)
        self.sim.serving = False
        self.abort_all("the server is shutting down")
        if self.trace is not None:
            self.trace.close()
