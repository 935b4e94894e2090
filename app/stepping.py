"""The server's stepping time, shared by the sessions playing: per playback tick, a share for
each client playing something, split between that client's sessions. A session at 2,000 steps
a second then takes fewer steps a tick, not the others' frames: however many sessions play, all
of them together step for at most STEPPING_SHARE of each tick (and each at least one step).

A command's many steps (`step` n, a seek, run to a breakpoint) run as fast as they can while
nobody else steps, so a lecturer's seek is quick; beside other clients stepping, each slice of
them is followed by a pause that keeps the session within its client's share of the CPU, so a
student's "step 100,000" on the largest engine takes turns with a bystander's play.
"""

from __future__ import annotations

import asyncio
import time

from .viewer import MAX_DELTA_STEPS

# The share of each playback tick spent stepping; the rest is the viewers' senders' (and, on a
# small machine, the browser's). A quarter: a big engine (steps of 5-10 ms) then takes one step a
# tick and sends it, faster than a page draws, so a page has its next frame in hand when the server
# stalls; at half, two steps a tick, frames came at the server's pace and each stall reached the page.
STEPPING_SHARE = 0.25
# Stepping time between turns of the event loop during a long step, seek or run to breakpoint:
# short, so viewers keep their frames and a cancel (DELETE, presenter gone, SIGTERM) lands at once
# however slow a step is. `Session.advance`'s deadline is the one mechanism, for these and for play.
ADVANCE_SLICE_S = 0.005


class SteppingShare:
    """Who is playing now, by client (a session's owner), and so each one's stepping time a tick."""

    def __init__(self) -> None:
        # client -> its sessions stepping, each with how many of its tasks step (play, a command).
        self.playing: dict[str, dict] = {}

    def start(self, live) -> None:
        sessions = self.playing.setdefault(live.owner, {})
        sessions[live] = sessions.get(live, 0) + 1

    def stop(self, live) -> None:
        sessions = self.playing.get(live.owner)
        if sessions is not None and live in sessions:
            sessions[live] -= 1
            if not sessions[live]:
                del sessions[live]
            if not sessions:
                del self.playing[live.owner]

    def pause_s(self, live, used_s: float) -> float:
        """After `used_s` of a command's stepping: how long to leave the CPU to the others. None
        while no other client steps; else enough to hold the session to its share (an equal part
        per client, split between the client's sessions)."""
        if len(self.playing) <= 1:
            return 0.0
        share = 1 / len(self.playing) / max(1, len(self.playing.get(live.owner, ())))
        return used_s * (1 / share - 1)

    def tick_s(self, live, frame_s: float) -> float:
        """Stepping time `live` may take this tick of `frame_s`."""
        num_sessions = len(self.playing.get(live.owner, ())) or 1
        return frame_s * STEPPING_SHARE / max(1, len(self.playing)) / num_sessions


async def advance_in_turns(live, num_steps: int, stop_at_breakpoints: bool = False):
    """A command's `num_steps` steps for the session `live`, in slices of ADVANCE_SLICE_S, each
    followed by the pause its share asks for (none when nobody else steps); a checkpoint is taken
    in a thread, so the loop answers meanwhile. Returns (records, or None once too many for one
    delta; the breakpoint hit, if any)."""
    session, records, remaining, hit = live.session, [], num_steps, None
    live.stepping.start(live)
    try:
        while remaining > 0 and not session.done and not hit:
            started = time.monotonic()
            chunk, hit = session.advance(remaining, stop_at_breakpoints, deadline=started + ADVANCE_SLICE_S,
                                         checkpoint_later=True)
            if session.checkpoint_due:
                await asyncio.to_thread(session.take_due_checkpoint)
            remaining -= len(chunk)
            records = records + chunk if records is not None and len(records) + len(chunk) <= MAX_DELTA_STEPS else None
            await asyncio.sleep(live.stepping.pause_s(live, time.monotonic() - started))
    finally:
        live.stepping.stop(live)
    return records, hit
