"""One session's step records, published as vLLM's KV event batches: the hook between the two.

A publisher stands for one engine (as one `vllm serve` has one), so the feed follows one session
at a time: the latest one created (`serve --openai`'s served session, or the dashboard's newest),
told to it by the session manager. Each step it takes becomes a batch (if it changed the prefix
cache); where the subscriber's picture would otherwise go wrong, it gets a resync batch
(`AllBlocksCleared`, then every block cached now): when the feed starts following a session, when
that session steps back, seeks or resets, and when the publisher's queue filled. A followed
session that ends leaves an `AllBlocksCleared`.

As in vLLM, `PYTHONHASHSEED` seeds NONE_HASH, and `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0` sends
hashes as their 32 bytes instead of ints.

`serve --openai --replicas N` has N engines, each with a feed and a publisher of its own, as
vLLM's data-parallel ranks have: rank i's batches carry `data_parallel_rank` i
(`kv_events_cli.py` offsets its endpoints as vLLM does).
"""

from __future__ import annotations

import os
import time

from scheduler_core.engine.step_record import StepRecord
from scheduler_core.engine.vllm_block_hash import DEFAULT_NONE_HASH_SEED
from scheduler_core.exports.vllm_kv_events import AllBlocksCleared, KVEventBatch, KVEventBatcher, cached_blocks, known_requests

from .kv_event_wire import BatchEncoder
from .kv_events_publisher import ZmqEventPublisher


class KVEventFeed:
    """The followed session's batches onto one publisher (see above); `follow` may be called by
    whoever makes a session outside the manager."""

    def __init__(self, publisher: ZmqEventPublisher, environ: dict[str, str] | None = None, data_parallel_rank: int = 0):
        environ = os.environ if environ is None else environ
        self.publisher = publisher
        self.data_parallel_rank = data_parallel_rank
        self.encoder = BatchEncoder()
        self.none_hash_seed = environ.get("PYTHONHASHSEED", DEFAULT_NONE_HASH_SEED)
        self.int_block_hashes = environ.get("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES", "1") != "0"
        self.session = None
        self.batcher: KVEventBatcher | None = None
        self.num_resyncs = 0

    # -- the session manager's side -------------------------------------------------------------------
    def session_created(self, session) -> None:
        self.follow(session)

    def session_deleted(self, session) -> None:
        if session is self.session:
            self._unfollow()
            self._send(KVEventBatch(time.time(), [AllBlocksCleared()], self.data_parallel_rank))

    def follow(self, session) -> None:
        """Publish `session`'s blocks from now on, starting with what it holds cached."""
        self._unfollow()
        self.session = session
        sim = session.sim
        self.batcher = KVEventBatcher(sim.config, sim.request, self.none_hash_seed, self.int_block_hashes,
                                      self.data_parallel_rank)
        session.step_observers.append(self)
        self.resync()

    def _unfollow(self) -> None:
        if self.session is not None:
            self.session.step_observers.remove(self)
        self.session = self.batcher = None

    # -- the session's side ------------------------------------------------------------------------
    def stepped(self, record: StepRecord) -> None:
        batch = self.batcher.batch(record, time.time())
        if batch is not None:
            self._send(batch)

    def rewound(self) -> None:
        self.resync()

    def resync(self) -> None:
        sim = self.session.sim
        self.num_resyncs += 1
        self._send(self.batcher.resync(cached_blocks(sim), known_requests(sim), time.time()), resync=True)

    def _send(self, batch: KVEventBatch, resync: bool = False) -> None:
        if self.publisher.publish(self.encoder.encode(batch)):
            return
        # The queue is full (the session stepped faster than the socket drains): what is queued
        # goes, and one batch that sets the subscriber's picture right takes its place.
        self.publisher.discard_queued()
        if resync or self.session is None:
            self.publisher.publish(self.encoder.encode(batch))
        else:
            self.resync()
