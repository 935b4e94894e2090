"""Aborts waiting for their step: a client that went away, at a simulated time.

vLLM's engine core takes an abort from its input queue between two steps, after the request's own
add (both come over the same socket, in order). Here an abort asked for at `abort_time` is applied
at the start of the first step that begins at or after it, once its request has reached the
scheduler; a served run and the replay of its trace (each request's `abort_time`) so apply it
before the same step.
"""

from __future__ import annotations

from ..engine.request import Request, RequestStatus
from ..engine.scheduler import Scheduler


class PendingAborts:
    """Request id -> when its client went away (simulated seconds), until its step applies it."""

    def __init__(self) -> None:
        self.abort_times: dict[str, float] = {}

    def add(self, request_id: str, abort_time: float) -> None:
        self.abort_times.setdefault(request_id, abort_time)

    def discard(self, request_id: str) -> None:
        """The request finished on its own first: nothing is left to abort."""
        self.abort_times.pop(request_id, None)

    def apply(self, now: float, scheduler: Scheduler) -> list[Request]:
        """At a step's start `now`: every abort due whose request is in the scheduler, finished as
        vLLM's `FINISHED_ABORTED` (its blocks freed); returns those requests."""
        if not self.abort_times:
            return []
        due = [rid for rid, t in self.abort_times.items() if t <= now and rid in scheduler.requests]
        for rid in due:
            del self.abort_times[rid]
        aborted = scheduler.finish_requests(due, RequestStatus.FINISHED_ABORTED)
        for request in aborted:
            request.finish_time = now
        return aborted
