"""The data-parallel ranks of an MoE model step in lockstep, as vLLM's `DPEngineCoreProc` runs them.

Every MoE layer gathers the tokens of all DP ranks (moe.py), so no rank can run a forward pass
alone: while any rank has requests, every rank steps (vllm/v1/engine/core.py, `run_busy_loop`:
a rank with nothing scheduled runs `execute_dummy_batch`), and a step ends when the slowest rank's
does. Each rank's batch is padded to the largest rank's under CUDA graphs
(`coordinate_batch_across_dp`), so the MoE layers see DP x the largest batch; with
`--enforce-eager`, the sum. Not modelled: the wave's end (ranks keep stepping dummy batches up to
the next `dp_sync_interval`-th step, 16, after the last request finishes; that costs time only if a
request arrives in those few milliseconds) and async scheduling's overlap across ranks (the ranks
run the synchronous loop).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..engine.step_record import StepRecord
from .replica import Replica


class LockstepRanks:
    """DP ranks that step together; each step's time is the slowest rank's."""

    def __init__(self, ranks: Sequence[Replica], pad_to_largest: bool = True):
        self.ranks = list(ranks)
        self.pad_to_largest = pad_to_largest
        self.num_steps = 0
        self.num_dummy_batches = 0

    def next_step_time(self) -> float | None:
        """When the group steps next: as soon as any rank has work."""
        times = [t for t in (r.next_step_time() for r in self.ranks) if t is not None]
        return min(times) if times else None

    def moe_num_tokens(self, tokens_per_rank: Sequence[int]) -> int:
        if self.pad_to_largest:
            return len(self.ranks) * max(tokens_per_rank, default=0)
        return sum(tokens_per_rank)

    def step(self) -> list[tuple[Replica, StepRecord]]:
        """One lockstep step: the ranks that ran a batch, with their records (idle ranks run a dummy
        batch and wait for the step's end)."""
        start = self.next_step_time()
        for rank in self.ranks:
            rank.sim.clock_s = max(rank.sim.clock_s, start)
        working = [r for r in self.ranks if r.next_step_time() == start]
        idle = [r for r in self.ranks if r not in working]
        batches = [r.sim.plan_step() for r in working]
        moe_tokens = self.moe_num_tokens([sum(c.num_tokens for c in b.scheduled) for b in batches])
        ends = [r.sim.step_end(b, moe_num_tokens=moe_tokens) for r, b in zip(working, batches)]
        end = max(clock_after for clock_after, _ in ends)
        records = []
        for rank, batch, (clock_after, breakdown) in zip(working, batches, ends):
            if end > clock_after:
                breakdown["dp_wait"] = end - clock_after  # waiting on the slowest rank's collectives
            records.append((rank, rank.sim.finish_step(batch, end, breakdown)))
        for rank in idle:
            rank.sim.clock_s = end
        self.num_dummy_batches += len(idle)
        self.num_steps += 1
        return records
