"""The pre-PagedAttention baseline: each admitted request reserves `max_model_len` slots up front.

Systems before vLLM (FasterTransformer, Orca) gave every sequence one contiguous KV region sized
for the longest sequence it might become. The region is reserved whole at admission, so most of
it sits unused (reserved-but-unused) and free space splinters between regions (external
fragmentation). Same interface as `KVCacheManager` (the `KVCache` protocol), so a scheduler runs
unchanged on either; it keeps no per-block state (no ref counts, nothing cached or shared).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from ..utils import cdiv
from .kv_events import KVEvent, RegionReleased, RegionReserved, take_events
from .request import Request


class ContiguousKVCacheManager:
    """First-fit allocator of contiguous block ranges, one range of `max_model_len` per request."""

    enable_caching = False
    # No per-block state: a block is reserved with its region or free, never shared or cached.
    block_pool = None
    num_shared_slots = 0

    def __init__(self, num_gpu_blocks: int, block_size: int, max_model_len: int):
        self.block_size = block_size
        self.max_model_len = max_model_len
        self.num_total_blocks = num_gpu_blocks
        self.blocks_per_request = cdiv(max_model_len, block_size)
        # Block 0 stays reserved like vLLM's null block so both allocators manage the same pool.
        self.free_extents: list[tuple[int, int]] = [(1, num_gpu_blocks - 1)]  # (start, length), by start
        self.num_free_blocks = num_gpu_blocks - 1
        self.req_to_blocks: dict[str, list[int]] = {}
        # request id -> the tokens its region holds: `allocate_slots` has nothing to do within it (see KVCache).
        self.req_to_room: dict[str, int] = {}
        self.num_allocated_total = 0
        self.num_freed_total = 0
        # The KV event queue (None: off; see `enable_events`).
        self.kv_events: list[KVEvent] | None = None

    @property
    def usage(self) -> float:
        return 1.0 - self.num_free_blocks / (self.num_total_blocks - 1)

    @property
    def num_used_blocks(self) -> int:
        return self.num_total_blocks - 1 - self.num_free_blocks

    def get_block_ids(self, request_id: str) -> list[int]:
        return self.req_to_blocks.get(request_id, [])

    def get_group_block_ids(self, request_id: str) -> tuple[list[int], ...]:
        """The request's table per KV cache group: here the one group's."""
        return (self.req_to_blocks.get(request_id, [])[:],)

    def num_blocks_holding(self, num_tokens: int, num_processed_tokens: int) -> int:
        """A request holds its whole region however few tokens it has."""
        return self.blocks_per_request

    def enable_events(self) -> None:
        """From now on, append RegionReserved / RegionReleased to the KV event queue."""
        if self.kv_events is None:
            self.kv_events = []

    def take_events(self) -> tuple[KVEvent, ...]:
        return take_events(self.kv_events)

    def get_computed_blocks(self, request: Request) -> tuple[list[int], int]:
        return [], 0

    def num_blocks_to_allocate(self, request_id: str, num_tokens: int, new_computed_blocks: Sequence[int]) -> int:
        return 0 if request_id in self.req_to_blocks else self.blocks_per_request

    def allocate_slots(
        self,
        request: Request,
        num_new_tokens: int,
        num_new_computed_tokens: int = 0,
        new_computed_blocks: Sequence[int] = (),
        full_sequence_must_fit: bool = False,
        num_lookahead_tokens: int = 0,
    ) -> list[int] | None:
        """The first call reserves the whole region (or fails); later calls need nothing new
        (a region of max_model_len already holds any drafter's lookahead)."""
        if request.request_id in self.req_to_blocks:
            return []
        needed = self.blocks_per_request
        for index, (start, length) in enumerate(self.free_extents):
            if length >= needed:
                if length == needed:
                    del self.free_extents[index]
                else:
                    self.free_extents[index] = (start + needed, length - needed)
                region = list(range(start, start + needed))
                self.req_to_blocks[request.request_id] = region
                self.req_to_room[request.request_id] = needed * self.block_size
                if self.kv_events is not None:
                    self.kv_events.append(RegionReserved(request.request_id, tuple(region)))
                self.num_free_blocks -= needed
                self.num_allocated_total += needed
                return region
        return None

    def free(self, request: Request) -> None:
        region = self.req_to_blocks.pop(request.request_id, None)
        self.req_to_room.pop(request.request_id, None)
        if not region:
            return
        start, length = region[0], len(region)
        extents = self.free_extents
        index = bisect.bisect_left(extents, (start, 0))
        # Merge with the free neighbours so a freed region can serve the next reservation whole.
        if index < len(extents) and extents[index][0] == start + length:
            length += extents[index][1]
            del extents[index]
        if index > 0 and extents[index - 1][0] + extents[index - 1][1] == start:
            start, length = extents[index - 1][0], extents[index - 1][1] + length
            del extents[index - 1]
            index -= 1
        extents.insert(index, (start, length))
        self.num_free_blocks += len(region)
        self.num_freed_total += len(region)
        if self.kv_events is not None:
            self.kv_events.append(RegionReleased(request.request_id, tuple(region)))

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        """Nothing is ever cached (the scheduler calls this only when `enable_caching`)."""

    def counters(self) -> tuple[int, int, int, int]:
        return self.num_allocated_total, self.num_freed_total, 0, 0
