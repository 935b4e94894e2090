"""`serve --openai --replicas N`: N served engines, a fleet of stand-ins a real router can be put
in front of.

Each replica is a whole vLLM-compatible server on a port of its own (the first port's, plus i):
its own ServedSimulation, session (`/s/ID/view` on the dashboard), wall clock, quotas, `/metrics`
(its own `engine` label: its session's id) and KV event publisher. That is the shape llm-d and
other routers expect: one address per engine, each scraped and routed to on its own. The
dashboard stays on the first port, which is replica 0's server; there vLLM's own header
`X-data-parallel-rank: i` (what a router sends `vllm serve --data-parallel-size N`'s API server
to pin a request to a rank) sends a request of the served routes to replica i instead, so one
port with a header reaches the whole fleet too.

All the replicas run in one process, one uvicorn server listening on the N sockets: the port a
request came in on (`scope["server"]`) says whose it is (`ReplicaDispatch`). Host, Origin and
body size are checked first, by the app's guard, the same for every port. What bounds the
machine is counted for the whole fleet (`fleet_budget.py`).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.middleware import Middleware

from scheduler_core.bounds import Bound
from scheduler_core.errors import ConfigError

from . import routes
from .errors import OpenAIError

# Replicas one server serves: each is a session of the dashboard and a share of one event loop.
MAX_REPLICAS = 16
REPLICAS = Bound(1, MAX_REPLICAS)
# vLLM's header (its OpenAI server's `_get_data_parallel_rank`, 0.11.1 onwards).
RANK_HEADER = b"x-data-parallel-rank"
# The routes every replica's port answers; the dashboard's pages and API are the first port's alone.
SERVED_PATHS = frozenset({"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/version", "/metrics"})


def bind_replica_sockets(host: str, port: int, num_replicas: int) -> list[socket.socket]:
    """Listening sockets on `port`, `port + 1`, ... (each on a port of the system's choosing if
    `port` is 0); ConfigError naming --port when one cannot be had."""
    if port and port + num_replicas - 1 > 65_535:
        raise ConfigError("port", f"{num_replicas} replicas from port {port} pass port 65535")
    sockets: list[socket.socket] = []
    for replica in range(num_replicas):
        replica_port = port + replica if port else 0
        try:
            address = socket.getaddrinfo(host, replica_port, type=socket.SOCK_STREAM)[0]
            sock = socket.socket(address[0], socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address[4])
            sock.listen(2048)
        except OSError as e:
            for opened in sockets:
                opened.close()
            raise ConfigError("port", f"replica {replica} cannot listen on {host}:{replica_port}: {e.strerror or e}") from None
    return sockets


def replica_app(main: FastAPI, served) -> FastAPI:
    """Replica i's server: the served routes over its own engine, with the main app's state (its
    settings, limits and sessions) beside it."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.include_router(routes.router)
    app.add_api_route("/metrics", routes.served_metrics, methods=["GET"], include_in_schema=False)
    for name, value in main.state._state.items():  # everything the routes may read, `served` replaced below
        setattr(app.state, name, value)
    app.state.served = served
    return app


@dataclass
class ServedFleet:
    """The replicas being served: each one's `Served`, port and server (replica 0's is the main app)."""

    served: list
    ports: list[int]
    apps: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replica_of_port = {port: replica for replica, port in enumerate(self.ports)}


class ReplicaDispatch:
    """ASGI middleware, inside the app's guard: a request to replica i's port goes to replica
    i's server; on the first port, a served route with `X-data-parallel-rank` goes to that
    rank's. `holder.served_fleet` is read per request (it is made by the lifespan)."""

    def __init__(self, app, holder):
        self.app = app
        self.holder = holder

    async def __call__(self, scope, receive, send) -> None:
        fleet: ServedFleet | None = getattr(self.holder, "served_fleet", None)
        if scope["type"] not in ("http", "websocket") or fleet is None or len(fleet.served) == 1:
            return await self.app(scope, receive, send)
        replica = fleet.replica_of_port.get((scope.get("server") or (None, None))[1], 0)
        served_route = scope["type"] == "http" and scope["path"] in SERVED_PATHS
        if replica == 0 and served_route:
            try:
                replica = rank_of(scope, len(fleet.served))
            except OpenAIError as e:
                return await e.response()(scope, receive, send)
        if replica == 0:
            return await self.app(scope, receive, send)
        if not served_route:
            # The dashboard lives on the first port only: a replica's port is an engine's server.
            if scope["type"] == "websocket":
                return await send({"type": "websocket.close", "code": 4404})
            response = JSONResponse({"detail": f"replica {replica}'s port serves only {', '.join(sorted(SERVED_PATHS))}; "
                                               f"the dashboard is on port {fleet.ports[0]}"}, status_code=404)
            return await response(scope, receive, send)
        return await fleet.apps[replica](scope, receive, send)


def rank_of(scope, num_replicas: int) -> int:
    """The replica `X-data-parallel-rank` names, as vLLM reads it: absent or not an integer, none
    (replica 0 then, the first port's own); out of range, vLLM's 400."""
    for name, value in scope["headers"]:
        if name == RANK_HEADER:
            try:
                rank = int(value)
            except ValueError:
                return 0
            if not 0 <= rank < num_replicas:
                raise OpenAIError(400, f"data_parallel_rank {rank} is out of range [0, {num_replicas}).",
                                  "X-data-parallel-rank")
            return rank
    return 0


def dispatch_middleware(app: FastAPI) -> Middleware:
    """The dispatch, to go innermost of the app's middleware (after its guard)."""
    return Middleware(ReplicaDispatch, holder=app.state)
