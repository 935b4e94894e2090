"""A served session's frames: each step's delta is built when the step is taken, from the state
right after it, and reaches the viewers when the step is released (its tokens leave the API
server, `engine.sent_at`).

The engine takes a step when the wall clock reaches its start, so by the time a step's tokens
are released it has taken the next few (those whose start has come while the first one's tokens
went through the front end). A delta built at release from the simulation as it is then would
carry those steps' step number, clock, requests and blocks with the released step's record: the
top bar a few steps ahead of the batch panel. Built at take time and held, every number in it
describes the one step. A snapshot (a page connecting) is the state as taken, whole and
consistent, a few steps ahead of the deltas still held; a viewer skips those (`Viewer.snapshot_seq`).
"""

from __future__ import annotations

from collections import deque
from functools import reduce

from ..frames import Delta
from ..live import LiveSession
from ..viewer import MAX_DELTA_STEPS


class ServedLiveSession(LiveSession):
    """A live session whose steps the served engine takes (`hold`) and releases (`publish_steps`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Steps taken, not released: (the step's index, its delta, its events).
        self.held: deque[tuple[int, Delta, list[dict]]] = deque()
        self.unpublished: list[Delta] = []  # released steps' deltas no viewer has been offered yet

    def hold(self, records) -> None:
        """The steps just taken, as frames of the state right after them, until their release."""
        if records:
            self.held.append((records[-1].step, self.session.delta_frame(records), self.session.take_events()))

    def publish_steps(self, records) -> None:
        """The released steps' held frames, until a viewer can take them (`flush`); more than a
        delta spans go out as a snapshot instead. `records` None: a jump, every viewer a snapshot."""
        if records is None:
            self.held.clear()  # the jump's sequence number is past theirs
            super().publish_steps(None)
            return
        if not records:
            return
        events = []
        while self.held and self.held[0][0] <= records[-1].step:
            _, delta, step_events = self.held.popleft()
            self.unpublished.append(delta)
            events += step_events
        if sum(delta.num_steps for delta in self.unpublished) > MAX_DELTA_STEPS:
            self.publish_snapshot()
        for viewer in self.viewers:
            viewer.offer_events(events)
            viewer.wakeup.set()

    def flush(self) -> None:
        """The released frames as one delta to every viewer: those after the snapshot it was last
        sent, for a viewer whose snapshot came while they were held."""
        if not self.unpublished:
            return
        deltas, self.unpublished = self.unpublished, []
        merged = reduce(Delta.merged, deltas)
        for viewer in self.viewers:
            if viewer.snapshot_seq <= merged.base_seq:
                viewer.offer_delta(merged)
            elif later := [delta for delta in deltas if delta.seq > viewer.snapshot_seq]:
                viewer.offer_delta(reduce(Delta.merged, later))
