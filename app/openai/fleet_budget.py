"""What the served engines of one server share (`serve --openai --replicas N`).

The N engines are N servers to their clients, but one process to the machine: one event loop
paces them all and one memory holds their requests. So the quantities that bound the machine are
counted for the whole fleet, as they were for one engine: unfinished requests, prompt tokens kept,
and new requests a second. A client's own quotas (its unfinished requests, its rate) are each
engine's, as N `vllm serve` instances would each keep theirs.
"""

from __future__ import annotations

from ..rate_limits import TokenBucket


class FleetBudget:
    """The server-wide budgets of `limits` (a ServeLimits), shared by every engine in `engines`."""

    def __init__(self, limits):
        self.limits = limits
        self.engines: list = []  # ServedEngine, each adding itself
        self.per_server = TokenBucket(limits.requests_per_server_per_s,
                                      limits.burst * limits.requests_per_server_per_s / limits.requests_per_client_per_s)

    def num_live(self) -> int:
        return sum(len(engine.streams) for engine in self.engines)

    def num_prompt_tokens(self) -> int:
        return sum(engine.source.num_prompt_tokens for engine in self.engines)

    def holders(self) -> str:
        """Who holds the budget, as an error message names it."""
        n = len(self.engines)
        return "this served session has" if n == 1 else f"this server's {n} served sessions have"
