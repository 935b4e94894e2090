"""A simulation's changing state frozen to bytes, for stepping back.

A live session keeps about a hundred checkpoints. Held as Python objects, each is thousands of
requests and lists that the garbage collector walks on every full collection (with a 256-request
batch, such collections stalled play for over 100 ms); frozen, a checkpoint is one bytes object
the collector never visits, and taking one costs a pickle rather than a deep copy.

A checkpoint is taken inside a step, on the server's event loop, so its cost is a frame the
viewers wait for. Requests are most of it (3,000 of them on a busy engine), so they are frozen
by column rather than one by one: the pickler writes each request as its index, and then every
field of all of them as one list, which the pickler's C code writes without calling back into
Python per request. Prompts are never mutated and can be long, so they are not copied: a
checkpoint keeps them by reference beside its bytes, as a deep copy shared them.
"""

from __future__ import annotations

import functools
import io
import operator
import pickle
from array import array
from dataclasses import dataclass

from ..engine.request import Request

# Everything a request changes as it runs, and what identifies it; its prompt travels apart, its
# token times as their bytes (pickling an array calls back into Python for each one).
_COLUMNS = tuple(name for name in Request.__slots__ if name not in ("prompt_token_ids", "token_times"))
_column_getters = tuple(operator.attrgetter(name) for name in _COLUMNS)
_prompt_of = operator.attrgetter("prompt_token_ids")
_token_times_of = operator.attrgetter("token_times")


class FrozenState:
    """Objects pickled together (their sharing kept), thawed into fresh copies as often as asked."""

    __slots__ = ("data", "prompts")

    def __init__(self, objects: object):
        buffer, requests = io.BytesIO(), []
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        # A dispatch table, not `reducer_override`: the pickler consults it for requests only,
        # instead of calling back into Python for every object it writes.
        pickler.dispatch_table = {Request: functools.partial(_freeze_request, requests)}
        pickler.dump(objects)
        # The same pickler, so a field shared with the objects above stays shared.
        pickler.dump(([list(map(getter, requests)) for getter in _column_getters],
                      list(map(array.tobytes, map(_token_times_of, requests)))))
        self.data = buffer.getvalue()
        self.prompts = tuple(map(_prompt_of, requests))

    def thaw(self) -> object:
        thawer = _Thawer(io.BytesIO(self.data), [Request.__new__(Request) for _ in self.prompts])
        objects = thawer.load()
        columns, token_times = thawer.load()
        requests = thawer.requests
        for name, column in zip(_COLUMNS, columns):
            for request, value in zip(requests, column):
                setattr(request, name, value)
        for request, prompt, times in zip(requests, self.prompts, token_times):
            request.prompt_token_ids = prompt
            request.token_times = array("d", times)
        return objects


def _freeze_request(requests: list, request: Request):
    requests.append(request)
    return _thawed_request, (len(requests) - 1,)


class _Thawer(pickle.Unpickler):
    """Loads the objects (requests as empty shells, by index), then the requests' columns."""

    def __init__(self, file: io.BytesIO, requests: list):
        super().__init__(file)
        self.requests = requests

    def find_class(self, module: str, name: str):
        if module == __name__ and name == "_thawed_request":
            return self.requests.__getitem__
        return super().find_class(module, name)


def _thawed_request(index: int) -> Request:
    """Stands for a request in the pickle; `_Thawer` resolves it to the request's shell."""
    raise AssertionError("resolved by _Thawer.find_class")


@dataclass(frozen=True)
class SimulationState:
    """An opaque copy of everything that changes as the simulation steps."""

    step_index: int
    clock_s: float
    next_arrival: int
    pending: list
    next_release: int
    # The scheduler, the engine loop and the metrics, frozen together so the copies share what
    # the originals share (the loop drives its scheduler, the metrics read its draft counters).
    frozen: FrozenState
    finished_requests: dict
    gpu_free_at: float = 0.0
