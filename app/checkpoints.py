"""Step back's checkpoints, within a budget of bytes per session and per server.

A checkpoint is a simulation snapshot (one pickle of the engine's state: `FrozenState.data`)
with the event log as it was. Its size is measured, not guessed: the pickle's length plus the
containers it holds of its own (the finished requests' dict, the pending list, the prompts and
events tuples; what they point to is shared with the live session). When a new checkpoint would
pass the session's share, every other checkpoint is dropped (step 0 always stays) and the
interval doubles, until it fits: step back stays exact, it replays further.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from scheduler_core.engine.step_record import StepRecord
from scheduler_core.sim.simulation import SimulationState


@dataclass(frozen=True)
class Checkpoint:
    state: SimulationState
    events: tuple[dict, ...]
    last_record: StepRecord | None

    @property
    def step_index(self) -> int:
        return self.state.step_index

    @property
    def num_bytes(self) -> int:
        state = self.state
        return (len(state.frozen.data) + sys.getsizeof(state.frozen.prompts) + sys.getsizeof(state.pending)
                + sys.getsizeof(state.finished_requests) + sys.getsizeof(self.events))


class MemoryBudgetSpent(Exception):
    """No room for another session's checkpoints: a 503 naming the budget."""


class MemoryBudget:
    """The server's budget for checkpoints: each session's share is `max_session_bytes`, or an
    equal part of `max_server_bytes` when the sessions' shares would add up to more, so the total
    of all sessions never passes it."""

    def __init__(self, max_session_bytes: int, max_server_bytes: int):
        self.max_session_bytes = max_session_bytes
        self.max_server_bytes = max_server_bytes
        self.members: set[Checkpoints] = set()

    @classmethod
    def of(cls, settings) -> "MemoryBudget":
        return cls(settings.max_session_bytes, settings.max_server_bytes)

    @property
    def share(self) -> int:
        return min(self.max_session_bytes, self.max_server_bytes // max(1, len(self.members)))

    @property
    def num_bytes(self) -> int:
        return sum(member.num_bytes for member in self.members)

    def admit(self, checkpoints: "Checkpoints") -> None:
        """A new session: the others thin to their smaller share; refused (MemoryBudgetSpent) when even
        every session's first checkpoint would not fit."""
        self.members.add(checkpoints)
        for member in self.members:
            member.fit(self.share)
        if self.num_bytes > self.max_server_bytes:
            self.members.discard(checkpoints)
            raise MemoryBudgetSpent(f"the server's memory budget for sessions ({self.max_server_bytes / 2**20:.0f} MiB) "
                             "is spent; try again when a session has ended")

    def leave(self, checkpoints: "Checkpoints") -> None:
        self.members.discard(checkpoints)


class Checkpoints:
    """A session's checkpoints, oldest first: every `interval` steps, at most `max_count` of
    them, and at most the budget's share of bytes."""

    def __init__(self, first: Checkpoint, interval: int, max_count: int, budget: MemoryBudget):
        self.items = [first]
        self.interval = interval
        self.max_count = max_count
        self.num_bytes = first.num_bytes
        self.budget = budget

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Checkpoint:
        return self.items[index]

    def add(self, checkpoint: Checkpoint) -> None:
        share = self.budget.share
        self.items.append(checkpoint)
        self.num_bytes += checkpoint.num_bytes
        if len(self.items) > self.max_count:
            self._thin()
        self.fit(share)

    def fit(self, max_bytes: int) -> None:
        """Thin until within `max_bytes`, or only step 0 and the newest are left; then the newest
        goes too (step 0 stays: the run can always be replayed from its start)."""
        while self.num_bytes > max_bytes and len(self.items) > 2:
            self._thin()
        if self.num_bytes > max_bytes and len(self.items) == 2:
            self.num_bytes -= self.items.pop().num_bytes
            self.interval *= 2  # fewer snapshots taken only to be dropped

    def _thin(self) -> None:
        """Keep step 0 and every other checkpoint, doubling the interval."""
        dropped = self.items[1::2]
        self.items = self.items[:1] + self.items[2::2]
        self.num_bytes -= sum(c.num_bytes for c in dropped)
        self.interval *= 2

    def at_or_before(self, step: int) -> Checkpoint:
        return max((c for c in self.items if c.step_index <= step), key=lambda c: c.step_index)

    def truncate_after(self, step: int) -> None:
        """Forget the checkpoints past `step` (stepping back to it)."""
        kept = [c for c in self.items if c.step_index <= step]
        self.num_bytes -= sum(c.num_bytes for c in self.items[len(kept):])
        self.items = kept
