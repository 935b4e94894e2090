"""The served replicas as the fleet page shows them, live: `GET /api/served/replicas`.

Each replica's queues, KV usage and a small KV grid (the simulated fleets' own cells,
`fleet_timeline.kv_cells`), its requests and its address. The engine is read as it is now, which
is at most the one step it has taken and not yet released ahead of what its clients have been
sent. One picture serves every page that asks within `FRESH_S` (a lecture hall's pages cost the
server one), and each page's asks count against the scrapes' rate limit, as /metrics does.

The KV grids cost what the pools hold (16 ms for a session's largest, 131,072 blocks; 0.2 ms for
896), all on the event loop that paces the streams: so the loop is let go between replicas, and a
picture is not taken again until `MAX_SHARE` of the time since has gone to taking it.
"""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, HTTPException, Request

from scheduler_core.lessons.fleet_timeline import kv_cells

from ..rate_limits import limit

router = APIRouter()
FRESH_S = 0.25
MAX_SHARE = 0.05
NUM_CELLS = 160


def replica_picture(replica: int, served, port: int | None) -> dict:
    engine = served.engine
    sim, scheduler = engine.sim, engine.sim.scheduler
    session = engine.live.session
    kv = sim.kv_view()
    return {
        "replica": replica, "port": port, "session_id": session.session_id, "view_url": f"/s/{session.session_id}/view",
        "running": len(scheduler.running), "waiting": len(scheduler.waiting) + sim.num_pending,
        "finished": sim.metrics.num_finished, "requests": len(engine.source.requests), "unfinished": len(engine.streams),
        "kv": round(kv.usage, 4), "num_blocks": sim.config.num_gpu_blocks,
        "grid": kv_cells(sim, NUM_CELLS), "step": session.step, "clock_s": round(engine.now_s(), 3),
    }


class FleetPicture:
    """The last picture taken of the fleet, and when the next may be."""

    def __init__(self):
        self.next_s = 0.0
        self.picture: dict = {}
        self.lock = asyncio.Lock()  # pages asking while it is taken wait for it

    async def of(self, fleet) -> dict:
        async with self.lock:
            if time.monotonic() < self.next_s:
                return self.picture
            ports, replicas, cost_s = fleet.ports or [None] * len(fleet.served), [], 0.0
            for replica, served in enumerate(fleet.served):
                start = time.perf_counter()
                replicas.append(replica_picture(replica, served, ports[replica]))
                cost_s += time.perf_counter() - start
                await asyncio.sleep(0)  # the streams are paced between one replica and the next
            self.picture = {"model": fleet.served[0].model_name, "replicas": replicas}
            self.next_s = time.monotonic() + max(FRESH_S, cost_s / MAX_SHARE)
            return self.picture


@router.get("/api/served/replicas")
async def served_replicas(request: Request) -> dict:
    """The served replicas now (read only: nothing is made)."""
    limit(request, "metrics")
    fleet = getattr(request.app.state, "served_fleet", None)
    if fleet is None:
        raise HTTPException(503, "the served replicas are starting")
    return await request.app.state.served_fleet_picture.of(fleet)
