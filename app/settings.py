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
    # Frames per second a playing session sends; faster play puts several steps in one frame.
    max_frames_per_s: float = 30.0
    max_message_bytes: int = 64 * 1024
    idle_timeout_s: float = 15 * 60
    heartbeat_s: float = 5.0
    # Events a viewer may fall behind by before the oldest are dropped (and counted).
    event_backlog: int = 2_000
    # Step back: a snapshot every `checkpoint_interval` steps, thinned to at most `max_checkpoints`.
    checkpoint_interval: int = 64
    max_checkpoints: int = 96
    default_scenario: str = "default"
    # Host names the server answers to besides loopback ones (`serve --allowed-host NAME`).
    allowed_hosts: tuple[str, ...] = ()
    # A classroom server (`serve --public`): IP-address Hosts allowed, per-client session quotas.
    public: bool = False
    max_body_bytes: int = 256 * 1024

    @classmethod
    def from_env(cls, **overrides) -> "Settings":
        """Defaults, then SERVESCOPE_<FIELD> environment variables, then explicit overrides."""
        values = {}
        for field in dataclasses.fields(cls):
            raw = os.environ.get(f"SERVESCOPE_{field.name.upper()}")
            if raw is None:
                continue
            if isinstance(field.default, bool):
                values[field.name] = raw.strip().lower() in ("1", "true", "yes", "on")
            elif isinstance(field.default, tuple):
                values[field.name] = tuple(name.strip() for name in raw.split(",") if name.strip())
            else:
                values[field.name] = type(field.default)(raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
