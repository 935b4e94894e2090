"""Requests finished from outside the scheduler, between steps: vLLM's `Scheduler.finish_requests`.

The API server calls it (through the engine core's `abort_requests`) when a client disconnects:
the request leaves whichever queue holds it and frees its KV blocks at once. Full blocks that hold
a hash stay in the prefix cache, as any finished request's do. The scheduler's next output lists
the request among the finished ones (here: `has_finished_requests`, and the step record's
`aborted`). A batch still in flight under async scheduling may hold a token for it; that token's
update finds the request gone and drops it (vLLM: "aborted while the model is executing it").
"""

from __future__ import annotations

from collections.abc import Iterable

from .request import Request, RequestStatus


class ExternalFinish:
    """`Scheduler.finish_requests`, kept apart from the step's own finishing (`_finish_requests`)."""

    def finish_requests(self, request_ids: str | Iterable[str], finished_status: RequestStatus) -> list[Request]:
        """Finish these requests now with `finished_status` (vLLM's client abort is
        `FINISHED_ABORTED`); an id unknown or already finished is skipped, as vLLM skips it.
        Returns the requests finished, in the order asked."""
        assert finished_status.is_finished
        if isinstance(request_ids, str):
            request_ids = (request_ids,)
        finished: list[Request] = []
        for request_id in dict.fromkeys(request_ids):
            request = self.requests.get(request_id)
            if request is None or request.status.is_finished:
                continue
            # Running: out of the batch. Swapped (V0): its CPU copy is dropped too. Otherwise it
            # waits (new, or preempted with no blocks left): out of the waiting queue.
            if request.status == RequestStatus.RUNNING:
                self.running.remove(request)
            elif request.status == RequestStatus.SWAPPED:
                self.swapped.remove(request)
                self.swap_space.free(request_id)
            else:
                self.waiting.remove_request(request)
            request.status = finished_status
            self.kv_cache_manager.free(request)
            del self.requests[request_id]
            if self.prefill_chunk_reqs is not None:
                self.prefill_chunk_reqs.discard(request_id)
            finished.append(request)
        if finished:
            self.has_finished_requests = True
        return finished
