"""What a workload is, measured from its requests: the line `servescope run` prints before it runs,
so what is simulated can be checked against what was asked (a named distribution's published mean,
a trace's own lengths, the shared prefixes that lengthen every prompt)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .workload import RequestTable, Workload


def nearest_rank(sorted_values: list[int], q: float) -> int:
    """The q-quantile by nearest rank (a length that some request really has)."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


@dataclass(frozen=True)
class WorkloadSummary:
    num_requests: int
    prompt_mean: float
    prompt_p99: int
    output_mean: float
    output_p99: int
    # Shared system prompts: how many, and tokens each (0: none); every prompt's length includes one.
    num_shared_prefixes: int
    shared_prefix_len: int
    concurrency: int

    @classmethod
    def of(cls, workload: Workload) -> "WorkloadSummary":
        requests = workload.requests
        if isinstance(requests, RequestTable):  # its columns, without making each request
            prompts, outputs = list(requests.prompt_len), list(requests.max_tokens)
            prefixes = [p for p in requests.prefixes if len(p)]
        else:
            prompts = [len(r.prompt_token_ids) for r in requests]
            outputs = [r.max_tokens for r in requests]
            prefixes = []
        prompts.sort()
        outputs.sort()
        n = len(prompts)
        return cls(
            num_requests=n,
            prompt_mean=sum(prompts) / n if n else 0.0,
            prompt_p99=nearest_rank(prompts, 0.99) if n else 0,
            output_mean=sum(outputs) / n if n else 0.0,
            output_p99=nearest_rank(outputs, 0.99) if n else 0,
            num_shared_prefixes=len(prefixes),
            shared_prefix_len=len(prefixes[0]) if prefixes else 0,
            concurrency=workload.concurrency,
        )

    def line(self) -> str:
        text = (f"{self.num_requests:,} requests; prompt mean {self.prompt_mean:,.1f}, p99 {self.prompt_p99:,} tokens; "
                f"output mean {self.output_mean:,.1f}, p99 {self.output_p99:,} tokens")
        if self.num_shared_prefixes:
            text += (f"; prompts include one of {self.num_shared_prefixes} shared prefixes of "
                     f"{self.shared_prefix_len:,} tokens")
        if self.concurrency:
            text += f"; {self.concurrency:,} clients in a closed loop"
            if self.concurrency > self.num_requests:
                text += f" (only {self.num_requests:,} ever busy: one request each)"
        return text
