"""/metrics in Prometheus text format, with vLLM's whole metric set, for one session.

So an existing vLLM Grafana dashboard can watch a simulated engine: `?session=ID` picks the
session (default: the most recently active one; on a `--public` server, of the caller's own).
Each session's engine is its own series (`engine` label: the session id, then `.N` after its N-th
step back or reset), so a switch to another session or back in time never makes a counter fall.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..rate_limits import limit
from ..session import Session
from ..vllm_metrics import EngineSeries, engine_label, render_metrics
from .api import client_of

router = APIRouter()


def session_series(session: Session) -> EngineSeries:
    """The session's engine as one series of vLLM's metrics."""
    scenario = session.scenario
    return EngineSeries(session.sim, scenario.model, engine_label(session.session_id, session.sim),
                        {"gpu_memory_utilization": str(scenario.gpu_memory_utilization),
                         "cache_dtype": scenario.kv_cache_dtype})


@router.get("/metrics")
def prometheus_metrics(request: Request, session: str = "") -> Response:
    limit(request, "metrics")  # a scrape renders a few hundred series: milliseconds of CPU
    manager = request.app.state.manager
    if session:
        live = manager.get(session)
        if live is None:
            raise HTTPException(404, f"no session {session!r}")
    else:  # on a public server, only among the caller's own sessions
        public, caller = request.app.state.settings.public, client_of(request)
        own = [candidate for candidate in manager.sessions.values() if not public or candidate.owner == caller]
        live = max(own, key=lambda candidate: candidate.session.last_activity, default=None)
    engines = [session_series(live.session)] if live is not None else []
    return Response(render_metrics(engines), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz")
def healthz(request: Request) -> dict:
    manager = request.app.state.manager
    return {"status": "ok", "sessions": len(manager.sessions)}
