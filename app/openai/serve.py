"""`serve --openai`: the dashboard's app plus a served session, started with the app and shown
on the dashboard like any other (`/s/ID/view`), whose engine takes its requests from the routes
of `routes.py`. Nobody holds its control token: the wall clock drives it, not a presenter."""

from __future__ import annotations

import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI

from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.live_source import LiveRequestSource, ServedSimulation
from scheduler_core.sim.metrics import SLO
from scheduler_core.workload.standin_eos import StandInEOS
from scheduler_core.workload.standin_tokenizer import StandInTokenizer

from ..session import Session
from . import class_requests, routes
from .engine import ServedEngine, ServeLimits
from .served_frames import ServedLiveSession


@dataclass
class ServeOptions:
    """What the operator chose on the command line."""

    scenario: Scenario
    model_name: str
    trace_path: Path | None = None  # each request appended as a JSONL line, for a headless replay
    tokenizer: object = None  # the model's own (`--tokenizer FILE`), else the stand-in
    limits: ServeLimits | None = None
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])  # the dashboard shows it at /s/ID/view


@dataclass
class Served:
    engine: ServedEngine
    model_name: str
    tokenizer: object
    output_tokenizer: StandInTokenizer
    vllm_version: str
    created: int


def start_served(app: FastAPI, options: ServeOptions) -> Served:
    """The served session, registered with the app's sessions (and their memory budget), and its clock started."""
    settings, manager, scenario = app.state.settings, app.state.manager, options.scenario
    limits = options.limits or (ServeLimits.public() if settings.public else ServeLimits())
    # vLLM's API server, simulated as for any served run (sim/api_server.py): the clients' TTFT and ITL are
    # what `vllm serve` would give them, its tokenization and streaming included.
    sim = ServedSimulation(scenario.engine, scenario.cost_model(), SLO(scenario.slo_ttft_s, scenario.slo_tpot_s),
                           scenario.api_server())
    session = Session(options.session_id, scenario, settings, budget=manager.memory, sim=sim)
    manager.memory.admit(session.checkpoints)
    live = ServedLiveSession(session, settings, owner="served", stepping=manager.stepping)
    manager.sessions[session.session_id] = live
    if feed := getattr(app.state, "kv_event_feed", None):
        # --kv-events-config: the router in front of this server sees the served engine's blocks, and
        # only them (a dashboard session opened later does not take the feed over).
        manager.observers.remove(feed)
        feed.follow(session)
    source = LiveRequestSource(sim, settings.max_requests_per_session, limits.max_prompt_tokens)
    trace_file = options.trace_path.open("w", encoding="utf-8") if options.trace_path else None
    engine = ServedEngine(live, source, StandInEOS(scenario.workload), limits, trace_file)
    engine.start()
    stand_in = StandInTokenizer()
    return Served(engine, options.model_name, options.tokenizer or stand_in, stand_in, scenario.vllm_version, int(time.time()))


def attach_openai(app: FastAPI, options: ServeOptions) -> FastAPI:
    """Add the OpenAI routes to `app` and the served session to its lifespan."""
    app.include_router(routes.router)
    app.include_router(class_requests.router)  # the dashboard's "send a request" form
    settings = app.state.settings
    app.state.class_desk = class_requests.ClassDesk(settings.show_class_prompts, settings.max_requests_per_session)
    # This server's /metrics is the served session's: ahead of the dashboard's own route.
    app.add_api_route("/metrics", routes.served_metrics, methods=["GET"], include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with inner(app) as state:
            app.state.served = start_served(app, options)
            try:
                yield state
            finally:
                await app.state.served.engine.close()

    app.router.lifespan_context = lifespan
    return app
