"""vLLM's prefix-cache block hashes, byte for byte, for the KV events that routers read.

The engine decides with its own block hash (an int chained by Python's `hash`, fast and the same
in every process); a KV-aware router that compares hashes with a real vLLM needs vLLM's. vLLM
hashes the tuple `(parent hash, block token ids, extra keys)` with the function named by
`--prefix-caching-hash-algo` (`vllm/utils/hashing.py`), the first block's parent being
`NONE_HASH`, the hash of a seed (`PYTHONHASHSEED`, else "vllm-none-hash",
`vllm/v1/core/kv_cache_utils.py`):

- `sha256` (vLLM's default) hashes `pickle.dumps(tuple, protocol=5)`. No pickle here: the few
  values a block's tuple holds (bytes, str, ints, None, tuples) are written out as the pickler
  writes them (`pickled`), which the tests hold against `pickle.dumps`.
- `sha256_cbor` hashes the tuple's canonical CBOR (`cbor2.dumps(..., canonical=True)`), written
  by `cbor` below.

Events carry `ExternalBlockHash`: by default (`VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1`) the
digest's last 8 bytes as an unsigned int, else the 32 bytes themselves.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

PREFIX_CACHING_HASH_ALGOS = ("sha256", "sha256_cbor")
DEFAULT_NONE_HASH_SEED = "vllm-none-hash"
_UINT64_MASK = (1 << 64) - 1


# -- pickle protocol 5, for the values a block's tuple holds -------------------------------------------
def _pickle_int(value: int) -> bytes:
    if 0 <= value <= 0xFF:
        return b"K" + bytes((value,))  # BININT1
    if 0 <= value <= 0xFFFF:
        return b"M" + value.to_bytes(2, "little")  # BININT2
    if -(1 << 31) <= value < (1 << 31):
        return b"J" + value.to_bytes(4, "little", signed=True)  # BININT
    # LONG1: two's complement, little-endian, in the fewest bytes that keep the sign.
    data = value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
    if value < 0 and len(data) > 1 and data[-1] == 0xFF and data[-2] & 0x80:
        data = data[:-1]
    return b"\x8a" + bytes((len(data),)) + data


# Token ids recur (a vocabulary is at most a few hundred thousand ids): their encodings are kept
# as met, a dict lookup instead of a few comparisons and a conversion per token (at most 2^18
# entries, under 20 MB, for each encoding).
_SMALL_INT_LIMIT = 1 << 18
_PICKLED_INTS: dict[int, bytes] = {}


def _pickle_small_int(value: int) -> bytes:
    data = _PICKLED_INTS.get(value)
    if data is None:
        data = _pickle_int(value)
        if 0 <= value < _SMALL_INT_LIMIT:
            _PICKLED_INTS[value] = data
    return data


def _pickle_value(value, out: list[bytes]) -> None:
    if value is None:
        out.append(b"N")
    elif type(value) is int:
        out.append(_pickle_small_int(value))
    elif type(value) is bytes:
        size = len(value)
        out.append((b"C" + bytes((size,)) if size < 256 else b"B" + struct.pack("<I", size)) + value + b"\x94")
    elif type(value) is str:
        data = value.encode("utf-8")
        size = len(data)
        out.append((b"\x8c" + bytes((size,)) if size < 256 else b"X" + struct.pack("<I", size)) + data + b"\x94")
    elif type(value) is tuple:
        if not value:
            out.append(b")")  # EMPTY_TUPLE, not memoized
            return
        if len(value) > 3:
            out.append(b"(")  # MARK
        for item in value:
            _pickle_value(item, out)
        # TUPLE1/2/3, or TUPLE after the MARK; then MEMOIZE.
        out.append((b"\x85", b"\x86", b"\x87")[len(value) - 1] + b"\x94" if len(value) <= 3 else b"t\x94")
    else:
        raise TypeError(f"no pickle encoding here for {type(value).__name__}")


def pickled(value) -> bytes:
    """`pickle.dumps(value, protocol=5)` for None, ints, bytes, str and tuples of them, each object
    appearing once (the pickler would write a repeated one as a memo reference)."""
    body: list[bytes] = []
    _pickle_value(value, body)
    data = b"".join(body) + b"."
    if len(data) >= 64 * 1024:
        raise ValueError("a block's tuple this large would be split into several pickle frames")
    frame = b"\x95" + struct.pack("<Q", len(data)) if len(data) >= 4 else b""
    return b"\x80\x05" + frame + data


# -- canonical CBOR (RFC 8949), for the same values ---------------------------------------------------
def _cbor_head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes((major << 5 | value,))
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < 1 << (8 * size):
            return bytes((major << 5 | info,)) + value.to_bytes(size, "big")
    raise ValueError("CBOR integers past 64 bits are not written here")


_CBOR_INTS: dict[int, bytes] = {}


def _cbor_int(value: int) -> bytes:
    data = _CBOR_INTS.get(value)
    if data is None:
        data = _cbor_head(0, value) if value >= 0 else _cbor_head(1, -1 - value)
        if 0 <= value < _SMALL_INT_LIMIT:
            _CBOR_INTS[value] = data
    return data


def _cbor_value(value, out: list[bytes]) -> None:
    if value is None:
        out.append(b"\xf6")
    elif type(value) is int:
        out.append(_cbor_int(value))
    elif type(value) is bytes:
        out.append(_cbor_head(2, len(value)) + value)
    elif type(value) is str:
        data = value.encode("utf-8")
        out.append(_cbor_head(3, len(data)) + data)
    elif type(value) in (tuple, list):
        out.append(_cbor_head(4, len(value)))
        for item in value:
            _cbor_value(item, out)
    else:
        raise TypeError(f"no CBOR encoding here for {type(value).__name__}")


def cbor(value) -> bytes:
    """Canonical CBOR of None, ints, bytes, str and tuples or lists of them (tuples are arrays)."""
    out: list[bytes] = []
    _cbor_value(value, out)
    return b"".join(out)


ENCODERS = {"sha256": pickled, "sha256_cbor": cbor}


class VllmBlockHasher:
    """vLLM's `hash_block_tokens` under one hash algorithm and NONE_HASH seed."""

    def __init__(self, algo: str = "sha256", none_hash_seed: str = DEFAULT_NONE_HASH_SEED):
        if algo not in ENCODERS:
            raise ValueError(f"unknown prefix_caching_hash_algo {algo!r}; expected one of {list(PREFIX_CACHING_HASH_ALGOS)}")
        self.encode = ENCODERS[algo]
        self.none_hash = self.digest(none_hash_seed)

    def digest(self, value) -> bytes:
        return hashlib.sha256(self.encode(value)).digest()

    def hash_block_tokens(self, parent_block_hash: bytes | None, token_ids: Sequence[int],
                          extra_keys: tuple | None = None) -> bytes:
        """The block's hash: its parent's (NONE_HASH for the first block), its tokens, its extra keys."""
        return self.digest((parent_block_hash or self.none_hash, tuple(token_ids), extra_keys))


def external_block_hash(block_hash: bytes, as_int: bool = True) -> int | bytes:
    """What an event carries for a block hash (vLLM's `maybe_convert_block_hash`)."""
    return int.from_bytes(block_hash, "big") & _UINT64_MASK if as_int else block_hash
