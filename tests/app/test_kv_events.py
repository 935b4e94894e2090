"""`serve --kv-events-config`: vLLM's KV cache events over ZeroMQ, read by a subscriber written as
vLLM's `examples/online_serving/kv_events_subscriber.py` reads them (msgspec structs of vLLM's
schema, `Decoder(type=KVEventBatch)`, a REQ socket asking the replay ROUTER for missed batches).

The sockets are ipc:// ones in the test's directory: no port to race for, nothing on the network.
"""

import copy
import time
from collections import Counter
from typing import Any

import msgspec
import pytest
import zmq
from fastapi.testclient import TestClient

from app.cli import main as servescope_main
from app.kv_event_feed import KVEventFeed
from app.kv_event_wire import BatchEncoder
from app.kv_events_config import KVEventsConfig, check_exposure, kv_events_config_of
from app.kv_events_publisher import ZmqEventPublisher
from app.main import create_app
from app.session import Session
from app.settings import Settings
from scheduler_core.engine.config import EngineConfig
from scheduler_core.engine.request import Request
from scheduler_core.errors import ConfigError
from scheduler_core.exports.vllm_kv_events import KVEventBatcher
from scheduler_core.scenario.scenario import Scenario, with_vllm_defaults
from scheduler_core.sim.simulation import Simulation

from ..sim.test_vllm_kv_events import pool_as_vllm_hashes
from .test_protocol import HEARTBEAT_S, TIGHT, Opener, create


# -- the subscriber's side, as vLLM's example declares it (vLLM 0.33.0's schema) -----------------------
class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored(KVCacheEvent):
    block_hashes: list[int]
    parent_block_hash: int | None
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


class BlockRemoved(KVCacheEvent):
    block_hashes: list[int]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]


class Subscriber:
    """The example's loop: SUB for the stream; on a gap in the sequence numbers, ask the replay
    socket for the batches from `last_seq + 1`, read until the end marker (an empty payload). The
    example asks through a REQ socket, which takes one reply per request and drops the rest of a
    replay; a DEALER sending the REQ envelope (an empty frame first) takes them all."""

    def __init__(self, endpoint: str, replay_endpoint: str | None, topic: str = ""):
        self.context = zmq.Context()
        self.sub = self.context.socket(zmq.SUB)
        self.sub.connect(endpoint)
        self.sub.setsockopt_string(zmq.SUBSCRIBE, topic)
        self.replay = None
        if replay_endpoint:
            self.replay = self.context.socket(zmq.DEALER)
            self.replay.connect(replay_endpoint)
        self.decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
        self.last_seq = -1
        self.seqs: list[int] = []
        self.replayed: list[int] = []
        self.cached: Counter = Counter()
        self.batches: list[KVEventBatch] = []

    def close(self) -> None:
        self.context.destroy(linger=0)

    def ask_replay(self, start_seq: int, until_seq: int | None = None) -> None:
        self.replay.send_multipart((b"", start_seq.to_bytes(8, "big")))
        while self.replay.poll(2000):
            _, _topic, seq_bytes, payload = self.replay.recv_multipart()
            if not payload:
                assert int.from_bytes(seq_bytes, "big", signed=True) == -1  # the end marker
                return
            seq = int.from_bytes(seq_bytes, "big")
            if seq > self.last_seq and (until_seq is None or seq < until_seq):
                self.replayed.append(seq)
                self._take(seq, payload)
        pytest.fail("the replay never ended")

    def receive(self, timeout_s: float = 2.0, until=lambda s: False) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not until(self):
            if not self.sub.poll(50):
                continue
            topic, seq_bytes, payload = self.sub.recv_multipart()
            seq = int.from_bytes(seq_bytes, "big")
            if seq <= self.last_seq:
                continue  # already had it from a replay
            if seq > self.last_seq + 1 and self.replay is not None:
                self.ask_replay(self.last_seq + 1, until_seq=seq)
            self._take(seq, payload)

    def _take(self, seq: int, payload: bytes) -> None:
        batch = self.decoder.decode(payload)
        self.seqs.append(seq)
        self.last_seq = seq
        self.batches.append(batch)
        for event in batch.events:
            if isinstance(event, BlockStored):
                self.cached.update((event.group_idx, h) for h in event.block_hashes)
            elif isinstance(event, BlockRemoved):
                self.cached[(event.group_idx, event.block_hashes[0])] -= 1
            else:
                self.cached.clear()
        self.cached = +self.cached


def session(model: str | None = None) -> Session:
    data = copy.deepcopy(TIGHT)
    if model:
        data["model"] = model
    return Session("s", Scenario.from_dict(with_vllm_defaults(data)), Settings())


@pytest.fixture
def endpoints(tmp_path):
    return {"enable_kv_cache_events": True, "endpoint": f"ipc://{tmp_path}/pub", "replay_endpoint": f"ipc://{tmp_path}/replay",
            "topic": "kv@sim@llama"}


def start(config: dict, subscribe: bool = True) -> tuple[ZmqEventPublisher, Subscriber | None]:
    publisher = ZmqEventPublisher(KVEventsConfig(**config))
    subscriber = None
    if subscribe:
        subscriber = Subscriber(publisher.endpoint, publisher.replay_endpoint, config.get("topic", ""))
        time.sleep(0.2)  # a SUB's subscription reaches the PUB a moment after it connects
    return publisher, subscriber


def caught_up(publisher: ZmqEventPublisher):
    """Whether a subscriber has every batch published so far."""
    return lambda s: publisher._queue.empty() and s.last_seq == publisher._next_seq - 1


# -- the wire ----------------------------------------------------------------------------------------
# Written by vLLM 0.33.0 itself (recorder venv): its KVCacheManager with one full-attention group of 4-token
# blocks (and, for the second, a sliding-window group of 8 tokens), `allocate_slots` for prompt 0..9, then
# `msgspec.msgpack.encode(KVEventBatch(ts=1.5, events=manager.take_events(), data_parallel_rank=0))`.
VLLM_BYTES = {
    ("sha256", "full_attention"): (
        "93cb3ff800000000000091de000ba474797065ab426c6f636b53746f726564ac626c6f636b5f68617368657392cf90bbd03ba4a195"
        "ddcf4fbb0654074b8d43b1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473980001020304050607aa626c6f63"
        "6b5f73697a6504a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c0aa65787472615f6b65797392c0c0a9"
        "67726f75705f69647800b26b765f63616368655f737065635f6b696e64ae66756c6c5f617474656e74696f6e00"),
    ("sha256_cbor", "full_attention,sliding_window:8"): (
        "93cb3ff800000000000092de000ba474797065ab426c6f636b53746f726564ac626c6f636b5f68617368657392cf0f1a5c4c207418"
        "98cf14cb3083c18d40f9b1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473980001020304050607aa626c6f63"
        "6b5f73697a6504a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c0aa65787472615f6b65797392c0c0a9"
        "67726f75705f69647800b26b765f63616368655f737065635f6b696e64ae66756c6c5f617474656e74696f6ede000ca474797065ab"
        "426c6f636b53746f726564ac626c6f636b5f68617368657392cf0f1a5c4c20741898cf14cb3083c18d40f9b1706172656e745f626c"
        "6f636b5f68617368c0a9746f6b656e5f696473980001020304050607aa626c6f636b5f73697a6504a76c6f72615f6964c0a66d6564"
        "69756da3475055a96c6f72615f6e616d65c0aa65787472615f6b65797392c0c0a967726f75705f69647801b26b765f63616368655f"
        "737065635f6b696e64ae736c6964696e675f77696e646f77bc6b765f63616368655f737065635f736c6964696e675f77696e646f77"
        "0800"),
}


@pytest.mark.parametrize("algo, groups", list(VLLM_BYTES))
def test_a_batch_is_the_bytes_vllm_writes(algo, groups):
    config = EngineConfig(block_size=4, num_gpu_blocks=32, max_model_len=64, max_num_seqs=4, max_num_batched_tokens=64,
                          prefix_caching_hash_algo=algo, kv_cache_groups=groups)
    sim = Simulation(config, [Request("r0", list(range(10)), 4)])
    sim.enable_kv_events()
    batch = KVEventBatcher(config, sim.request, data_parallel_rank=0).batch(sim.step(), 1.5)
    assert BatchEncoder().encode(batch).hex() == VLLM_BYTES[algo, groups]


# -- the config --------------------------------------------------------------------------------------
def test_the_config_reads_as_vllms():
    config = KVEventsConfig.from_json('{"enable_kv_cache_events": true}')
    assert (config.publisher, config.endpoint, config.replay_endpoint, config.buffer_steps, config.hwm,
            config.max_queue_size, config.topic) == ("zmq", "tcp://*:5557", None, 10_000, 100_000, 100_000, "")
    assert KVEventsConfig.from_json("{}").publisher == "null" and not KVEventsConfig.from_json("{}").publishes
    assert not KVEventsConfig.from_json('{"enable_kv_cache_events": true, "publisher": "null"}').publishes


@pytest.mark.parametrize("text, field", [
    ('{"enable_kv_cache_events": true, "endpont": "tcp://*:1"}', "--kv-events-config.endpont"),
    ('{"enable_kv_cache_events": true, "endpoint": "http://x"}', "--kv-events-config.endpoint"),
    ('{"enable_kv_cache_events": true, "buffer_steps": 0}', "--kv-events-config.buffer_steps"),
    ('{"enable_kv_cache_events": true, "max_queue_size": 10000000}', "--kv-events-config.max_queue_size"),
    ('{"enable_kv_cache_events": "yes"}', "--kv-events-config.enable_kv_cache_events"),
    ('{"publisher": "kafka"}', "--kv-events-config.publisher"),
    ("[1]", "--kv-events-config"), ("{", "--kv-events-config"),
])
def test_a_bad_config_names_its_field(text, field):
    with pytest.raises(ConfigError) as error:
        KVEventsConfig.from_json(text)
    assert error.value.field == field


def test_the_config_comes_from_the_flag_or_the_vllm_line():
    line = """vllm serve meta-llama/Llama-3.1-8B --kv-events-config '{"enable_kv_cache_events": true, "topic": "t"}'"""
    assert kv_events_config_of(None, line).topic == "t"
    assert kv_events_config_of(None, line.replace("-config '", "-config='")).topic == "t"
    assert kv_events_config_of('{"topic": "own"}', None).topic == "own"
    assert kv_events_config_of(None, "vllm serve m") is None and kv_events_config_of(None, None) is None
    with pytest.raises(ConfigError, match="given twice"):
        kv_events_config_of('{"topic": "own"}', line)


@pytest.mark.parametrize("config, refused", [
    ({"endpoint": "tcp://*:5557"}, "endpoint"),
    ({"endpoint": "tcp://[::]:5557"}, "endpoint"),
    ({"endpoint": "ipc:///tmp/kv", "replay_endpoint": "tcp://*:5558"}, "replay_endpoint"),
    ({"endpoint": "tcp://router.example:5557"}, None),  # connects out to the router the operator names
    ({"endpoint": "ipc:///tmp/kv", "replay_endpoint": "ipc:///tmp/kv-replay"}, None),
])
def test_a_public_server_refuses_to_listen_on_the_network(config, refused):
    config = KVEventsConfig(enable_kv_cache_events=True, **config)
    check_exposure(config, public=False)
    if refused is None:
        check_exposure(config, public=True)
    else:
        with pytest.raises(ConfigError) as error:
            check_exposure(config, public=True)
        assert error.value.field == f"--kv-events-config.{refused}"


def test_serve_refuses_it_in_one_line_before_starting(capsys):
    code = servescope_main(["serve", "--public", "--port", "1", "--kv-events-config", '{"enable_kv_cache_events": true}'])
    assert code == 2
    assert "kv-events-config.endpoint" in capsys.readouterr().err


# -- real sockets --------------------------------------------------------------------------------------
def test_a_subscriber_holds_the_sessions_cached_blocks(endpoints):
    publisher, subscriber = start(endpoints)
    try:
        live = session()
        feed = KVEventFeed(publisher, environ={})
        feed.follow(live)
        live.advance(150)
        subscriber.receive(until=caught_up(publisher))
        assert subscriber.seqs == list(range(len(subscriber.seqs))) and len(subscriber.seqs) > 20
        assert isinstance(subscriber.batches[0].events[0], AllBlocksCleared)  # following starts with a resync
        assert all(batch.data_parallel_rank == 0 for batch in subscriber.batches)
        expected = pool_as_vllm_hashes(live.sim)
        assert subscriber.cached == expected and len(expected) > 20
        assert any(isinstance(e, BlockRemoved) for batch in subscriber.batches for e in batch.events)
    finally:
        subscriber.close()
        publisher.close()


def test_missed_batches_are_replayed_in_order(endpoints):
    publisher, _ = start(endpoints, subscribe=False)
    try:
        live = session()
        feed = KVEventFeed(publisher, environ={})
        feed.follow(live)
        live.advance(60)
        time.sleep(0.3)  # sent before anyone listened: only the replay buffer has them
        subscriber = Subscriber(publisher.endpoint, publisher.replay_endpoint)
        time.sleep(0.2)
        subscriber.ask_replay(0)
        num_replayed = len(subscriber.replayed)
        assert subscriber.replayed == list(range(num_replayed)) and num_replayed > 10
        live.advance(60)
        subscriber.receive(until=caught_up(publisher))
        assert subscriber.seqs == list(range(len(subscriber.seqs)))
        assert subscriber.cached == pool_as_vllm_hashes(live.sim)
    finally:
        subscriber.close()
        publisher.close()


def test_a_step_back_resyncs_the_subscriber(endpoints):
    publisher, subscriber = start(endpoints)
    try:
        live = session()
        KVEventFeed(publisher, environ={}).follow(live)
        live.advance(120)
        live.seek(40)
        subscriber.receive(until=caught_up(publisher))
        assert sum(isinstance(b.events[0], AllBlocksCleared) for b in subscriber.batches) == 2
        assert subscriber.cached == pool_as_vllm_hashes(live.sim)
    finally:
        subscriber.close()
        publisher.close()


def test_hybrid_groups_carry_group_idx_on_the_wire(endpoints):
    publisher, subscriber = start(endpoints)
    try:
        live = session("gpt-oss-20b")  # sliding window 128 (group 0), full attention (group 1)
        KVEventFeed(publisher, environ={}).follow(live)
        live.advance(100)
        subscriber.receive(until=caught_up(publisher))
        kinds = {(e.group_idx, e.kv_cache_spec_kind, e.kv_cache_spec_sliding_window)
                 for b in subscriber.batches for e in b.events if isinstance(e, BlockStored)}
        assert kinds == {(0, "sliding_window", 128), (1, "full_attention", None)}
        assert subscriber.cached == pool_as_vllm_hashes(live.sim)
    finally:
        subscriber.close()
        publisher.close()


class SlowPublisher:
    """A publisher whose socket never drains: its queue holds three batches."""

    def __init__(self):
        self.queue: list[bytes] = []
        self.sent: list[bytes] = []

    def publish(self, payload: bytes) -> bool:
        if len(self.queue) == 3:
            return False
        self.queue.append(payload)
        return True

    def discard_queued(self) -> int:
        dropped, self.queue = len(self.queue), []
        return dropped

    def drain(self) -> None:
        self.sent += self.queue
        self.queue = []


def test_a_full_queue_is_replaced_by_one_resync():
    publisher, live = SlowPublisher(), session()
    feed = KVEventFeed(publisher, environ={})
    feed.follow(live)
    live.advance(100)
    publisher.drain()
    assert feed.num_resyncs > 2
    decoder, cached = msgspec.msgpack.Decoder(type=KVEventBatch), Counter()
    for payload in publisher.sent:
        for event in decoder.decode(payload).events:
            if isinstance(event, BlockStored):
                cached.update((event.group_idx, h) for h in event.block_hashes)
            elif isinstance(event, BlockRemoved):
                cached[(event.group_idx, event.block_hashes[0])] -= 1
            else:
                cached.clear()
    assert +cached == pool_as_vllm_hashes(live.sim)


def test_the_server_publishes_the_newest_sessions_blocks(endpoints):
    """Through the app: a session made over HTTP and stepped over its websocket is followed; deleted,
    it leaves the subscriber with nothing cached."""
    publisher, subscriber = start(endpoints)
    try:
        with TestClient(create_app(Settings(heartbeat_s=HEARTBEAT_S, allowed_hosts=("testserver",)), publisher)) as client:
            opener = Opener(client)
            created = create(client)
            presenter = opener(created)
            presenter.state()
            presenter.step(80)
            live = client.app.state.manager.get(created["session_id"]).session
            subscriber.receive(until=caught_up(publisher))
            assert subscriber.cached == pool_as_vllm_hashes(live.sim) and subscriber.cached
            opener.close()
            client.delete(f"/api/sessions/{created['session_id']}", headers={"X-Control-Token": created["control_token"]})
            subscriber.receive(until=caught_up(publisher))
            assert isinstance(subscriber.batches[-1].events[0], AllBlocksCleared) and not subscriber.cached
    finally:
        subscriber.close()
    assert not publisher._thread.is_alive()  # the server's end closed it
