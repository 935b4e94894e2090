"""An engine fed from outside as it runs: a served session's requests, arriving from its clients.

`ServedSimulation` is a `Simulation` with no workload of its own that stays open for more
requests (it is never `done` while it serves); `LiveRequestSource` hands it each request through
`Simulation.submit`, at the simulated time it arrived, and keeps it as a row of a JSONL trace
(`workload/traces.py`'s format, with the prompt's token ids): replayed headless, the trace makes
the same decisions step for step, since arrivals (and the clients' aborts) are the run's only inputs.
"""

from __future__ import annotations

import dataclasses
import json
from array import array
from collections.abc import Iterator, Sequence

from ..errors import ConfigError
from ..workload.workload import RequestSpec, Workload
from .simulation import Simulation


class ServedSimulation(Simulation):
    """A simulation whose requests all come through `submit`. While `serving`, an idle engine is
    waiting, not finished: nothing may call `step()` then (`has_work` says when it may)."""

    def __init__(self, config, cost_model=None, slo=None, api_server=None):
        super().__init__(config, Workload([]), cost_model, keep_finished=True, slo=slo, api_server=api_server)
        self.serving = True

    @property
    def done(self) -> bool:
        return not self.serving and super().done

    def has_work(self) -> bool:
        """Whether a step can be taken: a request unfinished, or one submitted and waiting to arrive."""
        return self.next_step_time() is not None


class LiveRequestSource:
    """Requests from outside into a `ServedSimulation`, within the session's budgets: at most
    `max_requests` in all, and `max_prompt_tokens` of prompts (the engine keeps finished requests
    inspectable, each with its prompt's ids, as the dashboard shows them)."""

    def __init__(self, sim: ServedSimulation, max_requests: int, max_prompt_tokens: int):
        self.sim = sim
        self.max_requests = max_requests
        self.max_prompt_tokens = max_prompt_tokens
        self.requests: list[RequestSpec] = []
        self.num_prompt_tokens = 0

    def submit(self, arrival_s: float, prompt_token_ids: Sequence[int], max_tokens: int) -> str:
        """Hand the engine a request arriving at `arrival_s` (simulated seconds, never before the
        previous one); returns its request id, `req-00000` onwards as a trace's are numbered.
        ConfigError when the engine could never serve it or a budget is spent."""
        index = len(self.requests)
        if index >= self.max_requests:
            raise ConfigError("request", f"this served session has taken its {self.max_requests} requests; "
                                         "start the server again for more")
        if self.num_prompt_tokens + len(prompt_token_ids) > self.max_prompt_tokens:
            raise ConfigError("request", f"this served session has taken its {self.max_prompt_tokens} prompt tokens; "
                                         "start the server again for more")
        if self.requests and arrival_s < self.requests[-1].arrival_time:
            raise ConfigError("arrival_time", "requests must arrive in order")
        spec = RequestSpec(f"req-{index:05d}", arrival_s, array("i", prompt_token_ids), max_tokens)
        self.sim.validate_requests([spec])
        self.sim.submit(spec, index)
        self.requests.append(spec)
        self.num_prompt_tokens += len(spec.prompt_token_ids)
        return spec.request_id

    def abort(self, request_id: str, abort_time: float) -> None:
        """The client of `request_id` went away at `abort_time` (simulated seconds): the engine
        aborts it before its next step (sim/aborts.py), and its trace row keeps the time."""
        index = int(request_id.removeprefix("req-"))
        self.requests[index] = dataclasses.replace(self.requests[index], abort_time=abort_time)
        self.sim.abort(request_id, abort_time)

    @staticmethod
    def trace_line(spec: RequestSpec) -> str:
        """One request as a line of a JSONL trace: the lengths, the prompt's ids and, if its client
        went away, when."""
        row = {"arrival_time": spec.arrival_time, "prompt_len": len(spec.prompt_token_ids), "output_len": spec.max_tokens,
               "prompt_token_ids": list(spec.prompt_token_ids)}
        if spec.abort_time is not None:
            row["abort_time"] = spec.abort_time
        return json.dumps(row, separators=(",", ":"))

    def trace_lines(self) -> Iterator[str]:
        return (self.trace_line(spec) for spec in self.requests)
