"""The server's stepping time, shared by the sessions playing: per playback tick, a share for
each client playing something, split between that client's sessions. A session at 2,000 steps
a second then takes fewer steps a tick, not the others' frames: however many sessions play, all
of them together step for at most STEPPING_SHARE of each tick (and each at least one step).
"""

from __future__ import annotations

# The share of each playback tick spent stepping; the rest is the viewers' senders' (and, on a
# small machine, the browser's). A quarter: a big engine (steps of 5-10 ms) then takes one step a
# tick and sends it, faster than a page draws, so a page has its next frame in hand when the server
# stalls; at half, two steps a tick, frames came at the server's pace and each stall reached the page.
STEPPING_SHARE = 0.25


class SteppingShare:
    """Who is playing now, by client (a session's owner), and so each one's stepping time a tick."""

    def __init__(self) -> None:
        self.playing: dict[str, set] = {}

    def start(self, live) -> None:
        self.playing.setdefault(live.owner, set()).add(live)

    def stop(self, live) -> None:
        sessions = self.playing.get(live.owner)
        if sessions is not None:
            sessions.discard(live)
            if not sessions:
                del self.playing[live.owner]

    def tick_s(self, live, frame_s: float) -> float:
        """Stepping time `live` may take this tick of `frame_s`."""
        num_sessions = len(self.playing.get(live.owner, ())) or 1
        return frame_s * STEPPING_SHARE / max(1, len(self.playing)) / num_sessions
