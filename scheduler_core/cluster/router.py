"""The router in front of a fleet: which replica gets each request.

Policies, as production routers name them:
- `round-robin`: replicas in turn.
- `least-requests`: the replica with the fewest outstanding requests.
- `least-kv`: the replica with the lowest KV cache usage.
- `prefix-aware`: the replica whose prefix cache holds the most leading blocks of the prompt (llm-d's
  KV-cache-aware routing); no hit anywhere, or a tie: the fewest outstanding requests.
- `session-affinity`: every request of a session to the replica its first request went to.
- `vllm-dp`: vLLM's own balancer over the engine cores of one data-parallel deployment
  (dp_balancer.py): waiting and running counts from the DP coordinator, its own in-flight counts.
Ties go to the fewest outstanding requests, then the lowest index (`vllm-dp`: in turn, as vLLM's);
routing is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from ..engine.request import Request
from ..errors import ConfigError
from ..workload.workload import RequestSpec
from .dp_balancer import DPLoadBalancer
from .replica import Replica

ROUTER_POLICIES = ("round-robin", "least-requests", "least-kv", "prefix-aware", "session-affinity", "vllm-dp")


def first_block_session(spec: RequestSpec, block_size: int = 16) -> Hashable:
    """A session key without a session header: a conversation resends its history, so its turns
    start with the same tokens; the first block of the prompt stands for the session."""
    return tuple(spec.prompt_token_ids[:block_size])


def prompt_block_hashes(spec: RequestSpec, block_size: int) -> list[int]:
    """The chained hashes of the prompt's full blocks, exactly as a replica's KV cache computes them."""
    probe = Request(spec.request_id, spec.prompt_token_ids, 1)
    return probe.update_block_hashes(block_size, len(spec.prompt_token_ids))


class Router:
    """Routes each arriving request to one replica of a pool and counts its decisions."""

    def __init__(self, policy: str = "round-robin",
                 session_of: Callable[[RequestSpec], Hashable] = first_block_session):
        if policy not in ROUTER_POLICIES:
            raise ConfigError("cluster.router", f"unknown router {policy!r}; expected one of {', '.join(ROUTER_POLICIES)}")
        self.policy = policy
        self.session_of = session_of
        self._next = 0
        self._sessions: dict[Hashable, int] = {}
        self.decisions: dict[str, int] = {}
        self.dp_balancer = DPLoadBalancer() if policy == "vllm-dp" else None
        # The last decision's reason, for the event log ("3 cached blocks", "fewest requests", ...).
        self.last_reason = ""

    def route(self, spec: RequestSpec, pool: Sequence[Replica], now_s: float | None = None) -> Replica:
        """The replica for `spec`, arriving at `now_s` (its arrival time unless given)."""
        if self.dp_balancer is not None:
            chosen, self.last_reason = self.dp_balancer.choose(pool, spec.arrival_time if now_s is None else now_s)
        else:
            chosen = self._choose(spec, pool)
        self.decisions[chosen.name] = self.decisions.get(chosen.name, 0) + 1
        return chosen

    def _least_loaded(self, candidates: Sequence[Replica]) -> Replica:
        return min(candidates, key=lambda r: (r.num_outstanding, r.index))

    def _choose(self, spec: RequestSpec, pool: Sequence[Replica]) -> Replica:
        policy = self.policy
        if policy == "round-robin":
            chosen = pool[self._next % len(pool)]
            self._next += 1
            self.last_reason = "in turn"
            return chosen
        if policy == "least-requests":
            self.last_reason = "fewest outstanding requests"
            return self._least_loaded(pool)
        if policy == "least-kv":
            self.last_reason = "lowest KV usage"
            return min(pool, key=lambda r: (r.kv_usage, r.num_outstanding, r.index))
        if policy == "prefix-aware":
            hashes_by_block_size: dict[int, list[int]] = {}
            scores = []
            for replica in pool:
                block_size = replica.sim.config.block_size
                if block_size not in hashes_by_block_size:
                    hashes_by_block_size[block_size] = prompt_block_hashes(spec, block_size)
                scores.append(replica.num_cached_prefix_blocks(hashes_by_block_size[block_size]))
            best = max(scores)
            chosen = self._least_loaded([r for r, s in zip(pool, scores) if s == best])
            self.last_reason = f"{best} cached prefix blocks" if best else "no cached prefix; fewest requests"
            return chosen
        key = self.session_of(spec)
        if key in self._sessions:
            self.last_reason = "session's replica"
            return pool[self._sessions[key]]
        chosen = self._least_loaded(pool)
        self._sessions[key] = pool.index(chosen)
        self.last_reason = "new session; fewest requests"
        return chosen
