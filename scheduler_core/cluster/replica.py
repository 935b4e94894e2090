"""One engine of a fleet: a full servescope `Simulation` with its own scheduler, KV cache and clock."""

from __future__ import annotations

from ..engine.request import Request
from ..sim.simulation import Simulation


class Replica:
    """A simulation plus what a router asks of it: its load, its KV usage and its prefix cache."""

    def __init__(self, index: int, role: str, sim: Simulation):
        self.index = index
        self.role = role
        self.sim = sim
        # Prefilled requests routed here that wait for free blocks before their transfer can start,
        # and transfers under way (both count as load).
        self.awaiting_blocks: list = []
        self.num_in_transfer = 0

    @property
    def name(self) -> str:
        return f"{self.role}-{self.index}" if self.role != "colocated" else f"replica-{self.index}"

    @property
    def num_outstanding(self) -> int:
        """Requests sent here and not finished: queued at the engine, running, or not yet arrived."""
        sim = self.sim
        return sim.scheduler.num_unfinished + sim.num_pending + len(self.awaiting_blocks) + self.num_in_transfer

    @property
    def kv_usage(self) -> float:
        return self.sim.scheduler.kv_cache_manager.usage

    def num_cached_prefix_blocks(self, block_hashes: list[int]) -> int:
        """How many leading blocks of a prompt this replica's prefix cache holds (in use or evictable)."""
        kv = self.sim.scheduler.kv_cache_manager
        if not getattr(kv, "enable_caching", False):
            return 0
        cached = kv.block_pool.cached_block_hash_to_block
        count = 0
        for block_hash in block_hashes:
            if block_hash not in cached:
                break
            count += 1
        return count

    def next_step_time(self) -> float | None:
        return self.sim.next_step_time()

    def reserve_blocks(self, request: Request, num_tokens: int) -> bool:
        """Allocate blocks for a transfer's `num_tokens` tokens before it starts (as a KV connector
        does); False if the pool is too short for them now."""
        kv = self.sim.scheduler.kv_cache_manager
        return not num_tokens or kv.allocate_slots(request, num_tokens) is not None

    def receive(self, request: Request, num_tokens: int, now: float) -> None:
        """The transfer has landed: the request joins the queue with `num_tokens` already computed."""
        sim = self.sim
        request.num_computed_tokens = num_tokens
        # vLLM's decode side looks the prompt up in its own prefix cache first and finds nothing,
        # then its KV connector supplies the KV (counted apart, `vllm:external_prefix_cache_hits`):
        # one query of this engine's cache, no hit.
        sim.scheduler.record_prefix_lookup(request, 0)
        if not sim.scheduler.has_unfinished_requests():
            # An idle engine's clock stood still; it wakes when the request lands.
            sim.clock_s = max(sim.clock_s, now)
        sim.scheduler.add_request(request)
