"""A viewer of a live session: one websocket with its own mailbox and sender.

The mailbox holds the state the viewer has not seen yet: the deltas while it keeps up (a few at
most), and a "send a snapshot" mark once it has fallen further behind, so a slow or stalled
viewer costs the others and the simulation nothing. Events (the log) queue losslessly up to a
bound. A viewer that stops reading altogether is dropped after `viewer_stall_s`.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import TYPE_CHECKING

from fastapi import WebSocket

if TYPE_CHECKING:
    from .live import LiveSession

# Deltas a viewer may fall behind by before the next thing it gets is one snapshot instead: a
# brief stall costs a few small frames, a long one never more than the current state.
MAX_PENDING_DELTAS = 6


class Viewer:
    def __init__(self, websocket: WebSocket, can_control: bool, event_backlog: int):
        self.websocket = websocket
        self.can_control = can_control
        self.needs_snapshot = True
        self.pending_deltas: deque[tuple[int, str]] = deque()  # (seq, frame)
        self.replies: deque[str] = deque(maxlen=64)
        self.events: deque[dict] = deque(maxlen=event_backlog)
        self.dropped_events = 0
        self.wakeup = asyncio.Event()
        self.wakeup.set()

    def offer_delta(self, seq: int, text: str) -> None:
        if self.needs_snapshot or len(self.pending_deltas) >= MAX_PENDING_DELTAS:
            # Too far behind: the next thing it gets is the whole current state (latest wins).
            self.needs_snapshot = True
            self.pending_deltas.clear()
        else:
            self.pending_deltas.append((seq, text))
        self.wakeup.set()

    def offer_snapshot(self) -> None:
        self.needs_snapshot = True
        self.pending_deltas.clear()
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

    async def send_loop(self, live: "LiveSession", heartbeat_s: float, stall_s: float) -> None:
        """This viewer's own sender: replies, then the latest state, then queued events. A frame
        that cannot be sent within `stall_s` (the viewer stopped reading) ends the loop, and with
        it the viewer's connection."""
        async def send(text: str) -> None:
            async with asyncio.timeout(stall_s):
                await self.websocket.send_text(text)

        while True:
            try:
                await asyncio.wait_for(self.wakeup.wait(), heartbeat_s)
            except TimeoutError:
                await send(json.dumps({"v": 1, "type": "heartbeat", "step": live.session.step}))
                continue
            self.wakeup.clear()
            while self.replies:
                await send(self.replies.popleft())
            if self.needs_snapshot:
                self.needs_snapshot = False
                # Under the session's lock: never the half-done state of a long command.
                async with live.lock:
                    seq, text = live.session.seq, live.session.snapshot_frame()
                # Deltas offered while waiting for the lock are already in the snapshot.
                while self.pending_deltas and self.pending_deltas[0][0] <= seq:
                    self.pending_deltas.popleft()
                await send(text)
            while self.pending_deltas and not self.needs_snapshot:
                await send(self.pending_deltas.popleft()[1])
            if self.events:
                batch = list(self.events)
                self.events.clear()
                dropped, self.dropped_events = self.dropped_events, 0
                await send(json.dumps({"v": 1, "type": "events", "events": batch, "dropped": dropped}))


def error_frame(code: str, message: str) -> str:
    return json.dumps({"v": 1, "type": "error", "code": code, "message": message})


