"""The per-group managers over one block pool, acting as one (vLLM 0.33.0's `kv_cache_coordinator.py`).

A request's blocks are per group; each step's decision sums what every group needs, and a
prefix-cache hit counts only as long as every group has it. Groups of the same spec are looked
up together (vLLM's `SpecGroup`); full attention goes first, because its hit is downward closed
(any shorter prefix of a hit is a hit), so later kinds only ever shorten the candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

from .block_pool import BlockPool
from .kv_cache_groups import FULL_ATTENTION, MAMBA, KVCacheGroupSpec
from .request import Request
from .single_type_kv_cache_manager import MANAGERS, SingleTypeKVCacheManager, max_admission_blocks_per_request


class KVCacheBlocks:
    """A request's blocks in each group (vLLM's `KVCacheBlocks`), as `get_computed_blocks` hands
    them to the scheduler. Its length is the hit in blocks, which every group's table shares
    (a sliding window's lower blocks are null slots), so `len(hit) * block_size` is the hit's tokens."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: tuple[list[int], ...]):
        self.blocks = blocks

    def __len__(self) -> int:
        return max((len(group) for group in self.blocks), default=0)

    def is_empty(self) -> bool:
        """No group has anything, not even null slots (vLLM's `empty_kv_cache_blocks`)."""
        return not any(self.blocks)

    def __repr__(self) -> str:
        return f"KVCacheBlocks({self.blocks!r})"


class HybridKVCacheCoordinator:
    """Managers for one or more KV cache groups sharing `block_pool` (with one attention spec,
    vLLM's `UnitaryKVCacheCoordinator`: its single lookup is the whole search)."""

    def __init__(self, specs: Sequence[KVCacheGroupSpec], block_pool: BlockPool, block_size: int, max_model_len: int,
                 enable_caching: bool, max_in_flight_tokens: int):
        self.block_pool = block_pool
        self.block_size = block_size
        self.managers: tuple[SingleTypeKVCacheManager, ...] = tuple(
            # A Mamba group's block holds a whole request (vLLM gives it a block of max_model_len tokens).
            MANAGERS[spec.kind](spec, block_pool, group_id, max_model_len if spec.kind == MAMBA else block_size,
                                enable_caching and spec.kind != MAMBA,
                                max_admission_blocks_per_request(spec, block_size, max_in_flight_tokens, max_model_len))
            for group_id, spec in enumerate(specs)
        )
        # (spec, its group ids, manager class), full attention first; Mamba groups cache nothing.
        attention_groups: list[tuple[KVCacheGroupSpec, list[int], type[SingleTypeKVCacheManager]]] = []
        for group_id, spec in enumerate(specs):
            if spec.kind == MAMBA:
                continue
            for same_spec, group_ids, _ in attention_groups:
                if same_spec == spec:
                    group_ids.append(group_id)
                    break
            else:
                attention_groups.append((spec, [group_id], MANAGERS[spec.kind]))
        attention_groups.sort(key=lambda group: group[0].kind != FULL_ATTENTION)
        self.attention_groups = attention_groups

    def empty_blocks(self) -> KVCacheBlocks:
        return KVCacheBlocks(tuple(() for _ in self.managers))

    def find_longest_cache_hit(self, block_hashes: Sequence[int], max_cache_hit_length: int) -> tuple[KVCacheBlocks, int]:
        """The longest prefix every group has cached: each kind accepts the candidate length or
        shortens it, and any shortening restarts the round over all kinds, until none shortens
        (the length only decreases, so this ends). One full-attention group plus one other kind
        needs one round: the other kind's hit is already within full attention's."""
        num_groups = len(self.managers)
        hit_blocks: list[list[int] | None] = [None] * num_groups
        hit_lengths = [0] * num_groups
        hit_length = max_cache_hit_length
        simple_hybrid = len(self.attention_groups) == 2 and self.attention_groups[0][0].kind == FULL_ATTENTION
        while True:
            curr_hit_length = hit_length
            for spec, group_ids, manager_cls in self.attention_groups:
                first = group_ids[0]
                if spec.kind == FULL_ATTENTION and hit_blocks[first] is not None:
                    # Downward closed: looked up once, then only trimmed to the candidate.
                    curr_hit_length = min(curr_hit_length, hit_lengths[first])
                    continue
                blocks, curr_hit_length = manager_cls.find_longest_cache_hit(
                    block_hashes, curr_hit_length, group_ids, self.block_pool, spec, self.block_size)
                for group_id, group_blocks in zip(group_ids, blocks):
                    hit_blocks[group_id] = group_blocks
                    hit_lengths[group_id] = curr_hit_length
            if curr_hit_length >= hit_length or len(self.attention_groups) == 1:
                hit_length = curr_hit_length
                break
            hit_length = curr_hit_length
            if simple_hybrid:
                break
        num_hit_blocks = hit_length // self.block_size
        for spec, group_ids, _ in self.attention_groups:
            if spec.kind == FULL_ATTENTION:
                for group_id in group_ids:
                    del hit_blocks[group_id][num_hit_blocks:]
        return KVCacheBlocks(tuple(blocks if blocks is not None else [] for blocks in hit_blocks)), hit_length

    def get_num_blocks_to_allocate(self, request_id: str, num_tokens: int, new_computed_blocks: KVCacheBlocks,
                                   total_computed_tokens: int, apply_admission_cap: bool = False) -> int:
        return sum(manager.get_num_blocks_to_allocate(request_id, num_tokens, new_computed_blocks.blocks[i],
                                                      total_computed_tokens, apply_admission_cap)
                   for i, manager in enumerate(self.managers))

    def allocate_new_computed_blocks(self, request_id: str, new_computed_blocks: KVCacheBlocks,
                                     num_computed_tokens: int) -> list[int]:
        """A new request's hits enter every group's table; a running request has none."""
        if any(request_id in manager.num_cached_block for manager in self.managers):
            return []
        touched: list[int] = []
        for i, manager in enumerate(self.managers):
            touched += manager.add_local_computed_blocks(request_id, new_computed_blocks.blocks[i], num_computed_tokens)
        return touched

    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[list[int]]:
        return [manager.allocate_new_blocks(request_id, num_tokens) for manager in self.managers]

    def cache_blocks(self, request: Request, num_computed_tokens: int) -> None:
        for manager in self.managers:
            if manager.enable_caching:
                manager.cache_blocks(request, num_computed_tokens)

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int) -> list[tuple[int, list[int]]]:
        """Every group gives back what left its window; (group id, blocks freed) where any were."""
        freed = []
        for manager in self.managers:
            blocks = manager.remove_skipped_blocks(request_id, processed_computed_tokens)
            if blocks:
                freed.append((manager.group_id, blocks))
        return freed

    def free(self, request_id: str) -> list[int]:
        """Release the request in every group, group by group, each table tail first (so a chain's
        tail is evicted before its head). Returns the blocks in the order freed."""
        freed: list[int] = []
        for manager in self.managers:
            blocks = manager.pop_blocks_for_free(request_id)[::-1]
            self.block_pool.free_blocks(blocks)
            freed += blocks
        return freed

    def get_blocks(self, request_id: str) -> tuple[list[int], ...]:
        return tuple(manager.req_to_blocks.get(request_id, []) for manager in self.managers)
