"""vLLM's KV event batches on the wire: msgpack as msgspec writes vLLM 0.33.0's structs.

The schema is vLLM's (`vllm/distributed/kv_events.py`): a batch is an array `[ts, events,
data_parallel_rank]`; each event a map tagged by "type", with optional fields left out while
unset. The structs below declare that schema once more (same names, same order, same options), so
msgspec writes the very bytes vLLM does (down to its map headers), which a test holds against
bytes vLLM's own encoder wrote. The events themselves come from the core
(`scheduler_core.exports.vllm_kv_events`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler_core.exports import vllm_kv_events as core


class _Event(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored(_Event):
    block_hashes: list[int | bytes]
    parent_block_hash: int | bytes | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple[Any, ...] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int]] | None = None


class BlockRemoved(_Event):
    block_hashes: list[int | bytes]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class AllBlocksCleared(_Event):
    pass


class KVEventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]
    data_parallel_rank: int | None = None


WIRE_TYPES = {core.BlockStored: BlockStored, core.BlockRemoved: BlockRemoved, core.AllBlocksCleared: AllBlocksCleared}


def wire_batch(batch: core.KVEventBatch) -> KVEventBatch:
    events = [WIRE_TYPES[type(event)](**{name: getattr(event, name) for name in event.__slots__}) for event in batch.events]
    return KVEventBatch(batch.ts, events, batch.data_parallel_rank)


class BatchEncoder:
    """One msgpack encoder, reused (the publisher's thread owns it)."""

    def __init__(self):
        self._encoder = msgspec.msgpack.Encoder()

    def encode(self, batch: core.KVEventBatch) -> bytes:
        return self._encoder.encode(wire_batch(batch))
