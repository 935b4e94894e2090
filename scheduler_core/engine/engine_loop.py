"""vLLM's engine loop with a batch queue (`EngineCore.step_with_batch_queue`), used for async
scheduling: step N+1 is scheduled while step N runs on the GPU.

One `step()` is one pass of the loop: schedule a new batch if the queue has room; if the queue is
still not full and there is more to do, return at once (the GPU is busy with the batch in flight);
otherwise wait for the oldest batch and process its output (`update_from_output`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .scheduler import Scheduler, SchedulerOutput, UpdateResult

# vLLM's `max_concurrent_batches` with async scheduling and no pipeline parallelism.
ASYNC_BATCH_QUEUE_SIZE = 2


@dataclass
class EnginePass:
    """What one pass of the loop did: the batch it scheduled (if any) and the older batch it
    completed (if any), with that batch's update."""

    scheduled: SchedulerOutput | None
    completed: SchedulerOutput | None
    update: UpdateResult | None
    # When the completed batch's output came back (the `now` its update was stamped with).
    completed_at: float | None = None


class BatchQueueLoop:
    """Batches in flight, oldest last, as in vLLM's `batch_queue` deque."""

    def __init__(self, scheduler: Scheduler, size: int = ASYNC_BATCH_QUEUE_SIZE):
        self.scheduler = scheduler
        self.size = size
        # (batch, when its output comes back), newest first.
        self.in_flight: deque[tuple[SchedulerOutput, float]] = deque()

    def has_requests(self) -> bool:
        scheduler = self.scheduler
        return scheduler.has_unfinished_requests() or scheduler.has_finished_requests

    def step(self, now: float, done_at: Callable[[SchedulerOutput], float] | None = None) -> EnginePass:
        """One pass at time `now`; `done_at(batch)` says when a newly scheduled batch's output will
        be back (default: at once, as in a replay, where time is the pass number)."""
        scheduled = None
        if self.has_requests():
            scheduled = self.scheduler.schedule(now=now)
            self.in_flight.appendleft((scheduled, done_at(scheduled) if done_at else now))
            model_executed = scheduled.total_num_scheduled_tokens > 0
            if len(self.in_flight) < self.size and (model_executed or self.has_requests()):
                return EnginePass(scheduled, None, None)
        elif not self.in_flight:
            return EnginePass(None, None, None)  # idle: nothing to schedule, nothing running
        completed, completed_at = self.in_flight.pop()
        completed_at = max(completed_at, now)
        update = self.scheduler.update_from_output(completed, now=completed_at)
        return EnginePass(scheduled, completed, update, completed_at)
