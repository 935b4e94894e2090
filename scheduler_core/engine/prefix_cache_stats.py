"""The prefix-cache hit rate as vLLM counts it (`PrefixCacheStats`, `vllm:prefix_cache_queries` and
`vllm:prefix_cache_hits`): the tokens of each request looked up, and how many of them hit.

Two rules changed between releases (`VllmCompat`): since 0.11.1 a request that was preempted and comes
back is counted apart (its own KV, freed and found again, is no reuse between requests); since 0.27
each admission counts once, where before every lookup did, also those of a request that then did not
fit and was looked up again in the next step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PrefixCacheStats:
    """Running totals; `queries` and `hits` are what the hit rate is made of."""

    exclude_preempted: bool = True
    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0

    def record(self, num_tokens: int, num_hits: int, preempted: bool) -> None:
        if preempted and self.exclude_preempted:
            self.preempted_requests += 1
            self.preempted_queries += num_tokens
            self.preempted_hits += num_hits
            return
        self.requests += 1
        self.queries += num_tokens
        self.hits += num_hits

    @property
    def hit_rate(self) -> float:
        return self.hits / self.queries if self.queries else 0.0
