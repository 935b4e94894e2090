"""The waiting queue, in first-come-first-served or priority order (vLLM's `request_queue.py`)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator

from .request import Request


class FCFSRequestQueue:
    """Arrival order; preempted requests go back to the head, so they resume first."""

    def __init__(self) -> None:
        self._queue: deque[Request] = deque()

    def add_request(self, request: Request) -> None:
        self._queue.append(request)

    def prepend_request(self, request: Request) -> None:
        self._queue.appendleft(request)

    def prepend_requests(self, requests: Iterable[Request]) -> None:
        """Put `requests` back at the head, keeping their order."""
        self._queue.extendleft(reversed(list(requests)))

    def peek_request(self) -> Request:
        return self._queue[0]

    def pop_request(self) -> Request:
        return self._queue.popleft()

    def remove_request(self, request: Request) -> None:
        self._queue.remove(request)

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def __iter__(self) -> Iterator[Request]:
        return iter(self._queue)


class PriorityRequestQueue:
    """Lowest priority value first, ties by arrival; there is no head to prepend to."""

    def __init__(self) -> None:
        self._heap: list[tuple[tuple, Request]] = []

    def add_request(self, request: Request) -> None:
        heapq.heappush(self._heap, (request.sort_key(), request))

    prepend_request = add_request

    def prepend_requests(self, requests: Iterable[Request]) -> None:
        for request in requests:
            self.add_request(request)

    def peek_request(self) -> Request:
        return self._heap[0][1]

    def pop_request(self) -> Request:
        return heapq.heappop(self._heap)[1]

    def remove_request(self, request: Request) -> None:
        self._heap = [entry for entry in self._heap if entry[1] is not request]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def __iter__(self) -> Iterator[Request]:
        """In scheduling order (O(n log n); for views, not the step loop)."""
        return (request for _, request in sorted(self._heap, key=lambda entry: entry[0]))


def create_request_queue(scheduling_order: str) -> FCFSRequestQueue | PriorityRequestQueue:
    return PriorityRequestQueue() if scheduling_order == "priority" else FCFSRequestQueue()
