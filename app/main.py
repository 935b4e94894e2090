"""`create_app()`: the FastAPI application, its lifespan state and its routes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from contextlib import asynccontextmanager
from dataclasses import fields
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from scheduler_core.engine.config import EngineConfig
from scheduler_core.errors import ConfigError
from scheduler_core.workload.workload import WorkloadConfig

from .error_responses import printable, validation_error
from .guards import HostPolicy, RequestGuard
from .kv_event_feed import KVEventFeed
from .kv_events_publisher import ZmqEventPublisher
from .log_redaction import log_config
from .rate_limits import RateLimits
from .routes import api, exports, fleet, metrics, pages, vllm_line, ws
from .session_manager import SessionManager
from .settings import Settings
from .viewer_bytes import ViewerBytes
from .why import ReasonsCache
from .workers import WorkerSlots, stop_worker

ROOT = Path(__file__).resolve().parent.parent
STATIC_DIR = ROOT / "static"
TEMPLATES_DIR = ROOT / "templates"


ENGINE_FIELDS = {f.name for f in fields(EngineConfig)}
WORKLOAD_FIELDS = {f.name for f in fields(WorkloadConfig)}


def config_error_location(field: str) -> list[str]:
    path = field.split(".")
    if path[0] in ENGINE_FIELDS:
        return ["body", "scenario", "engine", *path]
    if path[0] in WORKLOAD_FIELDS:
        return ["body", "scenario", "workload", *path]
    return path


def uvicorn_options(settings: Settings) -> dict:
    """How uvicorn serves the app, for `servescope serve` and for every benchmark and test that
    stands a real server up: the same websocket limits and the same compression."""
    # No per-message deflate: it compresses every frame again for every viewer on the one event
    # loop, which at a lecture hall's hundred viewers costs more than the simulation.
    return {"ws_max_size": 16 * settings.max_message_bytes, "ws_per_message_deflate": False,
            # SIGTERM: connections get half a second to close before their tasks are cancelled.
            "timeout_graceful_shutdown": 0.5,
            # Access lines and errors with anything token-shaped redacted (log_redaction.py).
            "log_config": log_config()}


def create_app(settings: Settings | None = None, kv_event_publisher: ZmqEventPublisher | None = None) -> FastAPI:
    """The app; with `kv_event_publisher` (opened by `serve --kv-events-config`), the newest
    session's KV cache events go out on it, and it is closed when the server stops."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.manager = SessionManager(settings)
        if kv_event_publisher is not None:
            app.state.kv_event_feed = KVEventFeed(kv_event_publisher)
            app.state.manager.observers.append(app.state.kv_event_feed)

        async def expire_idle_sessions():
            while True:
                await asyncio.sleep(min(60.0, settings.idle_timeout_s / 4))
                await app.state.manager.expire_idle()

        janitor = asyncio.create_task(expire_idle_sessions())
        # The libraries' objects, imported once and never freed, are most of the heap: moved out
        # of the collector's way, a full collection walks the sessions' objects alone (tens of
        # milliseconds of stalled play less each time).
        gc.freeze()
        yield
        janitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await janitor
        await app.state.manager.close_all()
        if kv_event_publisher is not None:
            kv_event_publisher.close()
        for workers in (app.state.export_workers, app.state.why_workers):
            for process in list(workers):
                await stop_worker(process, workers)

    app = FastAPI(title="servescope", description="A live, step-controlled simulation of a vLLM-style serving engine.",
                  version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.state.lesson_cache = {}
    app.state.fleet_lesson_cache = {}  # (lesson, arm) -> its run and story: fixed, deterministic, a few
    app.state.export_workers = WorkerSlots(settings.max_concurrent_exports)
    app.state.why_workers = WorkerSlots(1, "steps' reasons are being replayed", retry_after_s=2,
                                        within=app.state.export_workers)
    app.state.reasons = ReasonsCache()
    app.state.viewer_bytes = ViewerBytes(settings.max_viewer_send_bytes)
    app.state.rate_limits = RateLimits(settings)
    app.state.templates = Jinja2Templates(directory=TEMPLATES_DIR)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for module in (api, exports, ws, metrics, pages, fleet, vllm_line):
        app.include_router(module.router)

    app.add_middleware(RequestGuard, policy=HostPolicy(settings.allowed_hosts, allow_ip_literals=settings.public),
                       max_body_bytes=settings.max_body_bytes)

    @app.exception_handler(ConfigError)
    async def config_error(request: Request, error: ConfigError) -> JSONResponse:
        """A bad setting deep in the core is still a 422 that names the field, at its place in the body."""
        detail = [{"loc": config_error_location(printable(error.field)), "msg": printable(error.reason)}]
        return JSONResponse(status_code=422, content={"detail": detail})

    app.add_exception_handler(RequestValidationError, validation_error)

    return app
