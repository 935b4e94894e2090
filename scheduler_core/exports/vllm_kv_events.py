"""The simulation's block pool as vLLM's KV cache events: the batches `--kv-events-config` publishes.

vLLM's scheduler drains its block pool's events once a step and, if there are any, publishes them
as one `KVEventBatch` (`vllm/v1/core/sched/scheduler.py`, `update_from_output`): `BlockStored` when
`cache_full_blocks` enters a request's newly full blocks into the prefix cache (one event per
call: its block hashes, the parent's hash, the blocks' token ids), `BlockRemoved` for each cached
block evicted to hold new tokens, `AllBlocksCleared` when the prefix cache is reset. KV-aware
routers (llm-d, Dynamo) keep an index of every pod's cached blocks from them.

`KVEventBatcher` rebuilds those events from the engine's own (`engine/kv_events.py`), with vLLM's
block hashes (`engine/vllm_block_hash.py`): the engine keeps its fast internal hash for its
decisions, and vLLM's is computed here, only when events are published. The events are plain
dataclasses with vLLM 0.33.0's names, fields and field order (`vllm/distributed/kv_events.py`),
which the app writes as msgpack the way vLLM's msgspec structs are written (app/kv_event_wire.py).

Where the simulation's state jumps (a step back, a switch to another session, a publisher that
fell behind), `resync` says so as a reset would: `AllBlocksCleared`, then what is cached now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..engine import kv_events as engine_events
from ..engine.config import EngineConfig
from ..engine.eagle_hit_rule import eagle_hit_rule
from ..engine.kv_cache_groups import CHUNKED_LOCAL, FULL_ATTENTION, MAMBA, SLIDING_WINDOW
from ..engine.request import SAMPLED_TOKEN_ID, Request
from ..engine.single_type_kv_cache_manager import group_hash
from ..engine.step_record import StepRecord
from ..engine.vllm_block_hash import DEFAULT_NONE_HASH_SEED, VllmBlockHasher, external_block_hash

MEDIUM_GPU = "GPU"
# vLLM's `KVCacheSpecKind` of each group kind the engine models (`vllm/v1/kv_cache_interface.py`).
SPEC_KINDS = {FULL_ATTENTION: "full_attention", SLIDING_WINDOW: "sliding_window",
              CHUNKED_LOCAL: "chunked_local_attention", MAMBA: "mamba"}


@dataclass(slots=True)
class BlockStored:
    """A run of one request's full blocks entered the prefix cache (one `cache_full_blocks` call)."""

    block_hashes: list
    parent_block_hash: int | bytes | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int]] | None = None


@dataclass(slots=True)
class BlockRemoved:
    """A cached block was evicted: its hash serves no hit any more."""

    block_hashes: list
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


@dataclass(slots=True)
class AllBlocksCleared:
    """The prefix cache was emptied (vLLM's `reset_prefix_cache`; here also a jump in time)."""


KVCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared


@dataclass(slots=True)
class KVEventBatch:
    """One step's events, as vLLM publishes them after each step that had any."""

    ts: float
    events: list[KVCacheEvent]
    data_parallel_rank: int | None = None



class KVEventBatcher:
    """One engine's step records in, vLLM's event batches out, with a mirror of what it has told
    subscribers is cached (block id -> group and hash) so evictions and resyncs can name hashes.

    `request_of` finds a request by id, finished ones included (`Simulation.request`): a block's
    token ids are its request's. Memory: a chain of hashes per request that holds blocks, and one
    entry per cached block.
    """

    def __init__(self, config: EngineConfig, request_of: Callable[[str], Request], none_hash_seed: str = DEFAULT_NONE_HASH_SEED,
                 int_block_hashes: bool = True, data_parallel_rank: int | None = None):
        self.hasher = VllmBlockHasher(config.prefix_caching_hash_algo, none_hash_seed)
        self.block_size = config.block_size
        self.groups = config.kv_cache_group_specs
        self.num_lookahead_tokens = eagle_hit_rule(config).num_hash_lookahead_tokens
        self.request_of = request_of
        self.int_block_hashes = int_block_hashes
        self.data_parallel_rank = data_parallel_rank
        # request id -> vLLM's hashes of its blocks so far: they depend on its tokens only, so they
        # outlive a resync; dropped when it frees its blocks (rebuilt if it comes back).
        self._chains: dict[str, list[bytes]] = {}
        self._shared_prefixes: dict[int, bytes] | None = None  # during a resync only
        self.stored: dict[int, tuple[int, int | bytes]] = {}

    # -- a step --------------------------------------------------------------------------------
    def batch(self, record: StepRecord, ts: float) -> KVEventBatch | None:
        """The step's batch, or None when the step changed no cached block (vLLM publishes none)."""
        events: list[KVCacheEvent] = []
        run: list[engine_events.BlockStored] = []
        for event in record.kv_events:
            if type(event) is engine_events.BlockStored:
                if run and not _continues(run[-1], event):
                    events.append(self._stored_event(run))
                    run = []
                run.append(event)
                continue
            if run:
                events.append(self._stored_event(run))
                run = []
            if type(event) is engine_events.BlockRemoved:
                removed = self.stored.pop(event.block_id, None)
                if removed is not None:  # else stored before this batcher was told of it
                    group_id, block_hash = removed
                    events.append(BlockRemoved([block_hash], MEDIUM_GPU, group_idx=group_id))
            elif type(event) is engine_events.BlocksFreed:
                self._chains.pop(event.request_id, None)  # rebuilt from its tokens if it comes back
        if run:
            events.append(self._stored_event(run))
        return KVEventBatch(ts, events, self.data_parallel_rank) if events else None

    def resync(self, cached: dict[int, int], requests: Iterable[Request], ts: float) -> KVEventBatch:
        """`AllBlocksCleared`, then a `BlockStored` for each block in `cached` (block id -> the
        pool's key for it), its prefix found among `requests`; one event a block, by block index,
        so parents come before their children. A block no request has (impossible while finished
        requests are kept) stays out, and out of the mirror."""
        self.stored.clear()
        # Each prefix hashed once, however many requests share it: by the engine's own hash.
        self._shared_prefixes = {}
        wanted: dict[int, list[int]] = {}
        for block_id, key in cached.items():
            wanted.setdefault(key, []).append(block_id)  # two blocks may hold one prefix (vLLM's duplicates)
        found: list[engine_events.BlockStored] = []
        for request in requests:
            for index, block_hash in enumerate(request.block_hashes):
                for group_id in range(len(self.groups)):
                    key = block_hash if len(self.groups) == 1 else group_hash(block_hash, group_id)
                    for block_id in wanted.pop(key, ()):
                        found.append(engine_events.BlockStored(block_id, key, request.request_id, index, group_id))
        found.sort(key=lambda e: (e.block_index, e.group_id, e.request_id))
        events: list[KVCacheEvent] = [AllBlocksCleared()]
        holding = set(self._chains)
        events += [self._stored_event([event]) for event in found]
        self._shared_prefixes = None
        for request_id in set(self._chains) - holding:  # requests long finished: their chains need not stay
            del self._chains[request_id]
        return KVEventBatch(ts, events, self.data_parallel_rank)

    # -- vLLM's hashes ---------------------------------------------------------------------------
    def _chain(self, request: Request, num_blocks: int) -> list[bytes]:
        """vLLM's hashes of the request's first `num_blocks` blocks (extended as it grows)."""
        chain = self._chains.setdefault(request.request_id, [])
        size, lookahead = self.block_size, self.num_lookahead_tokens
        shared, engine_hashes = self._shared_prefixes, request.block_hashes
        while len(chain) < num_blocks:
            index = len(chain)
            key = engine_hashes[index] if shared is not None and index < len(engine_hashes) else None
            block_hash = shared.get(key) if key is not None else None
            if block_hash is None:
                start = index * size
                tokens = token_ids(request, start, start + size + lookahead)
                extra = (None, *tokens[size:]) if lookahead else None
                block_hash = self.hasher.hash_block_tokens(chain[-1] if chain else None, tokens[:size], extra)
                if key is not None:
                    shared[key] = block_hash
            chain.append(block_hash)
        return chain

    def _external(self, block_hash: bytes) -> int | bytes:
        return external_block_hash(block_hash, self.int_block_hashes)

    def _stored_event(self, run: list[engine_events.BlockStored]) -> BlockStored:
        """One vLLM `BlockStored` for a run of one request's consecutive blocks in one group."""
        first, last, size = run[0], run[-1], self.block_size
        request = self.request_of(first.request_id)
        chain = self._chain(request, last.block_index + 1)
        hashes = [self._external(chain[event.block_index]) for event in run]
        for event, block_hash in zip(run, hashes):
            self.stored[event.block_id] = (event.group_id, block_hash)
        start, end = first.block_index * size, (last.block_index + 1) * size
        spec = self.groups[first.group_id]
        lookahead = self.num_lookahead_tokens
        return BlockStored(
            block_hashes=hashes,
            parent_block_hash=self._external(chain[first.block_index - 1]) if first.block_index else None,
            token_ids=token_ids(request, start, end),
            block_size=size, lora_id=None, medium=MEDIUM_GPU, lora_name=None,
            # vLLM writes one entry per block, None without LoRA, multimodal inputs or cache_salt.
            extra_keys=[None] * len(run),
            group_idx=first.group_id,
            kv_cache_spec_kind=SPEC_KINDS[spec.kind],
            kv_cache_spec_sliding_window=spec.window if spec.kind == SLIDING_WINDOW else None,
            lookahead_token_ids=[token_ids(request, e, e + lookahead) for e in range(start + size, end + 1, size)]
                                if lookahead else None,
        )


def token_ids(request: Request, start: int, end: int) -> list[int]:
    """The request's token ids at positions `start` to `end` (the engine's `Request.token_id`, by slices)."""
    prompt, num_prompt_tokens = request.prompt_token_ids, request.num_prompt_tokens
    tokens = list(prompt[start:min(end, num_prompt_tokens)]) if start < num_prompt_tokens else []
    tokens += [SAMPLED_TOKEN_ID] * (end - start - len(tokens))
    return tokens


def _continues(previous: engine_events.BlockStored, event: engine_events.BlockStored) -> bool:
    """Whether `event` is the block right after `previous` in the same request's table and group
    (vLLM's one `cache_full_blocks` call)."""
    return (event.request_id == previous.request_id and event.group_id == previous.group_id
            and event.block_index == previous.block_index + 1)


def cached_blocks(sim) -> dict[int, int]:
    """Every block in the simulation's prefix cache now: block id -> the pool's key for it."""
    pool = getattr(sim.scheduler.kv_cache_manager, "block_pool", None)
    if pool is None:  # the contiguous allocator caches nothing
        return {}
    return {block_id: key for block_id, key in enumerate(pool.block_hash) if key is not None}


def known_requests(sim) -> list[Request]:
    """Every request the simulation holds, unfinished and finished (`resync` looks blocks up in them)."""
    return [*sim.scheduler.requests.values(), *sim.finished_requests.values()]
