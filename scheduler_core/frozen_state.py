"""A simulation's changing state frozen to bytes, for stepping back.

A live session keeps about a hundred checkpoints. Held as Python objects, each is thousands of
requests and lists that the garbage collector walks on every full collection (with a 256-request
batch, such collections stalled play for over 100 ms); frozen, a checkpoint is one bytes object
the collector never visits, and taking one costs a pickle rather than a deep copy. Prompts are
never mutated and can be long, so they are not copied: a checkpoint keeps them by reference
beside its bytes, as a deep copy shared them.
"""

from __future__ import annotations

import functools
import io
import operator
import pickle
from array import array

from .request import Request

# Everything a request changes as it runs, and what identifies it; its prompt travels apart.
_REQUEST_FIELDS = tuple(name for name in Request.__slots__ if name != "prompt_token_ids")
_request_fields = operator.attrgetter(*_REQUEST_FIELDS)
# Token times travel as their bytes: pickling an array goes through its reduce protocol (3.7 ms
# for the 2,744 empty ones of a long waiting queue), its bytes do not.
_TOKEN_TIMES = _REQUEST_FIELDS.index("token_times")


class FrozenState:
    """Objects pickled together (their sharing kept), thawed into fresh copies as often as asked."""

    __slots__ = ("data", "prompts")

    def __init__(self, objects: object):
        buffer, prompts = io.BytesIO(), []
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        # A dispatch table, not `reducer_override`: the pickler consults it for requests only,
        # instead of calling back into Python for every object it writes.
        pickler.dispatch_table = {Request: functools.partial(_freeze_request, prompts)}
        pickler.dump(objects)
        self.data = buffer.getvalue()
        self.prompts = tuple(prompts)

    def thaw(self) -> object:
        return _Thawer(io.BytesIO(self.data), self.prompts).load()


def _freeze_request(prompts: list, request: Request):
    prompts.append(request.prompt_token_ids)
    fields = list(_request_fields(request))
    fields[_TOKEN_TIMES] = request.token_times.tobytes()
    return _thaw_request, (len(prompts) - 1, tuple(fields))


class _Thawer(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, prompts: tuple):
        super().__init__(file)
        self.prompts = prompts

    def find_class(self, module: str, name: str):
        if module == __name__ and name == "_thaw_request":
            return functools.partial(_thaw_request, prompts=self.prompts)
        return super().find_class(module, name)


def _thaw_request(prompt_index: int, fields: tuple, prompts: tuple = ()) -> Request:
    request = Request.__new__(Request)
    request.prompt_token_ids = prompts[prompt_index]
    for name, value in zip(_REQUEST_FIELDS, fields):
        setattr(request, name, value)
    request.token_times = array("d", fields[_TOKEN_TIMES])
    return request
