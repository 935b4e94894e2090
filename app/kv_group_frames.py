"""A hybrid model's KV cache groups in the frames (app/frames.py): each request's block table per
group, null slots included, and per block the group whose table holds it.

Sent only when the engine is anything but the one full-attention group. Then a snapshot's header
names the groups (`kv_groups`: kind, window and the words vLLM's specs use), `table_lengths` holds
one length per group for each table id (group after group; `table_blocks` likewise, with 0, the
null block, where a window group gave a block back), and the `block_group` array says per block
which group holds it (`NO_GROUP`: none). A single-group engine's frames carry none of this and
read byte for byte as before.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping

from scheduler_core.engine.kv_cache import KVCacheView
from scheduler_core.engine.kv_cache_groups import CHUNKED_LOCAL, FULL_ATTENTION, MAMBA, SLIDING_WINDOW, KVCacheGroupSpec

# block_group's value for a block in no table (free, or the null block): groups number 8 at most.
NO_GROUP = 255
# A group's table per request: one tuple of block ids per group, in group order.
GroupTables = tuple[tuple[int, ...], ...]


def group_label(spec: KVCacheGroupSpec) -> str:
    """The group as vLLM's spec classes name it (FullAttentionSpec, SlidingWindowSpec, ...)."""
    if spec.kind == FULL_ATTENTION:
        return "full attention"
    if spec.kind == SLIDING_WINDOW:
        return f"sliding window {spec.window}"
    if spec.kind == CHUNKED_LOCAL:
        return f"chunked local attention {spec.window}"
    assert spec.kind == MAMBA, spec.kind
    return "mamba state"


def groups_header(specs: Iterable[KVCacheGroupSpec]) -> list[dict]:
    return [{"kind": spec.kind, "window": spec.window, "label": group_label(spec)} for spec in specs]


def group_tables(kv: KVCacheView, request_ids: Iterable[str]) -> dict[str, GroupTables]:
    """request id -> its table in each group (empty in every group once it holds nothing)."""
    return {rid: kv.group_block_tables(rid) for rid in request_ids}


def block_groups(kv: KVCacheView, owners: Mapping[int, str]) -> dict[int, int]:
    """Block -> the group of its owner's table holding it, for the blocks in `owners` (block ->
    request id, as frames.block_owners finds them). A block sits in one group's tables only: a
    prefix-cache hit shares a block within its group (vLLM hashes blocks per group)."""
    groups: dict[int, int] = {}
    wanted: dict[str, set[int]] = {}
    for block_id, rid in owners.items():
        wanted.setdefault(rid, set()).add(block_id)
    for rid, blocks in wanted.items():
        for group_id, table in enumerate(kv.group_block_tables(rid)):
            for block_id in blocks.intersection(table):
                groups[block_id] = group_id
    return groups


def block_group_array(kv: KVCacheView, owners: Mapping[int, str]) -> array:
    """The whole pool's `block_group`, for a snapshot."""
    values = array("B", [NO_GROUP]) * kv.num_blocks
    for block_id, group_id in block_groups(kv, owners).items():
        values[block_id] = group_id
    return values
