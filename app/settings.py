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
    # Steps one session may play: with the thinned history, its memory is bounded by this budget.
    max_steps_per_session: int = 1_000_000
    # Chart points a session keeps (and a snapshot sends): beyond it, every other one is dropped.
    max_chart_points: int = 3_000
    # Playback ticks per second (each one delta); faster play puts several steps in one tick, and
    # a viewer that draws slower gets the ticks merged. Above a 60 Hz display's rate, so a page
    # fills its window of unacknowledged frames and draws one it holds when a tick comes late
    # (at 60, one late tick in a hundred showed as a 50 ms gap between drawn frames).
    max_frames_per_s: float = 75.0
    max_message_bytes: int = 64 * 1024
    idle_timeout_s: float = 15 * 60
    heartbeat_s: float = 5.0
    # Events a viewer may fall behind by before the oldest are dropped (and counted).
    event_backlog: int = 2_000
    # Step back: a snapshot every `checkpoint_interval` steps, thinned to at most `max_checkpoints`.
    checkpoint_interval: int = 64
    max_checkpoints: int = 96
    # ... and within a budget of bytes (app.checkpoints, measured as each is taken): each session's
    # checkpoints at most `max_session_bytes`, all sessions' together at most `max_server_bytes`
    # (each then gets an equal share); a session whose first checkpoint finds no room is a 503.
    # A session at the largest size the web accepts takes about 12 MB a checkpoint.
    max_session_bytes: int = 160 * 2**20
    max_server_bytes: int = 1024 * 2**20
    default_scenario: str = "default"
    # Host names the server answers to besides loopback ones (`serve --allowed-host NAME`).
    allowed_hosts: tuple[str, ...] = ()
    # A classroom server (`serve --public`): IP-address Hosts allowed, per-client session quotas.
    public: bool = False
    # `serve --openai`: the class form's prompts shown on every page's inspector, the projector's
    # included (SERVESCOPE_SHOW_CLASS_PROMPTS=1: the lecturer's opt-in; off, no page can show them).
    show_class_prompts: bool = False
    # Sessions one client address may hold at once (0: no limit).
    max_sessions_per_client: int = 0
    # Websockets a session takes, and one client address may hold across the server (0: no limit);
    # each can hold a snapshot (megabytes for a large pool) in its send buffer until it reads.
    max_viewers_per_session: int = 500
    max_viewers_per_client: int = 0
    # A viewer whose frames could not be sent for this long is dropped.
    viewer_stall_s: float = 10.0
    # Large frames (over 64 KiB: snapshots) handed to viewers' sockets and not yet read, all viewers
    # together (app.viewer_bytes): past it, viewers not reading theirs for a second are dropped.
    max_viewer_send_bytes: int = 64 * 2**20
    max_body_bytes: int = 256 * 1024
    # Step log and trace exports, fleet runs and sweeps: computed by worker processes (app.workers),
    # a few at a time, each within these budgets.
    max_concurrent_exports: int = 2
    export_timeout_s: float = 120.0
    max_export_bytes: int = 256 * 2**20
    # The "why" of a step not answered before: replayed from its checkpoint by a worker of its own,
    # one at a time (app.why), within this long (a big engine's checkpoint interval can be seconds).
    why_timeout_s: float = 20.0
    # Endpoints that compute (validate, why, session creation, fleet, sweep, exports; app.rate_limits):
    # requests a second each client may make of each kind, and the whole server, with a burst
    # on top. A request at the largest size a session may have costs half a burst. Generous on a
    # loopback server (one presenter); a classroom's are in PUBLIC_DEFAULTS.
    compute_per_client_per_s: float = 10.0
    compute_per_server_per_s: float = 40.0
    compute_burst: float = 50.0

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
        if overrides.get("public"):  # a classroom: quotas and a shorter idle life, unless set otherwise
            values = {**PUBLIC_DEFAULTS, **values}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


# What `serve --public` changes: room for a class, a quota per student, idle sessions gone sooner.
PUBLIC_DEFAULTS = {"max_sessions": 128, "max_sessions_per_client": 3, "idle_timeout_s": 600.0,
                   "compute_per_client_per_s": 2.0, "compute_per_server_per_s": 8.0, "compute_burst": 10.0,
                   "max_viewers_per_client": 16}
