"""The served replicas as the fleet page shows them, live: `GET /api/served/replicas`.

Each replica's queues, KV usage and a small KV grid (the simulated fleets' own cells,
`fleet_timeline.kv_cells`), its requests and its address. The engine is read as it is now, which
is at most the one step it has taken and not yet released ahead of what its clients have been
sent. One picture serves every page that asks within `FRESH_S` (a lecture hall's pages cost the
server one), and each page's asks count against the scrapes' rate limit, as /metrics does.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, HTTPException, Request

from scheduler_core.lessons.fleet_timeline import kv_cells

from ..rate_limits import limit

router = APIRouter()
FRESH_S = 0.25
NUM_CELLS = 160


def replica_picture(replica: int, served, port: int | None) -> dict:
    engine = served.engine
    sim, scheduler = engine.sim, engine.sim.scheduler
    session = engine.live.session
    return {
        "replica": replica, "port": port, "session_id": session.session_id, "view_url": f"/s/{session.session_id}/view",
        "running": len(scheduler.running), "waiting": len(scheduler.waiting) + sim.num_pending,
        "finished": sim.metrics.num_finished, "requests": len(engine.source.requests), "unfinished": len(engine.streams),
        "kv": round(sim.scheduler.kv_cache_manager.usage, 4), "num_blocks": sim.config.num_gpu_blocks,
        "grid": kv_cells(sim, NUM_CELLS), "step": session.step, "clock_s": round(engine.now_s(), 3),
    }


class FleetPicture:
    """The last picture taken of the fleet, and when."""

    def __init__(self):
        self.taken_at = -FRESH_S
        self.picture: dict = {}

    def of(self, fleet) -> dict:
        now = time.monotonic()
        if now - self.taken_at >= FRESH_S:
            ports = fleet.ports or [None] * len(fleet.served)
            self.picture = {"model": fleet.served[0].model_name,
                            "replicas": [replica_picture(i, served, ports[i]) for i, served in enumerate(fleet.served)]}
            self.taken_at = now
        return self.picture


@router.get("/api/served/replicas")
def served_replicas(request: Request) -> dict:
    """The served replicas now (read only: nothing is made)."""
    limit(request, "metrics")
    fleet = getattr(request.app.state, "served_fleet", None)
    if fleet is None:
        raise HTTPException(503, "the served replicas are starting")
    state = request.app.state
    if not hasattr(state, "served_fleet_picture"):
        state.served_fleet_picture = FleetPicture()
    return state.served_fleet_picture.of(fleet)
