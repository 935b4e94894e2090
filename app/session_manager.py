"""All live sessions of the server: created within its limits and memory budget, found, deleted,
expired when idle; observers (the KV event feed) are told of each one created and deleted."""

from __future__ import annotations

import contextlib
import time
import uuid

from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario

from .checkpoints import MemoryBudget
from .live import LiveSession
from .session import Session
from .session_limits import check_session_limits
from .settings import Settings
from .stepping import SteppingShare


class SessionManager:
    """All live sessions of the server, within its limits."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.sessions: dict[str, LiveSession] = {}
        self.memory = MemoryBudget.of(settings)  # all sessions' checkpoints together
        self.stepping = SteppingShare()
        # Told of each session created and deleted (`session_created` / `session_deleted`): the KV event feed.
        self.observers: list = []

    def check_limits(self, scenario: Scenario) -> None:
        check_session_limits(scenario, self.settings)

    def create(self, scenario: Scenario, lesson: tuple[str, str] | None = None, origin: str = "",
               owner: str = "", sim=None) -> LiveSession:
        limits = self.settings
        if len(self.sessions) >= limits.max_sessions:
            raise ConfigError("session", f"the server holds at most {limits.max_sessions} sessions; delete one")
        quota = limits.max_sessions_per_client
        if quota and sum(live.owner == owner for live in self.sessions.values()) >= quota:
            sessions = f"{quota} session{'s' if quota > 1 else ''}"
            raise ConfigError("session", f"each client may hold {sessions} at once on this server; end one first")
        self.check_limits(scenario)
        session_id = uuid.uuid4().hex[:12]
        # `sim`: one built by the server rather than from the scenario (the lab's sides, `policy_file.py`).
        session = Session(session_id, scenario, limits, lesson, origin, self.memory, sim)
        self.memory.admit(session.checkpoints)  # MemoryBudgetSpent when there is no room
        self.sessions[session_id] = live = LiveSession(session, limits, owner, self.stepping)
        for observer in self.observers:
            observer.session_created(session)
        return live

    def get(self, session_id: str) -> LiveSession | None:
        return self.sessions.get(session_id)

    async def delete(self, session_id: str) -> bool:
        live = self.sessions.pop(session_id, None)
        if live is None:
            return False
        self.memory.leave(live.session.checkpoints)
        for observer in self.observers:
            observer.session_deleted(live.session)
        await live.close()
        for viewer in list(live.viewers):
            with contextlib.suppress(Exception):
                await viewer.websocket.close(code=4404, reason="session deleted")
        return True

    async def expire_idle(self) -> list[str]:
        """Sessions nobody has used for `idle_timeout_s`: no command and no message from any of
        its pages (open pages ping), so a connection that never reads or writes keeps nothing alive."""
        now = time.monotonic()
        expired = [sid for sid, live in self.sessions.items()
                   if now - live.session.last_activity > self.settings.idle_timeout_s]
        for sid in expired:
            await self.delete(sid)
        return expired

    async def close_all(self) -> None:
        for sid in list(self.sessions):
            await self.delete(sid)
