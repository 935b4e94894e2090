"""Whether the clients' conversations fit the KV cache at once: the warning `servescope run` and the
configuration form give before a run that can only reach its throughput by preempting.

A closed loop of N clients keeps N requests in the engine (fewer if `max_num_seqs` is lower), and
each holds its prompt and every token it has produced until it finishes. At the mean lengths that
is N x (prompt + output) tokens near the end of each request's life; when that exceeds the cache,
vLLM cannot run every client at once without preempting some. A published throughput measured
with shorter requests does not transfer, which is the capacity lesson's point.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..engine.config import EngineConfig
from ..workload.summary import WorkloadSummary
from ..workload.workload import Workload


@dataclass(frozen=True)
class KVCapacity:
    clients: int  # requests the engine holds at once: the closed loop's clients, up to max_num_seqs (0: open loop)
    mean_context: float  # a request's prompt and output at the mean lengths, up to max_model_len
    kv_cache_tokens: int  # what the engine's KV cache holds (vLLM's "GPU KV cache size")

    @classmethod
    def of(cls, workload: Workload, engine: EngineConfig, kv_cache_tokens: int) -> "KVCapacity":
        summary = WorkloadSummary.of(workload)
        clients = min(summary.concurrency, summary.num_requests, engine.max_num_seqs)
        return cls(clients, min(summary.prompt_mean + summary.output_mean, engine.max_model_len), kv_cache_tokens)

    @property
    def demand_tokens(self) -> int:
        return round(self.clients * self.mean_context)

    @property
    def exceeded(self) -> bool:
        return self.demand_tokens > self.kv_cache_tokens

    def warning(self) -> str:
        """One line when the clients' conversations outgrow the cache; empty otherwise (or in an open
        loop, whose number of requests in the engine is the simulation's outcome, not its input)."""
        if not self.exceeded:
            return ""
        return (f"capacity warning: {self.clients:,} clients x {self.mean_context:,.0f} tokens of mean context "
                f"(prompt + output) = {self.demand_tokens:,} KV tokens, more than the {self.kv_cache_tokens:,} the "
                f"cache holds: expect preemptions, and a throughput below one measured with shorter requests")

    def to_dict(self) -> dict:
        return {**asdict(self), "demand_tokens": self.demand_tokens, "exceeded": self.exceeded, "warning": self.warning()}
