"""A hostile student against `servescope serve --public`: each attack of issue 24 replayed against a
real server while a bystander watches its own session, with the issue's targets beside the figures.

Each row gets a fresh server (its own process, on a free port, bound to 127.0.0.1). The bystander
(from 127.0.0.1) creates a session, plays it at 50 steps/s and counts the state frames it receives;
/healthz is timed every 100 ms; the server's memory (VmRSS, VmHWM) and its worker children come from
/proc every 50 ms. The attackers come from other loopback addresses (127.0.0.2, 127.0.0.3, ...:
quotas are per client address), one address per loop or per fleet run, so a per-client limit alone
does not hold them back. A refusal (HTTP 4xx/5xx, a websocket closed or answered with an error) is
a defence holding: it is counted per row, and the attack goes on. The memory row watches three
windows: a session's memory grows with time.

  memory    one client's quota of sessions at the largest size the web accepts (131,072 blocks,
            20,000 requests of 8k-30k tokens arriving at once), each told to step 100,000
  validate  4 loops of POST /api/scenarios/validate with that scenario (no token needed)
  why       4 loops of GET /api/sessions/ID/steps/N/why on random past steps of a big session
  sockets   200 websockets to one's own session that never read, each asking for snapshots
  workers   12 simultaneous POST /api/fleet (long runs), then every client hangs up mid-run
  fast      one session playing at 2,000 steps/s

Targets (issue 24): bystander >= 40 frames/s (mean over the window), /healthz p50 <= 100 ms,
server memory (its peak RSS plus its workers') under 1.5 GiB, at most 2 workers alive at any time,
an abandoned worker gone within 5 s. The clients share this process and the machine's cores with
the server, so the figures are noisy on a small machine; the load average is printed.

    python benchmarks/bench_abuse.py [--rows memory,validate,why,sockets,workers,fast] [--duration 20] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
from live_server import ROOT, children, free_port, memory_kib, percentile, start_server, stop_server
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

sys.path.insert(0, str(ROOT))

from app.settings import Settings  # noqa: E402

BYSTANDER_ADDRESS = "127.0.0.1"
ATTACKER_ADDRESSES = [f"127.0.0.{i}" for i in range(2, 30)]
BYSTANDER_STEPS_PER_S = 50
HEALTHZ_EVERY_S = 0.1
PROC_EVERY_S = 0.05
TARGET_FRAMES_PER_S = 40
TARGET_HEALTHZ_P50_MS = 100
TARGET_MEMORY_GIB = 1.5
TARGET_WORKERS = 2
TARGET_ABANDONED_S = 5.0
# The attacks at the sizes, and tiny ones for the test suite (does it run, and print).
FULL = {"requests": 20_000, "blocks": 131_072, "steps": 100_000, "why_steps": 1_000, "loops": 4, "sockets": 200,
        "fleets": 12, "fleet_requests": 2_000, "replicas": 8, "fast_requests": 4_000, "fast_blocks": 16_384,
        "settle_s": 1.0, "abandoned_wait_s": 30.0}
SMOKE = {"requests": 100, "blocks": 2_048, "steps": 200, "why_steps": 30, "loops": 2, "sockets": 4,
         "fleets": 3, "fleet_requests": 20, "replicas": 2, "fast_requests": 200, "fast_blocks": 2_048,
         "settle_s": 0.3, "abandoned_wait_s": 1.0}
ROWS = ("memory", "validate", "why", "sockets", "workers", "fast")
# A session's memory grows with every checkpoint it takes: the memory row watches three windows.
WINDOWS = {"memory": 3}


def big_scenario(sizes: dict, num_requests: int | None = None) -> dict:
    """The largest session the web accepts: every request of 8k-30k tokens, all arriving at once."""
    return {"name": "abuse-big", "model": "llama-3.1-8b", "gpu": "h200",
            "engine": {"num_gpu_blocks": sizes["blocks"], "max_num_seqs": 1024, "max_num_batched_tokens": 16384,
                       "max_model_len": 32768},
            "workload": {"num_requests": num_requests or sizes["requests"], "arrival_rate": 1e6, "lengths": "uniform",
                         "prompt_len": 8000, "prompt_len_high": 28000, "output_len": 200, "output_len_high": 2000,
                         "seed": 0}}


def steady_scenario(name: str, num_requests: int, num_blocks: int) -> dict:
    """A session that plays for minutes at 50 steps/s: the bystander's, the socket row's target."""
    return {"name": name, "model": "llama-3.1-8b", "gpu": "h200",
            "engine": {"num_gpu_blocks": num_blocks, "max_num_seqs": 256, "max_num_batched_tokens": 8192},
            "workload": {"num_requests": num_requests, "arrival_rate": 1000.0 if num_requests > 1000 else 20.0,
                         "lengths": "lognormal", "prompt_len": 256, "output_len": 384, "sigma": 0.5, "seed": 0}}


@dataclass
class Row:
    """What one row measured: the server's side (probe) and the attack's own counts."""

    name: str
    refusals: Counter = field(default_factory=Counter)
    answered: int = 0
    note: str = ""
    abandoned_s: float | None = None
    abandoned_note: str = "-"
    frames_per_s: float = float("nan")
    frames_per_s_min: float = float("nan")
    healthz_ms: list[float] = field(default_factory=list)
    rss_start_kib: int = 0
    rss_peak_kib: int = 0
    worker_rss_peak_kib: int = 0
    workers_max: int = 0
    server_exit: int | None = None

    def refuse(self, what) -> None:
        self.refusals[str(what)] += 1


@dataclass
class Target:
    """The server under attack, as the attacks see it."""

    base: str
    pid: int
    sizes: dict
    duration_s: float
    row: Row
    bystander_id: str = ""
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def http(self, address: str, timeout: float | None = 60.0) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, timeout=timeout,
                                 transport=httpx.AsyncHTTPTransport(local_address=address))

    def socket(self, session_id: str, address: str, **options):
        return connect(self.base.replace("http", "ws", 1) + f"/ws/{session_id}", local_addr=(address, 0),
                       max_size=None, ping_interval=None, open_timeout=30, close_timeout=1, **options)

    async def create(self, http: httpx.AsyncClient, scenario: dict, retries: int = 0) -> dict | None:
        """A session, or None once refused `retries` + 1 times (a 429 is waited out as its Retry-After says)."""
        for _ in range(retries + 1):
            response = await http.post("/api/sessions", json={"scenario": scenario})
            if response.status_code == 201:
                return response.json()
            self.row.refuse(response.status_code)
            if response.status_code != 429:
                return None
            await asyncio.sleep(float(response.headers.get("retry-after", 1)))
        return None


# -- the bystander and the probe ------------------------------------------------------------


class Bystander:
    """A student minding their own session: plays at 50 steps/s, notes when each state frame arrives."""

    def __init__(self, target: Target):
        self.target = target
        self.arrivals: list[float] = []

    async def run(self, stop: asyncio.Event, playing: asyncio.Event) -> None:
        async with self.target.http(BYSTANDER_ADDRESS) as http:
            response = await http.post("/api/sessions", json={"scenario": steady_scenario("bystander", 5000, 8192)})
            response.raise_for_status()
            created = response.json()
        self.target.bystander_id = created["session_id"]
        async with self.target.socket(created["session_id"], BYSTANDER_ADDRESS) as ws:
            await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
            await ws.send(json.dumps({"type": "play", "steps_per_s": BYSTANDER_STEPS_PER_S}))
            playing.set()
            while not stop.is_set():
                try:
                    message = await asyncio.wait_for(ws.recv(), 0.5)
                except TimeoutError:
                    continue
                except ConnectionClosed:
                    return
                if isinstance(message, bytes):  # state frames are binary, the rest is JSON text
                    self.arrivals.append(time.monotonic())

    def rates(self, start: float, end: float) -> tuple[float, float]:
        """Frames per second over [start, end], and in its slowest whole second."""
        inside = [t for t in self.arrivals if start <= t < end]
        seconds = int(end - start)
        per_second = Counter(int(t - start) for t in inside)
        slowest = min((per_second[s] for s in range(seconds)), default=float("nan"))
        return len(inside) / max(end - start, 1e-9), slowest


class Probe:
    """/healthz every 100 ms (each answer timed, however long it takes), /proc every 50 ms."""

    def __init__(self, target: Target, max_rss_kib: int):
        self.target, self.max_rss_kib = target, max_rss_kib
        self.too_big = asyncio.Event()

    async def healthz(self, stop: asyncio.Event) -> None:
        async with self.target.http(BYSTANDER_ADDRESS, timeout=60) as http:
            while not stop.is_set():
                started = time.monotonic()
                with contextlib.suppress(httpx.HTTPError):
                    await http.get("/healthz")
                    self.target.row.healthz_ms.append((time.monotonic() - started) * 1e3)
                await asyncio.sleep(max(0.0, HEALTHZ_EVERY_S - (time.monotonic() - started)))

    async def proc(self, stop: asyncio.Event) -> None:
        row = self.target.row
        while not stop.is_set():
            rss, peak = memory_kib(self.target.pid)
            workers = children(self.target.pid)
            row.rss_peak_kib = max(row.rss_peak_kib, peak)
            row.workers_max = max(row.workers_max, len(workers))
            row.worker_rss_peak_kib = max(row.worker_rss_peak_kib, sum(memory_kib(pid)[0] for pid in workers))
            if rss > self.max_rss_kib:
                self.too_big.set()  # this machine is shared: stop the row before it runs out of memory
            await asyncio.sleep(PROC_EVERY_S)


# -- the attacks ------------------------------------------------------------------------------


async def presenter(target: Target, created: dict, address: str, commands: list[dict], stop: asyncio.Event,
                    reached: tuple[int, asyncio.Event] | None = None) -> None:
    """The attacker's own control socket: sends `commands`, reads everything (it is no slow viewer),
    counts error frames as refusals, and sets `reached`'s event once the session is at its step."""
    try:
        async with target.socket(created["session_id"], address) as ws:
            await ws.send(json.dumps({"type": "auth", "token": created["control_token"]}))
            for command in commands:
                await ws.send(json.dumps(command))
            pinged_at = 0.0
            while not stop.is_set():
                if reached and not reached[1].is_set() and time.monotonic() - pinged_at > 0.5:
                    pinged_at = time.monotonic()
                    await ws.send('{"type":"ping"}')  # answered once the command before it is done
                try:
                    message = await asyncio.wait_for(ws.recv(), 0.5)
                except TimeoutError:
                    continue
                if isinstance(message, bytes):
                    continue
                frame = json.loads(message)
                if frame.get("type") == "error":
                    target.row.refuse(f"ws {frame.get('code')}")
                elif reached and frame.get("type") in ("status", "pong") and frame.get("step", 0) >= reached[0]:
                    reached[1].set()
    except (ConnectionClosed, InvalidHandshake, OSError) as error:
        target.row.refuse(refusal(error))


async def attack_memory(target: Target, stop: asyncio.Event) -> None:
    quota = Settings.from_env(public=True).max_sessions_per_client or 3
    address = ATTACKER_ADDRESSES[0]
    async with target.http(address, timeout=120) as http:
        # As a determined student would: a rate limit's 429 is waited out, the whole quota taken.
        created = [c for c in [await target.create(http, big_scenario(target.sizes), retries=5) for _ in range(quota)] if c]
    target.row.note = f"{len(created)} of {quota} sessions, each stepping {target.sizes['steps']:,}"
    step = [{"type": "step", "n": target.sizes["steps"]}]
    async with asyncio.TaskGroup() as group:
        for c in created:
            group.create_task(presenter(target, c, address, step, stop))
        target.ready.set()


async def request_loop(target: Target, address: str, stop: asyncio.Event, request) -> None:
    """One attacker's loop: `request(http)` again and again; a refusal is counted and waited out a little."""
    async with target.http(address) as http:
        while not stop.is_set():
            try:
                response = await request(http)
            except httpx.HTTPError as error:
                target.row.refuse(type(error).__name__)
                await asyncio.sleep(0.05)
                continue
            if response.is_success:
                target.row.answered += 1
            else:
                target.row.refuse(response.status_code)
                await asyncio.sleep(0.05)


async def attack_validate(target: Target, stop: asyncio.Event) -> None:
    body = {"scenario": big_scenario(target.sizes)}
    target.ready.set()
    async with asyncio.TaskGroup() as group:
        for address in ATTACKER_ADDRESSES[:target.sizes["loops"]]:
            group.create_task(request_loop(target, address, stop,
                                           lambda http: http.post("/api/scenarios/validate", json=body)))
    target.row.note = f"{target.row.answered:,} answered"


async def attack_why(target: Target, stop: asyncio.Event) -> None:
    address, num_steps = ATTACKER_ADDRESSES[0], target.sizes["why_steps"]
    async with target.http(address, timeout=120) as http:
        created = await target.create(http, big_scenario(target.sizes))
    if created is None:
        target.ready.set()
        return
    stepped = asyncio.Event()
    async with asyncio.TaskGroup() as group:
        group.create_task(presenter(target, created, address, [{"type": "step", "n": num_steps}], stop,
                                    (num_steps, stepped)))
        await asyncio.wait_for(stepped.wait(), 300)  # the past to ask about, before the window opens
        target.ready.set()
        path = f"/api/sessions/{created['session_id']}/steps/{{}}/why"
        for address in ATTACKER_ADDRESSES[:target.sizes["loops"]]:
            group.create_task(request_loop(target, address, stop,
                                           lambda http: http.get(path.format(random.randint(0, num_steps - 1)))))
    target.row.note = f"{target.row.answered:,} answered, steps 0..{num_steps - 1:,}"


async def silent_viewer(target: Target, session_id: str, address: str, opened: list, stop: asyncio.Event) -> None:
    """A websocket that never reads (its queue of one message stays full, so the kernel's buffers fill
    and the server's writes back up) and asks for a snapshot four times a second."""
    try:
        async with target.socket(session_id, address, max_queue=1) as ws:
            opened.append(ws)
            while not stop.is_set():
                await asyncio.wait_for(ws.send('{"type":"snapshot"}'), 5)
                await asyncio.sleep(0.25)
    except (ConnectionClosed, InvalidHandshake, OSError, TimeoutError) as error:
        target.row.refuse(refusal(error))


def refusal(error: Exception) -> str:
    """How a websocket was refused: the HTTP status of its handshake, or the server's close code."""
    if isinstance(error, InvalidStatus):
        return f"ws HTTP {error.response.status_code}"
    if isinstance(error, ConnectionClosed) and error.rcvd is not None:
        return f"ws closed {error.rcvd.code}"
    return f"ws {type(error).__name__}"


async def attack_sockets(target: Target, stop: asyncio.Event) -> None:
    address = ATTACKER_ADDRESSES[0]
    async with target.http(address) as http:
        created = await target.create(http, steady_scenario("abuse-sockets", 5000, 8192))
    if created is None:
        target.ready.set()
        return
    opened: list = []
    async with asyncio.TaskGroup() as group:
        group.create_task(presenter(target, created, address, [{"type": "play", "steps_per_s": 50}], stop))
        for _ in range(target.sizes["sockets"]):
            group.create_task(silent_viewer(target, created["session_id"], address, opened, stop))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait_until(lambda: len(opened) + target.row.refusals.total() >= target.sizes["sockets"]), 60)
        target.row.note = f"{len(opened)} of {target.sizes['sockets']} sockets opened"
        target.ready.set()


async def wait_until(condition, every_s: float = 0.05) -> None:
    while not condition():
        await asyncio.sleep(every_s)


async def attack_workers(target: Target, stop: asyncio.Event) -> None:
    """All the fleet runs at once; halfway through the window every client hangs up, and the
    abandoned workers are timed until they are gone (for up to 30 s past the window)."""
    sizes = target.sizes
    body = {"scenario": big_scenario(sizes, sizes["fleet_requests"]), "cluster": {"replicas": sizes["replicas"]}}

    async def fleet(address: str) -> None:
        async with target.http(address, timeout=None) as http:
            response = await http.post("/api/fleet", json=body)
        if response.is_success:
            target.row.answered += 1
        else:
            target.row.refuse(response.status_code)

    runs = [asyncio.create_task(fleet(ATTACKER_ADDRESSES[i % len(ATTACKER_ADDRESSES)])) for i in range(sizes["fleets"])]
    target.ready.set()
    await asyncio.wait(runs, timeout=target.duration_s / 2)
    if not all(run.done() for run in runs):  # hang up on a running worker, not on one yet to start
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait_until(lambda: children(target.pid)), 10)
    abandoned = set(children(target.pid))
    hung_up = sum(not run.done() for run in runs)
    for run in runs:
        run.cancel()  # the client hangs up: httpx closes the connection mid-request
    await asyncio.gather(*runs, return_exceptions=True)
    hung_up_at = time.monotonic()
    target.row.note = f"{target.row.answered} ran to the end, {hung_up} hung up on"
    if not abandoned:
        target.row.abandoned_note = "none running"
        return
    limit_s = target.duration_s / 2 + sizes["abandoned_wait_s"]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(wait_until(lambda: not abandoned & set(children(target.pid))), limit_s)
    lived_s = time.monotonic() - hung_up_at
    if abandoned & set(children(target.pid)):
        target.row.abandoned_note = f"> {lived_s:.0f} s (alive)"
    else:
        target.row.abandoned_s, target.row.abandoned_note = lived_s, f"{lived_s:.1f} s"


async def attack_fast(target: Target, stop: asyncio.Event) -> None:
    address = ATTACKER_ADDRESSES[0]
    async with target.http(address) as http:
        created = await target.create(http, steady_scenario("abuse-fast", target.sizes["fast_requests"],
                                                            target.sizes["fast_blocks"]))
    if created is None:
        target.ready.set()
        return
    target.row.note = (f"{target.sizes['fast_requests']:,} requests on {target.sizes['fast_blocks']:,} blocks, "
                       "played at 2,000 steps/s")
    async with asyncio.TaskGroup() as group:
        group.create_task(presenter(target, created, address, [{"type": "play", "steps_per_s": 2000}], stop))
        target.ready.set()


async def no_attack(target: Target, stop: asyncio.Event) -> None:
    target.ready.set()


ATTACKS = {"baseline": no_attack, "memory": attack_memory, "validate": attack_validate, "why": attack_why,
           "sockets": attack_sockets, "workers": attack_workers, "fast": attack_fast}


# -- one row: a fresh server, the bystander, the probe, the attack ----------------------------


async def measure(target: Target, attack, max_rss_kib: int) -> None:
    row, stop, attack_stop, playing = target.row, asyncio.Event(), asyncio.Event(), asyncio.Event()
    bystander, probe = Bystander(target), Probe(target, max_rss_kib)
    watching = asyncio.create_task(bystander.run(stop, playing))
    watchers = [asyncio.create_task(probe.proc(stop)), watching]
    await asyncio.wait({watching, asyncio.create_task(playing.wait())}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    if not playing.is_set():
        row.note = f"the bystander could not start its session: {watching.exception() if watching.done() else 'timeout'}"
        stop.set()
        await asyncio.gather(*watchers, return_exceptions=True)
        return
    await asyncio.sleep(target.sizes["settle_s"])  # into the bystander's stream
    row.rss_start_kib = memory_kib(target.pid)[0]
    attacking = asyncio.create_task(attack(target, attack_stop))
    await asyncio.wait({attacking, asyncio.create_task(target.ready.wait())}, timeout=600,
                       return_when=asyncio.FIRST_COMPLETED)
    watchers.append(asyncio.create_task(probe.healthz(stop)))
    start = time.monotonic()
    await asyncio.wait({asyncio.create_task(probe.too_big.wait())}, timeout=target.duration_s)
    end = time.monotonic()
    if probe.too_big.is_set():
        row.note += f"; stopped after {end - start:.0f} s: server past {max_rss_kib / 2**20:.0f} GiB"
    attack_stop.set()
    try:
        await asyncio.wait_for(attacking, 60)
    except Exception as error:  # noqa: BLE001 - a failed attack is a figure too, never a crash
        row.note += f"; attack ended with {type(error).__name__}"
    stop.set()
    await asyncio.gather(*watchers, return_exceptions=True)
    row.frames_per_s, row.frames_per_s_min = bystander.rates(start, end)


def run_row(name: str, sizes: dict, duration_s: float, max_rss_kib: int) -> Row:
    port = free_port()
    server = start_server(["-m", "app.cli", "serve", "--public", "--host", "127.0.0.1", "--port", str(port)], port)
    target = Target(f"http://127.0.0.1:{port}", server.pid, sizes, duration_s, Row(name))
    try:
        asyncio.run(measure(target, ATTACKS[name], max_rss_kib))
    finally:
        target.row.server_exit = server.poll()
        stop_server(server)
    return target.row


# -- the table --------------------------------------------------------------------------------


def mib(kib: int) -> str:
    return f"{kib / 1024:,.0f} MiB"


def judged(row: Row) -> dict[str, bool | None]:
    """Each target met (True), missed (False) or not this row's to judge (None)."""
    memory_gib = (row.rss_peak_kib + row.worker_rss_peak_kib) / 2**20
    return {
        f"frames/s >= {TARGET_FRAMES_PER_S}": None if row.name == "baseline" else row.frames_per_s >= TARGET_FRAMES_PER_S,
        f"healthz p50 <= {TARGET_HEALTHZ_P50_MS} ms": percentile(row.healthz_ms, 0.5) <= TARGET_HEALTHZ_P50_MS,
        f"memory < {TARGET_MEMORY_GIB} GiB": memory_gib < TARGET_MEMORY_GIB,
        f"workers <= {TARGET_WORKERS}": row.workers_max <= TARGET_WORKERS,
        f"abandoned gone <= {TARGET_ABANDONED_S:g} s": None if row.name != "workers" or row.abandoned_note == "none running"
        else row.abandoned_s is not None and row.abandoned_s <= TARGET_ABANDONED_S,
    }


def print_table(rows: list[Row]) -> None:
    columns = ("row", "frames/s (slowest s)", "/healthz p50 / max", "server RSS start -> peak", "workers RSS",
               "workers max", "abandoned lived", "refusals")
    widths = (9, 21, 22, 26, 12, 12, 16, 0)
    print("".join(f"{c:<{w}}" for c, w in zip(columns, widths)))
    for row in rows:
        refusals = ", ".join(f"{what} x{n}" for what, n in row.refusals.most_common()) or "none"
        cells = (row.name, f"{row.frames_per_s:5.1f} ({row.frames_per_s_min:g})",
                 f"{percentile(row.healthz_ms, 0.5):,.0f} / {max(row.healthz_ms, default=float('nan')):,.0f} ms",
                 f"{mib(row.rss_start_kib)} -> {mib(row.rss_peak_kib)}", mib(row.worker_rss_peak_kib),
                 str(row.workers_max), row.abandoned_note, refusals)
        print("".join(f"{c:<{w}}" for c, w in zip(cells, widths)))
    print()
    for row in rows:
        exited = f"; THE SERVER EXITED ({row.server_exit})" if row.server_exit is not None else ""
        print(f"  {row.name}: {row.note or 'no attack'}{exited}")
    print("\ntargets (issue 24)")
    names = list(judged(rows[0]))
    print(f"{'row':<9}" + "".join(f"{n:<26}" for n in names))
    for row in rows:
        marks = ["-" if ok is None else "PASS" if ok else "FAIL" for ok in judged(row).values()]
        print(f"{row.name:<9}" + "".join(f"{m:<26}" for m in marks))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of {', '.join(ROWS)}")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds each attack is measured (memory: 3x)")
    parser.add_argument("--smoke", action="store_true", help="tiny attacks, a second each: does it run")
    parser.add_argument("--max-rss-gib", type=float, default=6.0, help="stop a row when the server grows past this")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the row's server
    names = [name.strip() for name in args.rows.split(",") if name.strip()]
    unknown = set(names) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose from {', '.join(ROWS)}")
    sizes, duration_s = (SMOKE, min(args.duration, 1.0)) if args.smoke else (FULL, args.duration)
    print(f"servescope serve --public under attack, a fresh server per row; bystander at {BYSTANDER_STEPS_PER_S} "
          f"steps/s from {BYSTANDER_ADDRESS}, attackers from 127.0.0.2 on; {duration_s:g} s per row "
          f"({duration_s * (1 if args.smoke else WINDOWS['memory']):g} s for memory)"
          f"{' (smoke sizes)' if args.smoke else ''}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    windows = {} if args.smoke else WINDOWS
    rows = [run_row(name, sizes, duration_s * windows.get(name, 1), int(args.max_rss_gib * 2**20))
            for name in ["baseline", *names]]
    print_table(rows)
    print(f"\nload average after: {os.getloadavg()[0]:.1f} (the clients share the machine with the server: noisy figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
