"""A fleet's run as frames for the fleet view: every replica's queues, KV usage and a small KV grid,
sampled over simulated time, with the router's and the link's events.

Frames are taken every `interval` of simulated time; when there would be more than `max_frames`,
every other frame is dropped and the interval doubles, so any run fits the same budget. A lesson's
run also pins a frame at each of its story moments.
"""

from __future__ import annotations

from ..cluster.cluster import Cluster
from ..cluster.fleet_metrics import fleet_report
from ..cluster.replica import Replica
from ..sim.simulation import Simulation
from ..utils import cdiv
from .fleet_moments import FleetMoments

# A small grid's cells: free, cached but evictable, and in use by tenths ("1" to "9", "#" full).
FREE, CACHED = ".", "c"


def kv_cells(sim: Simulation, num_cells: int) -> str:
    """An engine's KV blocks folded into at most `num_cells` cells, one character each (a fleet's
    replica here, a served replica's in `app/openai/fleet_view.py`)."""
    kv = sim.kv_view()
    if not kv.has_block_state:  # the contiguous allocator: only its usage to show
        used = round(kv.usage * num_cells)
        return "#" * used + FREE * (num_cells - used)
    ref_cnt, cached = kv.ref_counts(), kv.cached_flags()
    total = len(ref_cnt) - 1  # block 0 is the null block
    per_cell = cdiv(total, num_cells)
    cells = []
    for start in range(1, total + 1, per_cell):
        blocks = range(start, min(start + per_cell, total + 1))
        used = sum(1 for b in blocks if ref_cnt[b])
        if used:
            tenths = min(9, max(1, used * 10 // len(blocks)))
            cells.append("#" if used == len(blocks) else str(tenths))
        else:
            cells.append(CACHED if any(cached[b] for b in blocks) else FREE)
    return "".join(cells)


def replica_frame(replica: Replica, num_cells: int) -> dict:
    scheduler = replica.sim.scheduler
    return {
        "waiting": len(scheduler.waiting) + replica.sim.num_pending + len(replica.awaiting_blocks),
        "running": len(scheduler.running),
        "kv": round(replica.kv_usage, 4),
        "finished": replica.sim.metrics.num_finished,
        "grid": kv_cells(replica.sim, num_cells),
    }


class FrameSampler:
    """The fleet's state every `interval_s` of simulated time, at most `max_frames` of them (past
    that, every other frame goes and the interval doubles), plus frames pinned at story moments,
    which are never dropped: a lesson's beat shows the fleet at its very instant."""

    def __init__(self, cluster: Cluster, max_frames: int, num_cells: int, interval_s: float):
        self.cluster = cluster
        self.max_frames = max_frames
        self.num_cells = num_cells
        self.interval_s = interval_s
        self.next_s = 0.0
        self.regular: list[dict] = []
        self.pinned: dict[str, dict] = {}  # moment kind -> its frame (a new extreme replaces the old)

    def frame(self, time_s: float) -> dict:
        return {"t": time_s, "replicas": [replica_frame(r, self.num_cells) for r in self.cluster.replicas]}

    def catch_up(self, time_s: float) -> None:
        """Take the regular frames due before `time_s`, when the next thing happens: a frame at
        time T shows the fleet after everything up to T, as the event list does."""
        while time_s > self.next_s:
            self.regular.append(self.frame(self.next_s))
            self.next_s += self.interval_s
            if len(self.regular) > self.max_frames:
                self.regular = self.regular[::2]
                self.interval_s *= 2
                self.next_s = self.regular[-1]["t"] + self.interval_s

    def pin(self, kind: str, time_s: float) -> None:
        self.pinned[kind] = {**self.frame(time_s), "moment": kind}

    def frames(self) -> list[dict]:
        """Every frame in time order, then the last instant; at the same time, a pinned frame (just
        after its moment) before a regular one (after everything at that time)."""
        return sorted(self.regular + list(self.pinned.values()), key=lambda f: (f["t"], "moment" not in f)) + \
            [self.frame(self.cluster.clock_s)]


def fleet_timeline(cluster: Cluster, max_frames: int = 240, num_cells: int = 160, max_events: int = 2000,
                   interval_s: float = 0.05, moments: FleetMoments | None = None) -> dict:
    """Run the fleet to the end; its frames, its first `max_events` routing and transfer events, and
    its report. With `moments` watching, a frame is pinned at each story moment it finds."""
    sampler = FrameSampler(cluster, max_frames, num_cells, interval_s)
    events = []
    num_events = 0
    while not cluster.done:
        sampler.catch_up(cluster.next_time_s)
        for event in cluster.step():
            if moments is not None:
                for kind in moments.observe(event):
                    sampler.pin(kind, event.time_s)
            if event.kind != "step":
                num_events += 1
                if len(events) < max_events:
                    events.append({"t": event.time_s, "kind": event.kind, "replica": event.replica,
                                   "request": event.request_id, "detail": event.detail})
    return {
        "replicas": [{"name": r.name, "role": r.role, "num_blocks": r.sim.config.num_gpu_blocks} for r in cluster.replicas],
        "frames": sampler.frames(),
        "events": events,
        "num_events": num_events,
        "report": fleet_report(cluster, wall_s=0.0),
    }
