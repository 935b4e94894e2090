"""vLLM's ZeroMQ KV event publisher, on vLLM's wire: what a KV-aware router subscribes to.

As vLLM 0.33.0's `ZmqEventPublisher` (`vllm/distributed/kv_events.py`), a thread of its own owns
the sockets:
- a PUB socket (bound or connected by vLLM's rule, `kv_events_config.binds`) sends each batch as
  three frames `[topic, sequence number as 8 bytes big-endian, msgpack payload]`, numbers counting
  up from 0; a subscriber that falls past the high-water mark `hwm` loses messages, and sees the
  gap in the numbers;
- a ROUTER socket on `replay_endpoint` answers a request of 8 bytes (the first number wanted) with
  every buffered batch from there, each `[topic, seq, payload]` to that client, then the end marker
  `[b"", -1 as 8 bytes, b""]`; the buffer keeps the last `buffer_steps` batches.

The session's side never waits: `publish` hands the payload to a bounded queue and returns False
when the queue is full (`max_queue_size` batches or `MAX_QUEUED_BYTES`); the caller then empties
it and publishes one resync batch instead (kv_event_feed.py).
"""

from __future__ import annotations

import queue
import threading
from collections import deque

import zmq

from .kv_events_config import MAX_QUEUED_BYTES, MAX_REPLAY_BYTES, KVEventsConfig, binds

END_SEQ = (-1).to_bytes(8, "big", signed=True)
_POLL_S = 0.05


class ZmqEventPublisher:
    """The sockets of one `KVEventsConfig` and the thread that serves them (`close` to stop)."""

    def __init__(self, config: KVEventsConfig, context: zmq.Context | None = None):
        self.config = config
        self._context = context or zmq.Context.instance()
        self._topic = config.topic.encode("utf-8")
        self._queue: queue.Queue[bytes] = queue.Queue(maxsize=config.max_queue_size)
        self._queued_bytes = 0
        self._lock = threading.Lock()
        self._buffer: deque[tuple[int, bytes]] = deque(maxlen=config.buffer_steps)
        self._buffer_bytes = 0
        self._next_seq = 0
        self._pub = self._context.socket(zmq.PUB)
        self._pub.set_hwm(config.hwm)
        self._replay = None
        try:
            if binds(config.endpoint):
                self._pub.bind(config.endpoint)
            else:
                self._pub.connect(config.endpoint)
            self.endpoint = self._pub.getsockopt_string(zmq.LAST_ENDPOINT) or config.endpoint
            self.replay_endpoint = None
            if config.replay_endpoint is not None:
                self._replay = self._context.socket(zmq.ROUTER)
                # Room for a whole replay and its end marker for a subscriber that reads slowly (vLLM's sizing).
                self._replay.setsockopt(zmq.SNDHWM, 2 * (config.buffer_steps + 1))
                self._replay.bind(config.replay_endpoint)
                self.replay_endpoint = self._replay.getsockopt_string(zmq.LAST_ENDPOINT)
        except zmq.ZMQError as e:
            self._close_sockets()
            raise OSError(f"--kv-events-config: cannot open {config.endpoint}"
                          f"{' / ' + config.replay_endpoint if config.replay_endpoint else ''}: {e}") from None
        self._running = True
        self._thread = threading.Thread(target=self._serve, daemon=True, name="kv-events-publisher")
        self._thread.start()

    # -- the session's side ------------------------------------------------------------------------
    def publish(self, payload: bytes) -> bool:
        """Queue one batch's payload; False (and nothing queued) when the queue is full."""
        with self._lock:
            if self._queued_bytes + len(payload) > MAX_QUEUED_BYTES:
                return False
            try:
                self._queue.put_nowait(payload)
            except queue.Full:
                return False
            self._queued_bytes += len(payload)
        return True

    def discard_queued(self) -> int:
        """Drop every batch not sent yet (none has a sequence number: subscribers see no gap)."""
        dropped = 0
        with self._lock:
            while True:
                try:
                    self._queued_bytes -= len(self._queue.get_nowait())
                except queue.Empty:
                    return dropped
                dropped += 1

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=2.0)
        self._close_sockets()

    def _close_sockets(self) -> None:
        for socket in (self._pub, self._replay):
            if socket is not None:
                socket.close(linger=0)

    # -- the thread ----------------------------------------------------------------------------------
    def _serve(self) -> None:
        while self._running or not self._queue.empty():
            if self._replay is not None and self._replay.poll(0):
                self._answer_replay()
            try:
                payload = self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            with self._lock:
                self._queued_bytes -= len(payload)
            seq = self._next_seq
            self._next_seq += 1
            seq_bytes = seq.to_bytes(8, "big")
            self._pub.send_multipart((self._topic, seq_bytes, payload))
            self._remember(seq, payload)

    def _remember(self, seq: int, payload: bytes) -> None:
        if len(self._buffer) == self._buffer.maxlen:
            self._buffer_bytes -= len(self._buffer[0][1])
        self._buffer.append((seq, payload))
        self._buffer_bytes += len(payload)
        while self._buffer_bytes > MAX_REPLAY_BYTES and len(self._buffer) > 1:
            self._buffer_bytes -= len(self._buffer.popleft()[1])

    def _answer_replay(self) -> None:
        frames = self._replay.recv_multipart()
        if len(frames) != 3 or len(frames[2]) != 8:
            return  # not a replay request (vLLM logs and ignores it too)
        client, _, start = frames
        start_seq = int.from_bytes(start, "big")
        for seq, payload in self._buffer:
            if seq >= start_seq:
                self._replay.send_multipart((client, b"", self._topic, seq.to_bytes(8, "big"), payload))
        self._replay.send_multipart((client, b"", b"", END_SEQ, b""))
