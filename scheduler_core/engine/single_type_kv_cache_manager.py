"""One KV cache group's block tables (vLLM 0.33.0's `single_type_kv_cache_manager.py`).

Each manager keeps the tables of one group; every group takes its blocks from the one shared
`BlockPool`. The kinds differ in which tokens a request still needs: full attention every one,
a sliding window the last `window - 1` (older blocks go back to the pool while the request runs,
their table slots becoming the null block), chunked local attention the current chunk, a Mamba
layer only its state (one block per request). A prefix-cache hit is looked up per group, under
the group's own key for each block hash (vLLM's `BlockHashWithGroupId`), so a block cached in one
group never serves another.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..utils import cdiv
from .block_pool import NULL_BLOCK_ID, BlockPool
from .kv_cache_groups import CHUNKED_LOCAL, FULL_ATTENTION, MAMBA, SLIDING_WINDOW, KVCacheGroupSpec
from .request import Request


def group_hash(block_hash: int, group_id: int) -> int:
    """The prefix cache's key for `block_hash` in one group (ints hash the same in every process)."""
    return hash((block_hash, group_id))


def get_cached_blocks(block_pool: BlockPool, block_hash: int, group_ids: Sequence[int]) -> list[int] | None:
    """The cached block of `block_hash` in each group of `group_ids`, or None unless every group has one."""
    blocks = []
    for group_id in group_ids:
        block_id = block_pool.get_cached_block(group_hash(block_hash, group_id))
        if block_id is None:
            return None
        blocks.append(block_id)
    return blocks


class SingleTypeKVCacheManager:
    """The tables of one KV cache group. The base is full attention's rule: no token is skipped."""

    def __init__(self, spec: KVCacheGroupSpec, block_pool: BlockPool, group_id: int, block_size: int,
                 enable_caching: bool, max_admission_blocks_per_request: int | None = None):
        self.spec = spec
        self.block_pool = block_pool
        self.group_id = group_id
        self.block_size = block_size
        self.enable_caching = enable_caching
        # Sliding-window and chunked-local groups give blocks back as a request runs, so the
        # admission gate counts at most what one request can hold at once (vLLM sizes the pool so).
        self.max_admission_blocks_per_request = max_admission_blocks_per_request
        # request id -> its table in this group (NULL_BLOCK_ID where a block was given back).
        self.req_to_blocks: dict[str, list[int]] = {}
        # request id -> leading blocks already in the prefix cache; set at admission (hits) or when
        # a block is first cached, which is what tells a running request from a new one.
        self.num_cached_block: dict[str, int] = {}

    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        """Leading tokens no later token attends to (their blocks can be given back)."""
        return 0

    def get_num_blocks_to_allocate(self, request_id: str, num_tokens: int, new_computed_blocks: Sequence[int],
                                   total_computed_tokens: int, apply_admission_cap: bool = False) -> int:
        """Blocks the pool must give (new ones, and hits that sit evictable in its free queue)."""
        num_required_blocks = cdiv(num_tokens, self.block_size)
        if apply_admission_cap and self.max_admission_blocks_per_request is not None:
            num_required_blocks = min(num_required_blocks, self.max_admission_blocks_per_request)
        num_req_blocks = len(self.req_to_blocks.get(request_id, ()))
        if request_id in self.num_cached_block:
            # A running request: no new hits, and speculative slots may exceed what is required.
            return max(num_required_blocks - num_req_blocks, 0)
        num_skipped_blocks = self.get_num_skipped_tokens(total_computed_tokens) // self.block_size
        num_local_computed_blocks = len(new_computed_blocks) + num_req_blocks
        # Blocks below the window are never allocated; hits inside it count as held already.
        num_new_blocks = max(num_required_blocks - max(num_skipped_blocks, num_local_computed_blocks), 0)
        num_skipped_new_computed_blocks = max(0, num_skipped_blocks - num_req_blocks)
        ref_cnt = self.block_pool.ref_cnt
        num_evictable = sum(1 for block_id in new_computed_blocks[num_skipped_new_computed_blocks:]
                            if block_id != NULL_BLOCK_ID and ref_cnt[block_id] == 0)
        return num_new_blocks + num_evictable

    def add_local_computed_blocks(self, request_id: str, new_computed_blocks: Sequence[int],
                                  num_computed_tokens: int) -> list[int]:
        """A new request's hits enter its table: those below the window as null blocks, the rest
        touched (a hit sitting free comes off the queue). Returns the blocks touched.

        The hit may still hold null slots past the skipped ones (a chunked-local hit that ends
        where its chunk's cached blocks do): they stay null and are never touched, the null block
        being in no queue."""
        num_skipped_blocks = self.get_num_skipped_tokens(num_computed_tokens) // self.block_size
        kept = list(new_computed_blocks[num_skipped_blocks:])
        touched = [block_id for block_id in kept if block_id != NULL_BLOCK_ID]
        if self.enable_caching:
            self.block_pool.touch(touched)
        req_blocks = self.req_to_blocks.setdefault(request_id, [])
        req_blocks.extend([NULL_BLOCK_ID] * num_skipped_blocks)
        req_blocks.extend(kept)
        self.num_cached_block[request_id] = len(req_blocks)
        return touched

    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[int]:
        req_blocks = self.req_to_blocks.setdefault(request_id, [])
        num_new_blocks = cdiv(num_tokens, self.block_size) - len(req_blocks)
        if num_new_blocks <= 0:
            return []
        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)
        req_blocks.extend(new_blocks)
        return new_blocks

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        """Enter the request's newly full blocks into the prefix cache under this group's keys
        (null slots are skipped: a block given back holds nothing)."""
        request_id = request.request_id
        num_cached = self.num_cached_block.get(request_id, 0)
        num_full = num_tokens // self.block_size
        if num_cached >= num_full:
            return
        block_hashes = request.update_block_hashes(self.block_size, num_tokens)
        table = self.req_to_blocks[request_id]
        indices = [i for i in range(num_cached, num_full) if table[i] != NULL_BLOCK_ID]
        keys = [group_hash(block_hashes[i], self.group_id) for i in indices]
        self.block_pool.cache_full_blocks([table[i] for i in indices], keys, request_id, indices, self.group_id)
        self.num_cached_block[request_id] = num_full

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int) -> list[int]:
        """Give back the blocks that fell out of the window, tail first, stopping at the first null
        (those before it went back earlier). Returns them in the order freed."""
        num_skipped_tokens = self.get_num_skipped_tokens(processed_computed_tokens)
        blocks = self.req_to_blocks.get(request_id)
        if num_skipped_tokens <= 0 or not blocks:
            return []
        last = min(num_skipped_tokens // self.block_size, len(blocks))
        freed = []
        for i in range(last - 1, -1, -1):
            if blocks[i] == NULL_BLOCK_ID:
                break
            freed.append(blocks[i])
            blocks[i] = NULL_BLOCK_ID
        if freed:
            self.block_pool.free_blocks(freed)
        return freed

    def pop_blocks_for_free(self, request_id: str) -> list[int]:
        """Forget the request; its blocks in table order, without the null slots."""
        self.num_cached_block.pop(request_id, None)
        return [block_id for block_id in self.req_to_blocks.pop(request_id, ()) if block_id != NULL_BLOCK_ID]

    @classmethod
    def find_longest_cache_hit(cls, block_hashes: Sequence[int], max_length: int, group_ids: Sequence[int], block_pool: BlockPool,
                               spec: KVCacheGroupSpec, block_size: int) -> tuple[tuple[list[int], ...], int]:
        """Full attention: the longest run of cached blocks from the first, in every group of `group_ids`."""
        hits: tuple[list[int], ...] = tuple([] for _ in group_ids)
        for block_hash in block_hashes[: max_length // block_size]:
            cached = get_cached_blocks(block_pool, block_hash, group_ids)
            if cached is None:
                break
            for computed, block_id in zip(hits, cached):
                computed.append(block_id)
        return hits, len(hits[0]) * block_size


class FullAttentionManager(SingleTypeKVCacheManager):
    """Every token attends to all before it: a request keeps every block until it finishes."""


class SlidingWindowManager(SingleTypeKVCacheManager):
    """Each token attends to the `window - 1` before it and itself."""

    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        return max(0, num_computed_tokens - self.spec.window + 1)

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, group_ids, block_pool, spec, block_size):
        """A hit only needs the window's blocks before its end, cached contiguously: search from the
        right for `cdiv(window - 1, block_size)` cached blocks in a row; the blocks before them are
        null. With no such run, the run of cached blocks from the first is still a hit."""
        num_contiguous_needed = cdiv(spec.window - 1, block_size)
        max_num_blocks = max_length // block_size
        hits = tuple([NULL_BLOCK_ID] * max_num_blocks for _ in group_ids)
        num_contiguous = 0
        for i in range(max_num_blocks - 1, -1, -1):
            cached = get_cached_blocks(block_pool, block_hashes[i], group_ids)
            if cached is None:
                num_contiguous = 0
                continue
            for computed, block_id in zip(hits, cached):
                computed[i] = block_id
            num_contiguous += 1
            if num_contiguous >= num_contiguous_needed:
                for computed in hits:
                    del computed[i + num_contiguous:]
                return hits, len(hits[0]) * block_size
        for computed in hits:
            del computed[num_contiguous:]
        return hits, len(hits[0]) * block_size


class ChunkedLocalAttentionManager(SingleTypeKVCacheManager):
    """Tokens attend within their chunk of `window` tokens (Llama 4's local layers)."""

    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        return num_computed_tokens // self.spec.window * self.spec.window

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, group_ids, block_pool, spec, block_size):
        """Blocks of the chunks before the one `max_length` falls in are computed (null); from that
        chunk's start, the run of cached blocks."""
        max_num_blocks = max_length // block_size
        start_block = max_length // spec.window * spec.window // block_size if max_length > 0 else 0
        hits = tuple([NULL_BLOCK_ID] * start_block for _ in group_ids)
        for i in range(start_block, max_num_blocks):
            cached = get_cached_blocks(block_pool, block_hashes[i], group_ids)
            if cached is None:
                break
            for computed, block_id in zip(hits, cached):
                computed.append(block_id)
        return hits, len(hits[0]) * block_size


class MambaManager(SingleTypeKVCacheManager):
    """A state layer (mamba_cache_mode 'none'): one block holds a request's state whatever its
    length, which vLLM gets by giving the group a block of max_model_len tokens. Its prefixes are
    not cached (that needs mamba_cache_mode 'align'; refused in `check_kv_cache_groups`)."""

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        return None


MANAGERS = {FULL_ATTENTION: FullAttentionManager, SLIDING_WINDOW: SlidingWindowManager,
            CHUNKED_LOCAL: ChunkedLocalAttentionManager, MAMBA: MambaManager}


def max_admission_blocks_per_request(spec: KVCacheGroupSpec, block_size: int, max_in_flight_tokens: int,
                                     max_model_len: int) -> int | None:
    """The most blocks one request of this group holds at once (the specs' own bound; None: no cap):
    the window's last `window - 1` tokens plus what is in flight (+1: a window need not start on a
    block boundary), or a chunk plus what is in flight."""
    if spec.kind == SLIDING_WINDOW:
        return cdiv(min(spec.window - 1 + max_in_flight_tokens, max_model_len), block_size) + 1
    if spec.kind == CHUNKED_LOCAL:
        return cdiv(min(spec.window + max_in_flight_tokens, max_model_len), block_size)
    return None
