"""A viewer of a live session: one websocket with its own mailbox and sender.

The mailbox holds the state the viewer has not been sent yet: one delta (later ones merge into
it) while it keeps up, and a "send a snapshot" mark once that delta would span too many steps, so
a slow or stalled viewer costs the others and the simulation nothing. A page that acknowledges
what it drew ("ack") has at most MAX_UNACKED_FRAMES state frames in flight. Events (the log)
queue losslessly up to a bound. A viewer that stops reading altogether is dropped after
`viewer_stall_s`; one whose large frames hold the server's room for unread frames is dropped
sooner (`viewer_bytes.py`). A page may ask for a snapshot one at a time (never while one is on
its way) and SNAPSHOT_BURST in a row, then one a SNAPSHOT_REQUEST_S; the snapshot is built once
per state, whoever asks.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from typing import Protocol

from fastapi import WebSocket

from .frames import PROTOCOL_VERSION, Delta
from .rate_limits import TokenBucket
from .session import Session
from .viewer_bytes import ViewerBytes


class FrameSource(Protocol):
    """What a viewer's sender needs of its live session (`live.LiveSession` is one): the steps not
    in a delta yet, the lock that keeps a long command's half-done state from being sent, and the
    session whose snapshot a viewer may need."""

    lock: asyncio.Lock
    unpublished: list
    session: Session

    def flush(self) -> None: ...


# More steps than this in one pending delta reach the viewer as a snapshot instead: a brief
# stall costs one merged delta, a long one never more than the current state.
MAX_DELTA_STEPS = 200

# Frames a page that acknowledges what it drew ("ack") may have in flight: one being drawn and
# five on their way, so the next is ready when a frame is drawn even when the server stalls for a
# few frames (a batch turning over, or a collection, on a busy small machine: with three on their
# way, 0.9-2.4% of the frames came 67 ms or more after the one before; with five, 0.4-0.6%), yet a
# page never has more than a tenth of a second to draw behind what the server sent.
MAX_UNACKED_FRAMES = 6

# Snapshots a page may ask for (beyond the ones it is sent on connecting and when too far behind):
# a few in a row, then one a second, each built at most once per state.
SNAPSHOT_BURST = 4
SNAPSHOT_REQUEST_S = 1.0


class Viewer:
    """One websocket's mailbox and sender."""

    def __init__(self, websocket: WebSocket, can_control: bool, event_backlog: int, account: ViewerBytes | None = None):
        self.websocket = websocket
        self.account = account or ViewerBytes(2**62)  # the server's count of large frames in flight
        # Why the server dropped this viewer (its sender is cancelled), for the close frame.
        self.dropped: str | None = None
        self.sender: asyncio.Task | None = None
        self.sending_snapshot = False
        self.snapshot_requests = TokenBucket(1 / SNAPSHOT_REQUEST_S, SNAPSHOT_BURST)
        # The client address, for the per-client cap on viewers.
        self.client = websocket.client.host if websocket.client else ""
        self.can_control = can_control
        self.needs_snapshot = True
        self.snapshot_seq = -1  # the sequence number of the last snapshot sent: deltas up to it are in it
        self.pending_delta: Delta | None = None
        # Sequence numbers of the state frames sent and not yet acknowledged; a viewer that never
        # acknowledges (a script) is sent frames as fast as its socket takes them.
        self.acknowledges = False
        self.unacked: deque[int] = deque()
        self.replies: deque[str] = deque(maxlen=64)
        self.events: deque[dict] = deque(maxlen=event_backlog)
        self.dropped_events = 0
        self.wakeup = asyncio.Event()
        self.wakeup.set()

    def offer_delta(self, delta: Delta) -> None:
        if not self.needs_snapshot:
            pending = self.pending_delta
            merged = delta if pending is None else pending.merged(delta)
            if merged.num_steps > MAX_DELTA_STEPS:  # too far behind: the whole current state (latest wins)
                self.offer_snapshot()
                return
            self.pending_delta = merged
        self.wakeup.set()

    def request_snapshot(self) -> None:
        """The page asks for the whole state: one at a time, SNAPSHOT_BURST in a row, then one a SNAPSHOT_REQUEST_S."""
        now = time.monotonic()
        if self.needs_snapshot or self.sending_snapshot or self.snapshot_requests.wait_s("", now):
            self.reply(error_frame("snapshot_limited", f"one snapshot at a time, {SNAPSHOT_BURST} in a row, "
                                                       f"then one every {SNAPSHOT_REQUEST_S:g} s"))
            return
        self.snapshot_requests.take("", now)
        self.offer_snapshot()

    def drop(self, reason: str) -> None:
        """End this viewer's connection (its sender stops; the socket closes with `reason`)."""
        self.dropped = reason
        if self.sender is not None:
            self.sender.cancel()

    def offer_snapshot(self) -> None:
        self.needs_snapshot = True
        self.pending_delta = None
        self.wakeup.set()

    def acknowledge(self, seq: int) -> None:
        """The page has drawn the state up to `seq`."""
        self.acknowledges = True
        while self.unacked and self.unacked[0] <= seq:
            self.unacked.popleft()
        self.wakeup.set()

    def offer_events(self, events: list[dict]) -> None:
        for event in events:
            if len(self.events) == self.events.maxlen:
                self.dropped_events += 1
            self.events.append(event)
        if events:
            self.wakeup.set()

    def reply(self, text: str) -> None:
        self.replies.append(text)
        self.wakeup.set()

    def _sent(self, seq: int) -> None:
        if self.acknowledges:
            self.unacked.append(seq)

    def _window_open(self) -> bool:
        return not self.acknowledges or len(self.unacked) < MAX_UNACKED_FRAMES

    @property
    def drawing_behind(self) -> bool:
        """A page with its frames in flight, still drawing what it was sent."""
        return self.acknowledges and len(self.unacked) >= MAX_UNACKED_FRAMES

    async def send_loop(self, live: FrameSource, heartbeat_s: float, stall_s: float) -> None:
        """This viewer's own sender: replies, then the latest state and the queued events while
        the page keeps up with what it was sent. A frame that cannot be sent within `stall_s`
        (the viewer stopped reading) ends the loop, and with it the viewer's connection."""
        self.sender = asyncio.current_task()

        async def send(data: str | bytes) -> None:
            async with self.account.sending(self, len(data)), asyncio.timeout(stall_s):
                if isinstance(data, bytes):
                    await self.websocket.send_bytes(data)
                else:
                    await self.websocket.send_text(data)

        while True:
            try:
                await asyncio.wait_for(self.wakeup.wait(), heartbeat_s)
            except TimeoutError:
                await send(json.dumps({"v": PROTOCOL_VERSION, "type": "heartbeat", "step": live.session.step}))
                continue
            self.wakeup.clear()
            while self.replies:
                await send(self.replies.popleft())
            if not self._window_open():
                continue  # the next acknowledgement wakes this loop up again
            if live.unpublished and not self.needs_snapshot:
                async with live.lock:  # never the half-done state of a long command
                    live.flush()
            if self.needs_snapshot:
                self.needs_snapshot = False
                # Under the session's lock: never the half-done state of a long command.
                async with live.lock:
                    live.flush()  # steps taken since the last delta: the others need them as one
                    seq, data = live.session.seq, live.session.snapshot_frame()
                self.snapshot_seq = seq
                # Deltas offered while waiting for the lock are already in the snapshot.
                if self.pending_delta is not None and self.pending_delta.seq <= seq:
                    self.pending_delta = None
                self._sent(seq)
                self.sending_snapshot = True
                try:
                    await send(data)
                finally:
                    self.sending_snapshot = False
            elif self.pending_delta is not None:
                delta, self.pending_delta = self.pending_delta, None
                self._sent(delta.seq)
                await send(delta.encode())
            if self.pending_delta is not None or self.needs_snapshot:
                self.wakeup.set()  # more to send once the window allows
            if self.events:
                batch = list(self.events)
                self.events.clear()
                dropped, self.dropped_events = self.dropped_events, 0
                await send(json.dumps({"v": PROTOCOL_VERSION, "type": "events", "events": batch, "dropped": dropped}))


def error_frame(code: str, message: str, field: str | None = None) -> str:
    """A refusal; `field` names the part of the message at fault (`breakpoints[0].value`), when one is."""
    frame = {"v": PROTOCOL_VERSION, "type": "error", "code": code, "message": message}
    if field:
        frame["field"] = field
    return json.dumps(frame)
