"""State frames on the wire: one binary websocket message, a JSON header and typed arrays.

Layout (all little-endian): a uint32 with the header's length in bytes, the header as UTF-8 JSON,
zero padding to a multiple of 4, then each array the header lists under "arrays" ([name, dtype,
length], dtype "i32" or "u8"), each padded to a multiple of 4. The browser wraps the arrays as
typed-array views of the received buffer, so 16,384 blocks cost no JSON parsing at all.
`decode` is the reference reader (the tests' client uses it).
"""

from __future__ import annotations

import json
import struct
import sys
from array import array

DTYPES = {"i32": "i", "u8": "B"}


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def encode(header: dict, arrays: dict[str, array]) -> bytes:
    """The frame: `header` (JSON-able) with `arrays` (array('i') or array('B')) after it."""
    listed = []
    parts = []
    for name, values in arrays.items():
        dtype = "i32" if values.typecode == "i" else "u8"
        listed.append([name, dtype, len(values)])
        if sys.byteorder == "big" and dtype == "i32":
            values = array("i", values)
            values.byteswap()
        data = values.tobytes()
        parts += [data, _pad(len(data))]
    text = json.dumps({**header, "arrays": listed}, separators=(",", ":")).encode()
    return b"".join([struct.pack("<I", len(text)), text, _pad(len(text)), *parts])


def decode(data: bytes) -> dict:
    """The header with each listed array in place of "arrays", as a Python list."""
    (length,) = struct.unpack_from("<I", data)
    header = json.loads(data[4:4 + length])
    offset = 4 + length + (-length % 4)
    for name, dtype, count in header.pop("arrays"):
        values = array(DTYPES[dtype])
        size = count * values.itemsize
        values.frombytes(data[offset:offset + size])
        if sys.byteorder == "big" and dtype == "i32":
            values.byteswap()
        header[name] = values.tolist()
        offset += size + (-size % 4)
    return header
