"""What a session remembers of its past, in bounded memory however long it plays.

Chart points are thinned as the run grows (the snapshot never sends more than `max_points`
anyway), and each request's timeline is capped; step back stays exact because it rests on the
simulation's checkpoints, not on these.
"""

from __future__ import annotations

from scheduler_core.utils import cdiv

MAX_TIMELINE_ENTRIES = 64


class ChartHistory:
    """One chart point per step at first; past `max_points`, every other point is dropped and
    the stride between kept steps doubles, so memory stays flat while the chart keeps its shape."""

    def __init__(self, max_points: int):
        self.max_points = max_points
        self.stride = 1
        # Points of the steps that are multiples of `stride`, in order.
        self.kept: list[list] = []
        # The latest step's point (kept or not): the chart always ends at the current step.
        self.latest: list | None = None
        self.num_steps = 0

    def append(self, point: list) -> None:
        if self.num_steps % self.stride == 0:
            self.kept.append(point)
            if len(self.kept) > self.max_points:
                del self.kept[1::2]
                self.stride *= 2
        self.latest = point
        self.num_steps += 1

    def truncate(self, num_steps: int, latest: list | None) -> None:
        """Forget the steps from `num_steps` on (stepping back); `latest` is the point of step
        `num_steps - 1`, which the caller knows from its checkpoint."""
        del self.kept[cdiv(num_steps, self.stride):]
        self.num_steps = num_steps
        self.latest = latest

    def points(self) -> list[list]:
        """The kept points and the latest one: what a snapshot draws."""
        if self.latest is None or (self.num_steps - 1) % self.stride == 0:
            return list(self.kept)
        return self.kept + [self.latest]


def append_capped(entries: list[dict], entry: dict) -> None:
    """A request's timeline grows only up to MAX_TIMELINE_ENTRIES (a request preempted over and
    over would otherwise grow it every step); the start and the most recent entries are kept."""
    entries.append(entry)
    if len(entries) > MAX_TIMELINE_ENTRIES:
        del entries[MAX_TIMELINE_ENTRIES // 4]
