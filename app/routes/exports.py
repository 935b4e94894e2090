"""A session's exports, up to its current step. Each needs the control token (X-Control-Token).

The metrics are the session's own report, small. The step log and the trace replay the run
from its start (it is deterministic) in a worker process (`app.workers`) whose output is
streamed as it comes: never built in memory, never on the event loop, within a budget of time
and bytes, and at most `max_concurrent_exports` at once.
"""

from __future__ import annotations

import csv
import io

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi.responses import PlainTextResponse, StreamingResponse

from ..frames import finite
from ..lab_sides import refuse_replay
from ..live import LiveSession
from ..rate_limits import limit
from ..workers import start_worker, stream
from .api import live_session

router = APIRouter(prefix="/api")

def controlled(request: Request, session_id: str, token: str) -> LiveSession:
    live = live_session(request, session_id)
    if not live.token_matches(token):
        raise HTTPException(403, "exports need the session's control token (header X-Control-Token)")
    return live


@router.get("/sessions/{session_id}/export/metrics.json")
def export_metrics_json(session_id: str, request: Request, x_control_token: str = Header(default="")) -> dict:
    session = controlled(request, session_id, x_control_token).session
    return {"scenario": finite(session.scenario.to_dict()), "step": session.step, **finite(session.sim.metrics.report())}


@router.get("/sessions/{session_id}/export/metrics.csv")
def export_metrics_csv(session_id: str, request: Request, x_control_token: str = Header(default="")) -> PlainTextResponse:
    report = finite(controlled(request, session_id, x_control_token).session.sim.metrics.report())
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["metric", "value"])
    for key, value in report.items():
        if isinstance(value, dict):
            for stat, number in value.items():
                writer.writerow([f"{key}.{stat}", number])
        else:
            writer.writerow([key, value])
    return PlainTextResponse(out.getvalue(), media_type="text/csv")


@router.get("/sessions/{session_id}/export/steps.jsonl")
async def export_steps(session_id: str, request: Request, x_control_token: str = Header(default="")) -> StreamingResponse:
    live = controlled(request, session_id, x_control_token)
    return await streamed_export(request, live, "steps", "application/x-ndjson", f"servescope-{session_id}-steps.jsonl")


@router.get("/sessions/{session_id}/export/trace.json")
async def export_trace(session_id: str, request: Request, x_control_token: str = Header(default="")) -> StreamingResponse:
    live = controlled(request, session_id, x_control_token)
    return await streamed_export(request, live, "trace", "application/json", f"servescope-{session_id}.json")


async def streamed_export(request: Request, live: LiveSession, kind: str, media_type: str, filename: str) -> StreamingResponse:
    settings = request.app.state.settings
    refuse_replay(live.session.sim, "exports of steps")
    limit(request, "export")
    job = {"kind": kind, "scenario": live.session.scenario.to_dict(), "steps": live.session.step}
    process = await start_worker(request, job)
    body = stream(process, request.app.state.export_workers, settings.export_timeout_s, settings.max_export_bytes)
    return StreamingResponse(body,
                             media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
