"""`serve --openai`: the dashboard's app plus a served session, started with the app and shown
on the dashboard like any other (`/s/ID/view`), whose engine takes its requests from the routes
of `routes.py`. Nobody holds its control token: the wall clock drives it, not a presenter.
With `--replicas N`, N such sessions, each on a port of its own (`replicas.py`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI

from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.live_source import LiveRequestSource, ServedSimulation
from scheduler_core.sim.metrics import SLO
from scheduler_core.workload.standin_eos import StandInEOS
from scheduler_core.workload.standin_tokenizer import StandInTokenizer

from ..kv_event_feed import KVEventFeed
from ..session import Session
from . import class_requests, fleet_view, routes
from .engine import ServedEngine, ServeLimits
from .fleet_budget import FleetBudget
from .replicas import ServedFleet, dispatch_middleware, replica_app
from .served_frames import ServedLiveSession


@dataclass
class ServeOptions:
    """What the operator chose on the command line."""

    scenario: Scenario
    model_name: str
    trace_path: Path | None = None  # each request appended as a JSONL line, for a headless replay
    tokenizer: object = None  # the model's own (`--tokenizer FILE`), else the stand-in
    limits: ServeLimits | None = None
    replicas: int = 1  # engines served, each its own session on its own port (`--replicas`)
    session_ids: tuple[str, ...] = ()  # one per replica; the dashboard shows replica i at /s/ID/view
    # Replicas 1.. publish their KV events on these (replica 0 on the app's own), opened by the CLI.
    kv_event_publishers: tuple = ()

    def __post_init__(self) -> None:
        if not self.session_ids:
            self.session_ids = tuple(uuid.uuid4().hex[:12] for _ in range(self.replicas))

    @property
    def session_id(self) -> str:
        return self.session_ids[0]

    def trace_path_of(self, replica: int) -> Path | None:
        """Replica `replica`'s trace: `--save-trace` itself for one replica, else `NAME.i.jsonl` beside it."""
        path = self.trace_path
        if path is None or self.replicas == 1:
            return path
        return path.with_name(f"{path.stem}.{replica}{path.suffix}")


@dataclass
class Served:
    engine: ServedEngine
    model_name: str
    tokenizer: object
    output_tokenizer: StandInTokenizer
    vllm_version: str
    created: int


def served_limits(app: FastAPI, options: ServeOptions) -> ServeLimits:
    return options.limits or (ServeLimits.public() if app.state.settings.public else ServeLimits())


def kv_event_feed_of(app: FastAPI, options: ServeOptions, replica: int) -> KVEventFeed | None:
    """Replica 0 publishes on the app's feed (`--kv-events-config`), replica i on a feed of its own
    marked data_parallel_rank i, over the publisher the CLI opened for it."""
    if replica == 0:
        return getattr(app.state, "kv_event_feed", None)
    if options.kv_event_publishers:
        return KVEventFeed(options.kv_event_publishers[replica - 1], data_parallel_rank=replica)
    return None


def start_served(app: FastAPI, options: ServeOptions, replica: int = 0, fleet: FleetBudget | None = None) -> Served:
    """Replica `replica`'s served session, registered with the app's sessions (and their memory
    budget), and its clock started; `fleet`: the budgets it shares with the other replicas."""
    settings, manager, scenario = app.state.settings, app.state.manager, options.scenario
    limits = served_limits(app, options)
    # vLLM's API server, simulated as for any served run (sim/api_server.py): the clients' TTFT and ITL are
    # what `vllm serve` would give them, its tokenization and streaming included.
    sim = ServedSimulation(scenario.engine, scenario.cost_model(), SLO(scenario.slo_ttft_s, scenario.slo_tpot_s),
                           scenario.api_server())
    session = Session(options.session_ids[replica], scenario, settings, budget=manager.memory, sim=sim)
    manager.memory.admit(session.checkpoints)  # MemoryBudgetSpent: the N sessions do not fit
    live = ServedLiveSession(session, settings, owner="served", stepping=manager.stepping)
    manager.sessions[session.session_id] = live
    if feed := kv_event_feed_of(app, options, replica):
        # --kv-events-config: the router in front of this server sees the served engine's blocks, and
        # only them (a dashboard session opened later does not take the feed over).
        if feed in manager.observers:
            manager.observers.remove(feed)
        feed.follow(session)
    source = LiveRequestSource(sim, settings.max_requests_per_session, limits.max_prompt_tokens)
    trace_path = options.trace_path_of(replica)
    trace_file = trace_path.open("w", encoding="utf-8") if trace_path else None
    engine = ServedEngine(live, source, StandInEOS(scenario.workload), limits, trace_file, fleet)
    engine.start()
    stand_in = StandInTokenizer()
    return Served(engine, options.model_name, options.tokenizer or stand_in, stand_in, scenario.vllm_version, int(time.time()))


def attach_openai(app: FastAPI, options: ServeOptions, ports: Sequence[int] = ()) -> FastAPI:
    """Add the OpenAI routes to `app` and the served sessions to its lifespan: replica i answers on
    `ports[i]` (the sockets the server listens on; the first is the app's own, replica 0's)."""
    if options.replicas > 1 and len(ports) != options.replicas:
        raise ValueError(f"{options.replicas} replicas need as many ports, got {list(ports)}")
    app.include_router(routes.router)
    app.include_router(class_requests.router)  # the dashboard's "send a request" form
    app.include_router(fleet_view.router)
    settings = app.state.settings
    app.state.class_desk = class_requests.ClassDesk(settings.show_class_prompts, settings.max_requests_per_session)
    # This server's /metrics is the served session's: ahead of the dashboard's own route.
    app.add_api_route("/metrics", routes.served_metrics, methods=["GET"], include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())
    app.user_middleware.append(dispatch_middleware(app))  # innermost: after the guard has checked Host and Origin
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with inner(app) as state:
            fleet = FleetBudget(served_limits(app, options))
            served: list[Served] = []
            try:
                for replica in range(options.replicas):
                    served.append(start_served(app, options, replica, fleet))
                app.state.served = served[0]
                app.state.served_fleet = ServedFleet(served, list(ports))
                app.state.served_fleet_picture = fleet_view.FleetPicture()
                app.state.served_fleet.apps = [app, *(replica_app(app, s) for s in served[1:])]
                yield state
            finally:
                for replica in served:
                    await replica.engine.close()
        for publisher in options.kv_event_publishers:
            publisher.close()

    app.router.lifespan_context = lifespan
    return app
