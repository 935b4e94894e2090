"""Server limits: everything a session or a viewer can consume is bounded here."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    max_sessions: int = 64
    max_requests_per_session: int = 20_000
    max_blocks_per_session: int = 131_072
    max_steps_per_s: float = 2_000.0
    # Playback ticks per second (each one delta); faster play puts several steps in one tick, and
    # a viewer that draws slower gets the ticks merged.
    max_frames_per_s: float = 60.0
    max_message_bytes: int = 64 * 1024
    idle_timeout_s: float = 15 * 60
    heartbeat_s: float = 5.0
    # Events a viewer may fall behind by before the oldest are dropped (and counted).
    event_backlog: int = 2_000
    # Step back: a snapshot every `checkpoint_interval` steps, thinned to at most `max_checkpoints`.
    checkpoint_interval: int = 64
    max_checkpoints: int = 96
    default_scenario: str = "default"

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        """Defaults, then SERVESCOPE_<FIELD> environment variables, then explicit overrides."""
        values = {}
        for field in dataclasses.fields(cls):
            raw = os.environ.get(f"SERVESCOPE_{field.name.upper()}")
            if raw is not None:
                values[field.name] = type(field.default)(raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
