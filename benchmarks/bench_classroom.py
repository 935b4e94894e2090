"""A class on one server: 30 students each playing their own session at 20 steps/s, and a
lecturer's session at 20 steps/s watched by 100 viewers, against `servescope serve` (a real
uvicorn, its own process) on a free loopback port. Every client is a websocket in this process;
each counts the state frames (snapshots and deltas) it receives and pings every half second.

Target (issue 9): every viewer at >= 20 frames/s, ping p99 <= 250 ms. Bounded: about 40 s.

    python benchmarks/bench_classroom.py [--students 30] [--viewers 100] [--seconds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections import deque

import httpx
from live_server import cpu_seconds, free_port, percentile, start_server, stop_server
from websockets.asyncio.client import connect

STEPS_PER_S = 20
PING_EVERY_S = 0.5
TARGET_FRAMES_PER_S = 20
TARGET_PING_P99_MS = 250


class Client:
    """One websocket: counts state frames and ping round trips inside the measured window."""

    def __init__(self, url: str, token: str = ""):
        self.url, self.token = url, token
        self.frames = 0
        self.first_frame_at = self.last_frame_at = None
        self.pings_ms: list[float] = []
        self.ready = asyncio.Event()

    async def run(self, window: dict, stop: asyncio.Event) -> None:
        async with connect(self.url, max_size=None, open_timeout=60) as ws:
            self.ws = ws
            if self.token:
                await ws.send(json.dumps({"type": "auth", "token": self.token}))
            self.sent_at: deque[float] = deque()
            self.ready.set()
            pinger = asyncio.create_task(self.ping_loop(ws, stop))
            try:
                while not stop.is_set():
                    try:
                        text = await asyncio.wait_for(ws.recv(decode=False), 1.0)
                    except TimeoutError:
                        continue
                    now = time.monotonic()
                    head = text[:48]
                    if b'"type":"delta"' in head or b'"type":"snapshot"' in head:
                        if window["start"] <= now <= window["end"]:
                            self.frames += 1
                            self.first_frame_at = self.first_frame_at or now
                            self.last_frame_at = now
                    elif b'"pong"' in head and self.sent_at:
                        started = self.sent_at.popleft()  # pongs come back in the order of the pings
                        if window["start"] <= started <= window["end"]:
                            self.pings_ms.append((now - started) * 1e3)
            finally:
                pinger.cancel()

    async def ping_loop(self, ws, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(PING_EVERY_S)
            self.sent_at.append(time.monotonic())
            await ws.send('{"type":"ping"}')


async def measure(base: str, ws_base: str, num_students: int, num_viewers: int, seconds: float, pid: int) -> dict:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        sessions = []
        for _ in range(num_students + 1):
            response = await http.post("/api/sessions", json={"preset": "default"})
            response.raise_for_status()
            sessions.append(response.json())
    students = [Client(f"{ws_base}/ws/{s['session_id']}", s["control_token"]) for s in sessions[:num_students]]
    lecture = sessions[-1]
    lecturer = Client(f"{ws_base}/ws/{lecture['session_id']}", lecture["control_token"])
    viewers = [Client(f"{ws_base}/ws/{lecture['session_id']}") for _ in range(num_viewers)]
    window = {"start": float("inf"), "end": float("inf")}
    stop = asyncio.Event()
    clients = [*students, lecturer, *viewers]
    tasks = [asyncio.create_task(c.run(window, stop)) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.ready.wait() for c in clients)), 60)
    # Everyone plays; the lecturer's 100 viewers follow the lecturer's session.
    play = json.dumps({"type": "play", "steps_per_s": STEPS_PER_S})
    for client in [*students, lecturer]:
        await client.ws.send(play)
    await asyncio.sleep(2.0)  # settle into the stream
    cpu_before, clients_before = cpu_seconds(pid), time.process_time()
    window["start"] = time.monotonic()
    window["end"] = window["start"] + seconds
    await asyncio.sleep(seconds + 0.6)
    cpu_s, clients_cpu_s = cpu_seconds(pid) - cpu_before, time.process_time() - clients_before
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)

    def group(members: list[Client]) -> dict:
        # Frames per second between the first and the last frame inside the window: a count over
        # the window itself is off by one whenever a frame lands just past either edge.
        rates = [(c.frames - 1) / (c.last_frame_at - c.first_frame_at) if c.frames > 1 else 0.0 for c in members]
        pings = [p for c in members for p in c.pings_ms]
        return {"clients": len(members), "frames_per_s_min": min(rates), "frames_per_s_median": statistics.median(rates),
                "ping_ms_p50": percentile(pings, 0.5), "ping_ms_p99": percentile(pings, 0.99),
                "ping_ms_max": max(pings, default=float("nan")), "pings": len(pings)}

    frames = sum(c.frames for c in clients)
    return {"students": group(students), "lecture_viewers": group([lecturer, *viewers]),
            "frames": frames, "server_cpu_ms_per_frame": 1e3 * cpu_s / max(1, frames),
            "clients_cpu_ms_per_frame": 1e3 * clients_cpu_s / max(1, frames),
            "server_cpu_percent": 100 * cpu_s / seconds, "clients_cpu_percent": 100 * clients_cpu_s / seconds,
            "window_s": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    port = free_port()
    server = start_server(["-m", "app.cli", "serve", "--port", str(port)], port)
    base, ws_base = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
    try:
        result = asyncio.run(asyncio.wait_for(
            measure(base, ws_base, args.students, args.viewers, args.seconds, server.pid), 60 + 2 * args.seconds))
    finally:
        stop_server(server)
    print(f"classroom on one server process: {args.students} students playing their own session at "
          f"{STEPS_PER_S} steps/s + a lecture at {STEPS_PER_S} steps/s with {args.viewers} viewers; "
          f"{result['window_s']:g} s window; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    ok = True
    for name in ("students", "lecture_viewers"):
        g = result[name]
        # Within 0.5%: the first and last frames are timed on arrival in this (busy) process, and
        # a few milliseconds of jitter on 15 s read as 19.99 for a stream of exactly 20 a second.
        meets = g["frames_per_s_min"] >= TARGET_FRAMES_PER_S * 0.995 and g["ping_ms_p99"] <= TARGET_PING_P99_MS
        ok &= meets
        print(f"  {name:16s} {g['clients']:4d} clients  frames/s min {g['frames_per_s_min']:5.2f} median "
              f"{g['frames_per_s_median']:5.2f}  ping p50 {g['ping_ms_p50']:6.1f} ms p99 {g['ping_ms_p99']:6.1f} ms "
              f"max {g['ping_ms_max']:6.1f} ms ({g['pings']} pings)  {'meets' if meets else 'MISSES'} the target")
    print(f"  CPU: server process {result['server_cpu_percent']:.0f}% of one core, the clients' process "
          f"{result['clients_cpu_percent']:.0f}% (both on this machine)")
    # CPU time per delivered frame hardly depends on how busy the machine is, so it says what the
    # whole class needs even when the run was starved of CPU.
    num_clients = args.students + 1 + args.viewers
    needed = num_clients * TARGET_FRAMES_PER_S * result["server_cpu_ms_per_frame"] / 10
    print(f"  server CPU per delivered frame {result['server_cpu_ms_per_frame']:.3f} ms (steps included): the whole "
          f"class at {TARGET_FRAMES_PER_S} frames/s needs about {needed:.0f}% of one core in the server process")
    print(f"target: every client >= {TARGET_FRAMES_PER_S} frames/s, ping p99 <= {TARGET_PING_P99_MS} ms: "
          f"{'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
