"""Streaming cost of a big live session: frames per second delivered to 1, 10 and 100 viewers.

One session with 256 running requests and 16,384 KV blocks (Llama-3.1-8B on one H200, 4,000
lognormal requests arriving at 1,000/s) plays on a real uvicorn server on a free loopback port,
in its own process; the viewers are websocket clients in this process, once with
permessage-deflate (what browsers negotiate) and once without. Also measured in process: the
time to build one delta (for 1 step and for one frame's worth of steps at the play speed) and one
snapshot, and their sizes. About a minute in all.

    python benchmarks/bench_stream.py [--seconds 6] [--steps-per-s 150] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time

import httpx
from live_server import ROOT, free_port, start_server, stop_server
from websockets.asyncio.client import connect

sys.path.insert(0, str(ROOT))

from app import wire  # noqa: E402
from app.session import Session  # noqa: E402
from app.settings import Settings  # noqa: E402
from scheduler_core.scenario.scenario import Scenario  # noqa: E402

SCENARIO = {
    "name": "bench-256-running",
    "model": "llama-3.1-8b", "gpu": "h200",
    "engine": {"num_gpu_blocks": 16384, "max_num_seqs": 256, "max_num_batched_tokens": 8192},
    "workload": {"num_requests": 4000, "arrival_rate": 1000.0, "lengths": "lognormal", "prompt_len": 256,
                 "output_len": 384, "sigma": 0.5, "seed": 0},
}
# By this step all 256 slots are full and ~3,600 requests wait: the steady state to measure.
WARM_STEP = 300
VIEWER_COUNTS = (1, 10, 100)
SERVER = """
import sys, uvicorn
from app.main import create_app, uvicorn_options
from app.settings import Settings
settings = Settings()
uvicorn.run(create_app(settings), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", **uvicorn_options(settings))
"""
# State frames are binary: a 4-byte header length, then the JSON header (app/wire.py).
HEADER = re.compile(rb'"type":\s*"(\w+)".*?"seq":\s*(\d+),\s*"step":\s*(\d+)')


# -- frame build cost, in process ----------------------------------------------------------


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def frame_costs(steps_per_frame: int, samples: int = 30) -> list[tuple[str, list[float], list[int]]]:
    session = Session("bench", Scenario.from_dict(SCENARIO), Settings())
    session.advance(WARM_STEP)
    rows = {"delta, 1 step": ([], []), f"delta, {steps_per_frame} steps": ([], []), "snapshot": ([], [])}
    for _ in range(samples):
        for name, n in (("delta, 1 step", 1), (f"delta, {steps_per_frame} steps", steps_per_frame)):
            records, _ = session.advance(n)
            seconds, data = timed(lambda records=records: session.delta_frame(records).encode())
            rows[name][0].append(seconds)
            rows[name][1].append(len(data))
        seconds, data = timed(session.snapshot_frame)  # the delta just built invalidated the cache
        rows["snapshot"][0].append(seconds)
        rows["snapshot"][1].append(len(data))
    scheduler = session.sim.scheduler
    print(f"in process, steps {WARM_STEP}..{session.step}: {len(scheduler.running)} running, "
          f"{session.scenario.engine.num_gpu_blocks} blocks, KV usage {scheduler.kv_cache_manager.usage:.0%}")
    return [(name, times, sizes) for name, (times, sizes) in rows.items()]


# -- delivery to viewers, over a real server -----------------------------------------------


class ViewerStats:
    def __init__(self):
        self.frames = 0
        self.snapshots = 0
        self.bytes = 0
        self.connected = asyncio.Event()


async def view(url: str, stats: ViewerStats, start: asyncio.Event, stop_at: list[float],
               compression: str | None) -> None:
    """One viewer: counts the snapshots and deltas that arrive between `start` and `stop_at`."""
    async with connect(url, max_size=None, open_timeout=30, compression=compression) as ws:
        while True:
            timeout = (stop_at[0] - time.monotonic()) if stop_at else 30.0
            if timeout <= 0:
                return
            try:
                data = await asyncio.wait_for(ws.recv(decode=False), timeout)
            except TimeoutError:
                return
            match = HEADER.search(data[4:164])
            if not match or match[1] not in (b"snapshot", b"delta"):
                continue
            if not stats.connected.is_set():
                stats.connected.set()  # the connect snapshot is not part of the rate
                continue
            if start.is_set():
                stats.frames += 1
                stats.snapshots += match[1] == b"snapshot"
                stats.bytes += len(data)


class Presenter:
    """The control connection, read all the time (so it is never a slow viewer itself)."""

    def __init__(self, ws):
        self.ws = ws
        self.frames: asyncio.Queue[dict] = asyncio.Queue()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            # State frames are binary (app/wire.py); status, pong and error messages are text.
            await self.frames.put(wire.decode(message) if isinstance(message, bytes) else json.loads(message))

    async def command(self, message: dict, until) -> dict:
        await self.ws.send(json.dumps(message))
        for _ in range(100_000):
            frame = await asyncio.wait_for(self.frames.get(), 30)
            if until(frame):
                return frame
        raise RuntimeError(f"no answer to {message}")


async def measure(base: str, created: dict, num_viewers: int, seconds: float, steps_per_s: float,
                  compression: str | None) -> dict:
    ws_url = base.replace("http", "ws", 1) + f"/ws/{created['session_id']}"
    async with connect(ws_url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
        presenter = Presenter(ws)
        await presenter.command({"type": "seek", "step": WARM_STEP}, lambda f: f["type"] == "snapshot")
        start, stop_at = asyncio.Event(), []
        stats = [ViewerStats() for _ in range(num_viewers)]
        tasks = [asyncio.create_task(view(ws_url, s, start, stop_at, compression)) for s in stats]
        await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in stats)), 60)
        await presenter.command({"type": "play", "steps_per_s": steps_per_s},
                                lambda f: f["type"] == "status" and f["playing"])
        await asyncio.sleep(1.0)  # settle into the stream
        step_before = (await presenter.command({"type": "ping"}, lambda f: f["type"] == "pong"))["step"]
        started = time.monotonic()
        start.set()
        stop_at.append(started + seconds)
        await asyncio.wait_for(asyncio.gather(*tasks), seconds + 30)
        elapsed = time.monotonic() - started
        step_after = (await presenter.command({"type": "ping"}, lambda f: f["type"] == "pong"))["step"]
        await presenter.command({"type": "pause"}, lambda f: f["type"] == "status" and not f["playing"])
        presenter.reader.cancel()
    rates = [s.frames / elapsed for s in stats]
    frames = sum(s.frames for s in stats)
    return {
        "viewers": num_viewers,
        "steps_per_s": (step_after - step_before) / elapsed,
        "fps_median": statistics.median(rates),
        "fps_min": min(rates),
        "snapshot_share": sum(s.snapshots for s in stats) / frames if frames else 0.0,
        "mb_per_s": sum(s.bytes for s in stats) / elapsed / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="measurement window per viewer count")
    parser.add_argument("--steps-per-s", type=float, default=150.0, help="play speed")
    parser.add_argument("--smoke", action="store_true", help="one viewer, one compression, a short window: does it run")
    args = parser.parse_args()
    viewer_counts, compressions, samples = ((1,), ("deflate",), 3) if args.smoke else (VIEWER_COUNTS, ("deflate", None), 30)
    if args.smoke:
        args.seconds = min(args.seconds, 0.3)
    steps_per_frame = max(1, round(args.steps_per_s / Settings().max_frames_per_s))

    print("frame build time (Session.delta_frame / Session.snapshot_frame) and size")
    print(f"{'frame':<18}{'median ms':>10}{'max ms':>10}{'median KB':>11}{'max KB':>9}")
    for name, times, sizes in frame_costs(steps_per_frame, samples):
        print(f"{name:<18}{statistics.median(times) * 1e3:>10.2f}{max(times) * 1e3:>10.2f}"
              f"{statistics.median(sizes) / 1e3:>11.1f}{max(sizes) / 1e3:>9.1f}")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(["-c", SERVER, str(port)], port, output=None)
    try:
        response = httpx.post(f"{base}/api/sessions", json={"scenario": SCENARIO}, timeout=30)
        response.raise_for_status()
        created = response.json()
        print(f"\ndelivery over ws://127.0.0.1 (uvicorn in its own process), play at {args.steps_per_s:g} steps/s, "
              f"frames capped at {Settings().max_frames_per_s:g}/s per viewer, {args.seconds:g} s per row")
        print(f"{'compression':<13}{'viewers':>7}{'steps/s':>9}{'frames/s/viewer (median)':>26}{'(min)':>7}"
              f"{'snapshots':>11}{'JSON MB/s':>11}")
        for compression in compressions:
            for num_viewers in viewer_counts:
                row = asyncio.run(measure(base, created, num_viewers, args.seconds, args.steps_per_s, compression))
                print(f"{compression or 'none':<13}{row['viewers']:>7}{row['steps_per_s']:>9.1f}"
                      f"{row['fps_median']:>26.1f}{row['fps_min']:>7.1f}{row['snapshot_share']:>11.0%}"
                      f"{row['mb_per_s']:>11.1f}")
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
