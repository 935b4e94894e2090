"""A synthetic prompt's token ids held in a few bytes: a shared system prompt plus a unique tail.

Only the shared part holds token ids (one compact array per system prompt, referenced by every
request that starts with it); the unique tail is a run of ids no other prompt uses, given by its
first id and its length. Slicing yields the same ids a tuple would, so block hashes, and so
prefix caching, are exactly those of the tuple it replaces.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence


class Prompt(Sequence):
    """`prefix` (shared, never mutated) followed by the ids `tail_start .. tail_start + tail_len - 1`."""

    __slots__ = ("prefix", "tail_start", "tail_len")

    def __init__(self, prefix: array, tail_start: int, tail_len: int):
        self.prefix = prefix
        self.tail_start = tail_start
        self.tail_len = tail_len

    def __len__(self) -> int:
        return len(self.prefix) + self.tail_len

    def __getitem__(self, index):
        prefix_len = len(self.prefix)
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return tuple(self[i] for i in range(start, stop, step))
            head = tuple(self.prefix[start:min(stop, prefix_len)]) if start < prefix_len else ()
            tail = range(self.tail_start + max(start, prefix_len) - prefix_len, self.tail_start + stop - prefix_len)
            return head + tuple(tail)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("prompt index out of range")
        return self.prefix[index] if index < prefix_len else self.tail_start + index - prefix_len

    def __iter__(self):
        yield from self.prefix
        yield from range(self.tail_start, self.tail_start + self.tail_len)

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self) -> str:
        return f"Prompt({len(self.prefix)} shared + {self.tail_len} unique tokens)"
