"""Sessions served live: their viewers (`viewer.py`), commands, playback, expiry.

Long runs of steps give the event loop a turn every few milliseconds, so a presenter's
"step 10000" never stalls the viewers, and a cancel lands at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import time

from .breakpoints import BreakpointError, parse_breakpoints
from .frames import PROTOCOL_VERSION
from .session import Session
from .settings import Settings
from .stepping import SteppingShare, advance_in_turns
from .viewer import MAX_DELTA_STEPS, Viewer, error_frame

# Play ticks a busy event loop or machine may owe and still make up (sent as frames in quick
# succession), before play lets them go and slows down instead.
CATCH_UP_TICKS = 5
# Joins and leaves within this long reach the viewers as one status frame.
VIEWER_STATUS_DELAY_S = 0.25
class CommandError(Exception):
    def __init__(self, code: str, message: str, field: str | None = None):
        super().__init__(message)
        self.code, self.field = code, field


class LiveSession:
    """A session with its viewers and playback task."""

    def __init__(self, session: Session, settings: Settings, owner: str = "", stepping: SteppingShare | None = None):
        self.session = session
        self.stepping = stepping or SteppingShare()  # the server's, shared with its other sessions
        self.settings = settings
        # The client address that created it, for per-client quotas on a public server.
        self.owner = owner
        self._viewer_status: asyncio.TimerHandle | None = None
        self.viewers: set[Viewer] = set()
        self.lock = asyncio.Lock()
        self.playback: asyncio.Task | None = None
        self.unpublished: list = []  # step records not in a delta yet
        # Control commands running now (each in its viewer's message task), cancelled on close.
        self.commands: set[asyncio.Task] = set()

    def token_matches(self, token: object) -> bool:
        """Whether `token` is this session's control token, compared in constant time (any str: "\ud800" too)."""
        return isinstance(token, str) and hmac.compare_digest(token.encode(errors="replace"), self.session.control_token.encode())

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
        take one, however fast the session steps (and by play before a checkpoint, so the step's
        frame goes out while the checkpoint is taken)."""
        if self.unpublished:
            delta = self.session.delta_frame(self.unpublished)
            self.unpublished = []
            for viewer in self.viewers:
                viewer.offer_delta(delta)

    def publish_snapshot(self) -> None:
        self.unpublished = []  # a snapshot holds them
        for viewer in self.viewers:
            viewer.offer_snapshot()

    def viewers_changed(self) -> None:
        """Viewers come and go in bursts (a class opening the link at once): one status frame per
        burst, not one to every viewer per join, so a join costs O(1) rather than O(viewers)."""
        if self._viewer_status is None:
            self._viewer_status = asyncio.get_running_loop().call_later(VIEWER_STATUS_DELAY_S, self._publish_viewers)

    def _publish_viewers(self) -> None:
        self._viewer_status = None
        self.publish_status()

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
        except (RecursionError, ValueError):  # json's others: nesting, an integer of over 4,300 digits
            viewer.reply(error_frame("bad_json", "JSON nested too deeply, or a number too long"))
            return
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            viewer.reply(error_frame("bad_message", 'a message is a JSON object with a "type"'))
            return
        kind = message["type"]
        try:
            if kind == "snapshot":
                viewer.request_snapshot()
            elif kind == "auth":
                if not self.token_matches(message.get("token")):
                    raise CommandError("bad_token", "that is not this session's control token")
                viewer.can_control = True
                viewer.reply(json.dumps({"v": PROTOCOL_VERSION, "type": "auth", "control": True}))
            elif kind == "ping":
                viewer.reply(json.dumps({"v": PROTOCOL_VERSION, "type": "pong", "step": self.session.step}))
            elif kind == "ack":
                viewer.acknowledge(self._int(message, "seq", 0, 0, 2**53))
            elif kind in CONTROL_COMMANDS:
                if not viewer.can_control:
                    raise CommandError("read_only", "this is a view-only link: only the presenter controls the session")
                await self.run_command(CONTROL_COMMANDS[kind], message)
            else:
                raise CommandError("unknown_type", f"unknown message type {kind!r}")
        except CommandError as e:
            viewer.reply(error_frame(e.code, str(e), e.field))

    async def run_command(self, command, message: dict) -> None:
        """One control command, cancellable: deleting the session or the presenter leaving stops
        a long step, seek or run to breakpoint at its next turn of the event loop."""
        task = asyncio.current_task()
        self.commands.add(task)
        try:
            async with self.lock:
                await command(self, message)
        except asyncio.CancelledError:
            # The steps taken so far stand; viewers get them as one snapshot.
            self.session.playing = False
            self.publish_steps(None)
            self.publish_status(note="command cancelled")
            raise
        finally:
            self.commands.discard(task)

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
            self.stepping.start(self)
            self.playback = asyncio.create_task(self._play())
            self.playback.add_done_callback(lambda _: self.stepping.stop(self))
        self.publish_status()

    async def cmd_pause(self, message: dict) -> None:
        self.session.playing = False
        self.publish_status()

    async def cmd_step(self, message: dict) -> None:
        n = self._int(message, "n", 1, 1, 100_000)
        self.session.playing = False
        records, _ = await advance_in_turns(self, n)
        self.publish_steps(records)
        self.publish_status()

    async def cmd_step_back(self, message: dict) -> None:
        n = self._int(message, "n", 1, 1, 1_000_000)
        await self._seek(self.session.step - n)

    async def cmd_seek(self, message: dict) -> None:
        await self._seek(self._int(message, "step", 0, 0, 10_000_000))

    async def _seek(self, step: int) -> None:
        self.session.playing = False
        self.session.rewind(step)  # one copy; then forward in slices, taking turns with the viewers
        await advance_in_turns(self, step - self.session.step)
        self.session.seek(step)  # there already: sets the replayed steps' changes and events aside
        self.session.jump()
        self.publish_snapshot()
        self.publish_status()

    async def cmd_reset(self, message: dict) -> None:
        await self._seek(0)

    async def cmd_run_to_breakpoint(self, message: dict) -> None:
        if not self.session.breakpoints:
            raise CommandError("no_breakpoints", "set a breakpoint first")
        self.session.playing = False
        records, hit = await advance_in_turns(self, self.settings.max_requests_per_session * 64, stop_at_breakpoints=True)
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
        try:
            self.session.breakpoints = parse_breakpoints(message.get("breakpoints"), self.session)
        except BreakpointError as e:
            raise CommandError("bad_value", str(e), e.field) from None
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
        clock_target = None  # with a time ratio: where simulated time should be by now
        last = next_tick = time.monotonic()
        while self.session.playing:
            now = time.monotonic()
            elapsed, last = now - last, now
            session = self.session
            async with self.lock:
                if not session.playing:
                    break
                deadline = now + self.stepping.tick_s(self, frame_s)
                if self.unpublished and self.viewers and all(viewer.drawing_behind for viewer in self.viewers):
                    # Frames before speed: every page is drawing and the next frame's steps are
                    # ready; more would only wait, and on a small machine they would take the CPU
                    # the pages need to draw.
                    records, hit = [], None
                elif session.time_ratio is None:
                    # One tick's worth, counted by ticks rather than by the wall time between
                    # them (whose jitter left some ticks with no step: a frame lost): the tick
                    # schedule keeps the rate, and when stepping falls behind it (or past the
                    # tick's deadline) play slows down rather than sending ever larger frames.
                    owed += session.steps_per_s * max(frame_s, 1.0 / session.steps_per_s)
                    due = min(int(owed + 1e-9), max_per_tick)
                    owed = min(owed - due, 1.0)
                    records, hit = session.advance(due, stop_at_breakpoints=True, deadline=deadline, checkpoint_later=True)
                else:
                    # Carried from tick to tick, so the step that overshoots one tick's share is not
                    # counted again from the next; never more than a few ticks ahead of the clock.
                    start = session.sim.clock_s if clock_target is None else clock_target
                    clock_target = min(start + session.time_ratio * elapsed,
                                       session.sim.clock_s + session.time_ratio * CATCH_UP_TICKS * frame_s)
                    records, hit = session.advance_until(clock_target, max_per_tick, deadline, checkpoint_later=True)
                self.publish_steps(records)
                if session.checkpoint_due:
                    self.flush()  # the step's frame goes out while the checkpoint is taken
                    await asyncio.to_thread(session.take_due_checkpoint)
                if hit or session.done:
                    session.playing = False
                    self.publish_status(note=f"breakpoint: {hit.kind}" if hit else "finished")
                    break
            # Sleep until the next tick is due, not a whole tick after this one's work; ticks a
            # busy machine made late are made up, up to CATCH_UP_TICKS, and beyond that let go.
            tick_s = frame_s if session.time_ratio else max(frame_s, 1.0 / session.steps_per_s)
            next_tick += tick_s
            if next_tick < time.monotonic() - CATCH_UP_TICKS * tick_s:
                next_tick = time.monotonic()
            await asyncio.sleep(next_tick - time.monotonic())

    async def close(self) -> None:
        self.session.playing = False
        if self._viewer_status is not None:
            self._viewer_status.cancel()
        for task in [self.playback, *self.commands]:
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


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
