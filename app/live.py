"""Sessions served live: viewers with their own send tasks, commands, playback, expiry.

Each viewer has a mailbox holding the state it has not seen yet: the deltas while it keeps up
(a few at most), and a "send a snapshot" mark once it has fallen further behind, so a slow or
stalled viewer costs the others and the simulation nothing. Events (the log) queue losslessly up
to a bound. Long runs of steps give the event loop a turn every few steps, so a presenter's
"step 10000" never stalls the viewers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import deque

from fastapi import WebSocket

from scheduler_core.errors import ConfigError
from scheduler_core.scenario import Scenario

from .frames import PROTOCOL_VERSION, Delta
from .session import Breakpoint, Session
from .settings import Settings

# More steps than this in one go reach viewers as a snapshot rather than a long delta.
MAX_DELTA_STEPS = 200
# Steps simulated between turns of the event loop during a long step, seek or run to breakpoint.
ADVANCE_CHUNK = 50
# The share of each playback tick spent stepping; the rest is the viewers' senders' (and, on a
# small machine, the browser's).
STEPPING_SHARE = 0.5


# Frames a page that acknowledges what it drew ("ack") may have in flight: one being drawn, one
# on its way, so the next is ready when a frame is drawn but none piles up behind a slow page.
MAX_UNACKED_FRAMES = 2


class Viewer:
    """One websocket's mailbox and sender. The state it has not been sent yet is one delta (later
    ones merge into it) or a "send a snapshot" mark once that delta would span too many steps."""

    def __init__(self, websocket: WebSocket, can_control: bool, event_backlog: int):
        self.websocket = websocket
        self.can_control = can_control
        self.needs_snapshot = True
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

    async def send_loop(self, live: "LiveSession", heartbeat_s: float) -> None:
        """This viewer's own sender: replies, then the latest state and the queued events while
        the page keeps up with what it was sent."""
        ws = self.websocket
        while True:
            try:
                await asyncio.wait_for(self.wakeup.wait(), heartbeat_s)
            except TimeoutError:
                await ws.send_text(json.dumps({"v": PROTOCOL_VERSION, "type": "heartbeat", "step": live.session.step}))
                continue
            self.wakeup.clear()
            while self.replies:
                await ws.send_text(self.replies.popleft())
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
                # Deltas offered while waiting for the lock are already in the snapshot.
                if self.pending_delta is not None and self.pending_delta.seq <= seq:
                    self.pending_delta = None
                self._sent(seq)
                await ws.send_bytes(data)
            elif self.pending_delta is not None:
                delta, self.pending_delta = self.pending_delta, None
                self._sent(delta.seq)
                await ws.send_bytes(delta.encode())
            if self.pending_delta is not None or self.needs_snapshot:
                self.wakeup.set()  # more to send once the window allows
            if self.events:
                batch = list(self.events)
                self.events.clear()
                dropped, self.dropped_events = self.dropped_events, 0
                await ws.send_text(json.dumps({"v": PROTOCOL_VERSION, "type": "events", "events": batch, "dropped": dropped}))


def error_frame(code: str, message: str) -> str:
    return json.dumps({"v": PROTOCOL_VERSION, "type": "error", "code": code, "message": message})


class CommandError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class LiveSession:
    """A session with its viewers and playback task."""

    def __init__(self, session: Session, settings: Settings):
        self.session = session
        self.settings = settings
        self.viewers: set[Viewer] = set()
        self.lock = asyncio.Lock()
        self.playback: asyncio.Task | None = None
        self.unpublished: list = []  # step records not in a delta yet

    # -- publishing -------------------------------------------------------------------------
    def publish_steps(self, records) -> None:
        """The steps just taken, kept until a viewer can take a delta (`flush`); a long jump
        (`records` None, or more than a delta spans) goes out as a snapshot instead."""
        if records is not None and not records:
            return
        if records is None or len(self.unpublished) + len(records) > MAX_DELTA_STEPS:
            self.session.jump()
            self.publish_snapshot()
        else:
            self.unpublished += records
        events = self.session.take_events()
        for viewer in self.viewers:
            viewer.offer_events(events)
            viewer.wakeup.set()

    def flush(self) -> None:
        """The steps no viewer has been offered yet, as one delta to every viewer. Called by a
        sender that can send, under the lock: a delta is built only as often as some page can
        take one, however fast the session steps."""
        if self.unpublished:
            delta = self.session.delta_frame(self.unpublished)
            self.unpublished = []
            for viewer in self.viewers:
                viewer.offer_delta(delta)

    def publish_snapshot(self) -> None:
        self.unpublished = []  # a snapshot holds them
        for viewer in self.viewers:
            viewer.offer_snapshot()

    def publish_status(self, note: str | None = None) -> None:
        text = self.session.status_frame(len(self.viewers), note)
        for viewer in self.viewers:
            viewer.reply(text)

    # -- commands ---------------------------------------------------------------------------
    async def handle(self, viewer: Viewer, text: str) -> None:
        """Apply one client message; a bad one earns an error frame and changes nothing."""
        self.session.last_activity = time.monotonic()
        if len(text.encode()) > self.settings.max_message_bytes:
            viewer.reply(error_frame("too_large", f"messages are limited to {self.settings.max_message_bytes} bytes"))
            return
        try:
            message = json.loads(text)
        except json.JSONDecodeError as e:
            viewer.reply(error_frame("bad_json", f"not JSON: {e.msg}"))
            return
        except RecursionError:
            viewer.reply(error_frame("bad_json", "JSON nested too deeply"))
            return
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            viewer.reply(error_frame("bad_message", 'a message is a JSON object with a "type"'))
            return
        kind = message["type"]
        try:
            if kind == "snapshot":
                viewer.offer_snapshot()
            elif kind == "ping":
                viewer.reply(json.dumps({"v": PROTOCOL_VERSION, "type": "pong", "step": self.session.step}))
            elif kind == "ack":
                viewer.acknowledge(self._int(message, "seq", 0, 0, 2**53))
            elif kind in CONTROL_COMMANDS:
                if not viewer.can_control:
                    raise CommandError("read_only", "this is a view-only link: only the presenter controls the session")
                async with self.lock:
                    await CONTROL_COMMANDS[kind](self, message)
            else:
                raise CommandError("unknown_type", f"unknown message type {kind!r}")
        except CommandError as e:
            viewer.reply(error_frame(e.code, str(e)))

    def _int(self, message: dict, key: str, default: int, low: int, high: int) -> int:
        value = message.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise CommandError("bad_value", f"{key} must be an integer from {low} to {high}")
        return value

    async def cmd_play(self, message: dict) -> None:
        if "steps_per_s" in message or "time_ratio" in message:
            await self.cmd_speed(message)
        if self.session.done:
            raise CommandError("finished", "the run has finished; step back or reset to play again")
        self.session.playing = True
        if self.playback is None or self.playback.done():
            self.playback = asyncio.create_task(self._play())
        self.publish_status()

    async def cmd_pause(self, message: dict) -> None:
        self.session.playing = False
        self.publish_status()

    async def _advance(self, num_steps: int, stop_at_breakpoints: bool = False):
        """Up to `num_steps` steps, yielding to the event loop every ADVANCE_CHUNK steps so the
        viewers' senders keep running. Returns (records, or None once too many for one delta; the
        breakpoint hit, if any)."""
        records: list | None = []
        remaining = num_steps
        while remaining > 0 and not self.session.done:
            chunk, hit = self.session.advance(min(ADVANCE_CHUNK, remaining), stop_at_breakpoints)
            remaining -= len(chunk)
            if records is not None:
                records += chunk
                if len(records) > MAX_DELTA_STEPS:
                    records = None
            if hit:
                return records, hit
            await asyncio.sleep(0)
        return records, None

    async def cmd_step(self, message: dict) -> None:
        n = self._int(message, "n", 1, 1, 100_000)
        self.session.playing = False
        records, _ = await self._advance(n)
        self.publish_steps(records)
        self.publish_status()

    async def cmd_step_back(self, message: dict) -> None:
        n = self._int(message, "n", 1, 1, 1_000_000)
        await self._seek(self.session.step - n)

    async def cmd_seek(self, message: dict) -> None:
        await self._seek(self._int(message, "step", 0, 0, 10_000_000))

    async def _seek(self, step: int) -> None:
        self.session.playing = False
        if step > self.session.step:  # forward: step there, taking turns with the viewers
            await self._advance(step - self.session.step)
        self.session.seek(step)
        self.session.jump()
        self.publish_snapshot()
        self.publish_status()

    async def cmd_reset(self, message: dict) -> None:
        await self._seek(0)

    async def cmd_run_to_breakpoint(self, message: dict) -> None:
        if not self.session.breakpoints:
            raise CommandError("no_breakpoints", "set a breakpoint first")
        self.session.playing = False
        records, hit = await self._advance(self.settings.max_requests_per_session * 64, stop_at_breakpoints=True)
        self.publish_steps(records)
        self.publish_status(note=f"breakpoint: {hit.kind}" if hit else "no breakpoint hit before the end")

    async def cmd_speed(self, message: dict) -> None:
        """Speed as steps per second, or as simulated seconds per wall second (`time_ratio`)."""
        if "time_ratio" in message:
            ratio = message["time_ratio"]
            if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 < ratio <= 100:
                raise CommandError("bad_value", "time_ratio must be in (0, 100]")
            self.session.time_ratio = float(ratio)
        else:
            value = message.get("steps_per_s")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= self.settings.max_steps_per_s:
                raise CommandError("bad_value", f"steps_per_s must be in (0, {self.settings.max_steps_per_s}]")
            self.session.steps_per_s = float(value)
            self.session.time_ratio = None
        self.publish_status()

    async def cmd_breakpoints(self, message: dict) -> None:
        items = message.get("breakpoints")
        if not isinstance(items, list) or len(items) > 32:
            raise CommandError("bad_value", "breakpoints must be a list of at most 32 breakpoints")
        try:
            self.session.breakpoints = [Breakpoint.parse(item) for item in items]
        except ValueError as e:
            raise CommandError("bad_value", str(e)) from None
        self.publish_status()

    async def _play(self) -> None:
        """Step at the chosen speed, one frame per tick, until paused, a breakpoint, or the end.

        By steps per second, or (with `time_ratio`) as many steps as keep simulated time at that
        multiple of wall time; either way at most max_steps_per_s, so viewers are never flooded,
        and for at most a share of each tick, so the viewers' senders always get their turn: when
        the simulation cannot keep up, play slows down and frames keep coming.
        """
        frame_s = 1.0 / self.settings.max_frames_per_s
        max_per_tick = max(1, int(self.settings.max_steps_per_s * frame_s))
        owed = 0.0
        last = next_tick = time.monotonic()
        while self.session.playing:
            now = time.monotonic()
            elapsed, last = now - last, now
            session = self.session
            async with self.lock:
                if not session.playing:
                    break
                deadline = now + frame_s * STEPPING_SHARE
                if session.time_ratio is None:
                    # At most one tick's worth: if stepping falls behind, play slows down rather
                    # than sending ever larger frames.
                    owed = min(owed + elapsed * session.steps_per_s, max(1.0, session.steps_per_s * frame_s), max_per_tick)
                    due, owed = int(owed), owed - int(owed)
                    records, hit = session.advance(due, stop_at_breakpoints=True, deadline=deadline)
                else:
                    target_clock = session.sim.clock_s + session.time_ratio * elapsed
                    records, hit = session.advance_until(target_clock, max_per_tick, deadline)
                self.publish_steps(records)
                if hit or session.done:
                    session.playing = False
                    self.publish_status(note=f"breakpoint: {hit.kind}" if hit else "finished")
                    break
            # Sleep until the next tick is due, not a whole tick after this one's work.
            tick_s = frame_s if session.time_ratio else max(frame_s, 1.0 / session.steps_per_s)
            next_tick = max(next_tick + tick_s, time.monotonic())
            await asyncio.sleep(next_tick - time.monotonic())

    async def close(self) -> None:
        self.session.playing = False
        if self.playback:
            self.playback.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.playback


CONTROL_COMMANDS = {
    "play": LiveSession.cmd_play,
    "pause": LiveSession.cmd_pause,
    "step": LiveSession.cmd_step,
    "step_back": LiveSession.cmd_step_back,
    "seek": LiveSession.cmd_seek,
    "reset": LiveSession.cmd_reset,
    "run_to_breakpoint": LiveSession.cmd_run_to_breakpoint,
    "speed": LiveSession.cmd_speed,
    "breakpoints": LiveSession.cmd_breakpoints,
}


class SessionManager:
    """All live sessions of the server, within its limits."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.sessions: dict[str, LiveSession] = {}

    def check_limits(self, scenario: Scenario) -> None:
        limits = self.settings
        if scenario.workload.num_requests > limits.max_requests_per_session:
            raise ConfigError("workload.num_requests", f"at most {limits.max_requests_per_session} per session")
        if scenario.engine.num_gpu_blocks > limits.max_blocks_per_session:
            raise ConfigError("engine.num_gpu_blocks", f"at most {limits.max_blocks_per_session} per session")

    def create(self, scenario: Scenario, lesson: tuple[str, str] | None = None, origin: str = "") -> LiveSession:
        limits = self.settings
        if len(self.sessions) >= limits.max_sessions:
            raise ConfigError("session", f"the server holds at most {limits.max_sessions} sessions; delete one")
        self.check_limits(scenario)
        session_id = uuid.uuid4().hex[:12]
        live = LiveSession(Session(session_id, scenario, limits, lesson, origin), limits)
        self.sessions[session_id] = live
        return live

    def get(self, session_id: str) -> LiveSession | None:
        return self.sessions.get(session_id)

    async def delete(self, session_id: str) -> bool:
        live = self.sessions.pop(session_id, None)
        if live is None:
            return False
        await live.close()
        for viewer in list(live.viewers):
            with contextlib.suppress(Exception):
                await viewer.websocket.close(code=4404, reason="session deleted")
        return True

    async def expire_idle(self) -> list[str]:
        now = time.monotonic()
        expired = [sid for sid, live in self.sessions.items()
                   if not live.viewers and not live.session.playing
                   and now - live.session.last_activity > self.settings.idle_timeout_s]
        for sid in expired:
            await self.delete(sid)
        return expired

    async def close_all(self) -> None:
        for sid in list(self.sessions):
            await self.delete(sid)
