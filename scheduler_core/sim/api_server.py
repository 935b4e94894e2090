"""vLLM's API server in front of the engine core: what a served request pays outside the GPU.

`vllm serve` runs the OpenAI-compatible server (FastAPI on one asyncio event loop: the chat
template, tokenization, then `AsyncLLM`'s output handler: detokenization and the streamed chunks)
in a process of its own, which talks to the engine core process over ZMQ. One process does its
work one piece at a time, so a burst of requests reaches the engine at the rate the API server
gets through them, not all at once, and a step's tokens reach their clients only once it has
detokenized and sent them. `LLM.generate` (the offline engine) and the replay of a recorded
trace have none of this.

    client ──HTTP──> API server ──ZMQ──> engine core ──ZMQ──> API server ──SSE──> client
                     template, tokenize                       detokenize, stream
                     (serial: its own queue)                  (serial: the same process)
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ..engine.request import Request
from ..engine.scheduler import UpdateResult
from ..workload.workload import RequestSpec


@dataclass(frozen=True)
class APIServerCost:
    """Seconds of one API server process's time per request and per token, and of one ZMQ hop.

    Sources (no row of benchmarks/validate_published.py is among them):
    - `per_request_s`: set by one published figure, stated as calibration: GPUStack's performance
      lab (github.com/gpustack/gpustack, docs/performance-lab/gpt-oss-20b/h100.md, vLLM v0.11.0,
      `vllm serve openai/gpt-oss-20b --async-scheduling` on one H100, `vllm bench serve --backend
      openai-chat`, the 'random 128 input' set: 1,000 prompts of 128 tokens and 4 output tokens sent
      at once) took 4.04 s, 248 requests/s, where the engine alone needs 1.5 s; 3.8 ms per chat request
      (beside the per-token terms below) makes the simulated run take 4.03 s. Async scheduling keeps
      the engine core's own CPU time off that path. The checks, not fitted: the same set without async
      scheduling (4.70 s; simulated 4.03) and on an A100 (gpt-oss-20b/a100.md: 5.44 s, 5.23 async;
      simulated 4.12, 4.13).
    - `per_prompt_token_s`: tokenizing a 256K-token prompt "can take a few hundred milliseconds"
      (vLLM PR #10635, 2024-11-25, which moved tokenization off the event loop): about 1 us a token.
    - `per_output_token_s`: incremental detokenization, 19-21 us per sequence per step in vLLM
      0.3.0 (issue #5206's timings of `detokenize_incrementally`); V1's `DecodeStream` (PR #15137)
      is faster, the streamed chunk it feeds costs more. Bound from above: Llama-3.2-1B on an A100
      at 400 concurrent streams, where the API server limits, gave 12,850 output tokens/s (vLLM
      PR #12287's 'before'), under 78 us a token all work included.
    - `hop_s`: one message between the API server and the engine core (msgpack over a ZMQ Unix
      socket: vLLM PRs #12918, #13688): an estimate of tens of microseconds; no vLLM measurement
      of it was found (issue #46121, 2026-06-19, proposes the first benchmark of that path).
    """

    per_request_s: float = 3.8e-3
    per_prompt_token_s: float = 1.0e-6
    per_output_token_s: float = 20e-6
    hop_s: float = 50e-6


class Clients(Protocol):
    """Where the requests come from: the simulation's arrivals, in order."""

    def next_client_time(self) -> float | None: ...

    def take_client_request(self) -> tuple[int, RequestSpec]: ...


class APIServer:
    """`api_server_count` API server processes (vLLM's `--api-server-count`), each one serial: a
    new connection goes to the one free soonest. Holds the requests on their way to the engine
    core, and per running request which process streams it and how many tokens it has streamed.

    A step's outputs wait for at most the one request its process is handling when they come
    back (the output handler yields to the request handlers between chunks of outputs, and they
    to it: vLLM PR #12287); requests are handled whenever the process has nothing else to do. So
    under a burst the tokens of admitted requests keep flowing while the rest are still tokenized.
    """

    def __init__(self, api_server_count: int = 1, cost: APIServerCost = APIServerCost()):
        self.cost = cost
        self.busy_until_s = [0.0] * api_server_count
        # Requests handled, not yet at the engine: (when they reach it, arrival order, the request).
        self.admitted: list[tuple[float, int, RequestSpec]] = []
        # The next request, received but not handled yet: (its arrival, arrival order, the request).
        self.next_request: tuple[float, int, RequestSpec] | None = None
        self._process_of: dict[str, int] = {}
        self._num_streamed: dict[str, int] = {}
        self.last_stream_s = 0.0
        # Per process, its last step's outputs: (when they began, their work, the end of its work before them).
        self._last_outputs = [(0.0, 0.0, 0.0)] * api_server_count
        # For the report: seconds before requests reached the engine, and their first tokens' wait.
        self.num_admitted = 0
        self.admission_s = 0.0
        self.num_first_tokens = 0
        self.first_token_s = 0.0

    @property
    def num_in_flight(self) -> int:
        """Requests taken from their clients that have not reached the engine core yet."""
        return len(self.admitted) + (self.next_request is not None)

    def next_ready_s(self, clients: Clients) -> float | None:
        """When the next request reaches the engine core (None: no request is coming)."""
        if self.admitted:
            return self.admitted[0][0]
        self._receive(clients)
        if self.next_request is None:
            return None
        return self._turn(self._process_for())[1] + self.cost.hop_s

    def pass_on(self) -> tuple[int, RequestSpec]:
        """The next request, now at the engine core."""
        if not self.admitted:
            self._handle_next()
        _, order, spec = heapq.heappop(self.admitted)
        return order, spec

    def _receive(self, clients: Clients) -> None:
        if self.next_request is None and (arrival_s := clients.next_client_time()) is not None:
            self.next_request = (arrival_s, *clients.take_client_request())

    def _process_for(self) -> int:
        """The process free soonest, which the next connection goes to."""
        busy = self.busy_until_s
        return min(range(len(busy)), key=busy.__getitem__)

    def _admission_work_s(self, spec: RequestSpec) -> float:
        """HTTP, the chat template and tokenization: the API server's work before it sends a request on."""
        return self.cost.per_request_s + self.cost.per_prompt_token_s * len(spec.prompt_token_ids)

    def _turn(self, process: int) -> tuple[float, float, float | None]:
        """When the process would begin and end the next request, and (when it goes before the process's
        last outputs) the end of the work before them after it. A request that arrived before those
        outputs began, but that the process did not know of then (a fleet's router hands a replica its
        requests as they arrive), goes before them: it waits for the work before them only, and ends
        their time later, as the process did both."""
        arrival_s, _, spec = self.next_request
        work_s = self._admission_work_s(spec)
        began_s, outputs_s, before_s = self._last_outputs[process]
        if arrival_s < began_s:
            start_s = max(arrival_s, before_s)
            return start_s, start_s + work_s + outputs_s, start_s + work_s
        start_s = max(arrival_s, self.busy_until_s[process])
        return start_s, start_s + work_s, None

    def _handle_next(self) -> None:
        """The next request takes its turn on its process and is sent to the engine core."""
        arrival_s, order, spec = self.next_request
        process = self._process_for()
        _, done_s, before_s = self._turn(process)
        self.next_request = None
        self.busy_until_s[process] = max(self.busy_until_s[process], done_s)
        if before_s is not None:
            began_s, outputs_s, _ = self._last_outputs[process]
            self._last_outputs[process] = (began_s, outputs_s, before_s)
        ready_s = done_s + self.cost.hop_s
        heapq.heappush(self.admitted, (ready_s, order, spec))
        self._process_of[spec.request_id] = process
        self.num_admitted += 1
        self.admission_s += ready_s - arrival_s

    def stream(self, result: UpdateResult, requests: Mapping[str, Request], step_start_s: float, step_end_s: float,
               clients: Clients) -> None:
        """A step's new tokens come back to their API servers and are detokenized and sent, request by
        request: each new token's time (and a finished request's finish time) becomes when its client
        gets it; `last_stream_s` is the longest of those waits after the step's end."""
        cost, busy = self.cost, self.busy_until_s
        at_server_s = step_end_s + cost.hop_s
        # Requests that had arrived when the step began and that their process began before these
        # outputs came back are handled first. (Only those that had arrived by then: a fleet's router
        # hands a replica its requests as they arrive, so the rest are not known to it yet.)
        self._receive(clients)
        while (self.next_request is not None and self.next_request[0] <= step_start_s
               and self._turn(self._process_for())[0] < at_server_s):
            self._handle_next()
            self._receive(clients)
        # Per process: when this step's outputs began on it, and their work (the end of its work before them: `before_s`).
        began_s: list[float | None] = [None] * len(busy)
        outputs_s, before_s = [0.0] * len(busy), busy[:]
        done = {request.request_id: request for request in result.finished}
        process_of, num_streamed, per_token_s = self._process_of, self._num_streamed, cost.per_output_token_s
        longest_s = 0.0
        for rid in result.sampled:
            request = requests.get(rid) or done[rid]
            times = request.token_times
            streamed = num_streamed.get(rid, 0)
            num_new = len(times) - streamed
            if num_new <= 0:
                continue
            # A request that came in without its API server (a disaggregated decode replica's, whose KV
            # arrived from a prefill replica) is streamed by the process free soonest.
            process = process_of.get(rid)
            if process is None:
                process = process_of[rid] = self._process_for()
            start_s = max(at_server_s, busy[process])
            if began_s[process] is None:
                began_s[process] = start_s
            work_s = per_token_s * num_new
            outputs_s[process] += work_s
            busy[process] = sent_s = start_s + work_s
            if streamed == 0:
                self.num_first_tokens += 1
                self.first_token_s += sent_s - times[0]
            if sent_s - step_end_s > longest_s:
                longest_s = sent_s - step_end_s
            if num_new == 1:
                times[-1] = sent_s
            else:
                for i in range(streamed, len(times)):
                    times[i] = sent_s
            if rid in done:
                request.finish_time = sent_s
                del process_of[rid]
                num_streamed.pop(rid, None)
            else:
                num_streamed[rid] = len(times)
        self.last_stream_s = longest_s
        for process, began in enumerate(began_s):
            if began is not None:
                self._last_outputs[process] = (began, outputs_s[process], before_s[process])

    @classmethod
    def merged(cls, servers: list["APIServer"]) -> "APIServer":
        """A fleet's API servers as one, for its report: every process and every request."""
        fleet = cls(sum(len(server.busy_until_s) for server in servers), servers[0].cost)
        for name in ("num_admitted", "admission_s", "num_first_tokens", "first_token_s"):
            setattr(fleet, name, sum(getattr(server, name) for server in servers))
        return fleet

    def report(self) -> dict:
        """What the API server added, under `front_end` in the metrics report: the mean time from a
        client's send to the engine core, from the first token's step to its client, and their sum."""
        admission_s = self.admission_s / self.num_admitted if self.num_admitted else 0.0
        first_token_s = self.first_token_s / self.num_first_tokens if self.num_first_tokens else 0.0
        return {"front_end": {"api_server_count": len(self.busy_until_s), "admission_s_mean": admission_s,
                              "first_token_stream_s_mean": first_token_s, "ttft_added_s_mean": admission_s + first_token_s}}
