"""What viewers' sockets hold, counted: the bytes of each frame handed to a websocket and not yet
taken by its reader, per viewer and for the whole server.

A viewer has at most one frame in flight (its sender awaits each send), so what one socket holds
is bounded by one frame. Frames up to SMALL_FRAME_BYTES (a playing session's deltas) always go:
a viewer that reads is never held up by others that do not. Larger ones (snapshots: about 1.9 MB
for the largest pool) share the server's `max_viewer_send_bytes`. A frame that would pass it
first drops the viewers whose frame has waited longest, if it has waited over STALLED_S (they
are not reading), and otherwise waits for room: 200 sockets that never read hold at most the
budget, not 200 snapshots.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

SMALL_FRAME_BYTES = 64 * 1024
# A large frame not taken by its reader for this long marks a viewer that is not reading.
STALLED_S = 1.0
# How often a frame waiting for room looks again.
WAIT_POLL_S = 0.05


class ViewerBytes:
    """The server's account of large frames in flight to viewers, within `max_bytes`."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.num_bytes = 0
        self.in_flight: dict[object, tuple[int, float]] = {}  # viewer -> (bytes, when handed to its socket)

    @contextlib.asynccontextmanager
    async def sending(self, viewer, num_bytes: int):
        """Held while `viewer`'s socket takes a frame of `num_bytes`."""
        if num_bytes <= SMALL_FRAME_BYTES:
            yield
            return
        while self.num_bytes and self.num_bytes + num_bytes > self.max_bytes:
            self._drop_stalled(num_bytes)
            await asyncio.sleep(WAIT_POLL_S)  # a dropped viewer's sender gives its bytes back as it ends
        self.in_flight[viewer] = (num_bytes, time.monotonic())
        self.num_bytes += num_bytes
        try:
            yield
        finally:
            self.num_bytes -= num_bytes
            del self.in_flight[viewer]

    def _drop_stalled(self, num_bytes: int) -> None:
        now = time.monotonic()
        room = self.max_bytes - self.num_bytes
        for viewer, (held, since) in sorted(self.in_flight.items(), key=lambda item: item[1][1]):
            if room >= num_bytes or now - since < STALLED_S:
                break
            if not viewer.dropped:
                viewer.drop(f"frames not read: {held / 2**20:.1f} MiB unsent for over {STALLED_S:g} s, "
                            "and the server's room for unread frames is full")
                room += held
