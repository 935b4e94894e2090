"""Work too long for a request: a step log or trace export, a fleet run, a sweep, the "why" of a
step not answered before. Each is computed by a process of its own (`python -m app.export_worker`):
it never holds the server's event loop or its GIL, so every session's viewers keep their frame
rate; at most `max_concurrent_exports` worker processes run at once, of every kind (one "why"
at most among them); each has a budget of time and bytes, and is killed when it spends either or
when nobody waits for it any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from fastapi import HTTPException, Request

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CHUNK_BYTES = 64 * 1024
# How often a waiting fleet run or sweep looks whether its client is still there.
CLIENT_GONE_POLL_S = 0.25


class BudgetSpent(Exception):
    """Raised mid-stream, so a download ends incomplete rather than looking whole."""


class WorkerSlots:
    """The server's worker processes, at most `limit` at once. A slot is reserved before the
    process starts, in the same turn of the event loop as the count is checked, so requests
    arriving together can never start more than `limit` (checking, then awaiting the start,
    let twelve simultaneous requests all pass the check). Slots `within` another pool take one of
    its slots too: the "why" replays' one slot is also one of the server's worker slots, so the
    server never runs more than its limit of processes whatever they compute."""

    def __init__(self, limit: int, what: str = "exports, fleets or sweeps are being computed", retry_after_s: int = 5,
                 within: WorkerSlots | None = None):
        self.limit = limit
        self.what = what  # how a 429 names the work that holds the slots
        self.retry_after_s = retry_after_s
        self.within = within
        self.num_reserved = 0
        self.processes: set[asyncio.subprocess.Process] = set()

    def __iter__(self):
        return iter(list(self.processes))

    def __len__(self) -> int:
        return self.num_reserved

    def check(self) -> None:
        """429 if no slot is free now (here, or in the pool these slots are `within`)."""
        if self.num_reserved >= self.limit:
            raise HTTPException(429, f"{self.num_reserved} {self.what}; try again when one has finished",
                                headers={"Retry-After": str(self.retry_after_s)})
        if self.within is not None:
            self.within.check()

    def reserve(self) -> None:
        self.check()
        self.num_reserved += 1
        if self.within is not None:
            self.within.num_reserved += 1

    def started(self, process: asyncio.subprocess.Process) -> None:
        self.processes.add(process)

    def release(self) -> None:
        self.num_reserved -= 1
        if self.within is not None:
            self.within.num_reserved -= 1

    def discard(self, process: asyncio.subprocess.Process) -> None:
        """The process is gone (or going): its slot is free. Idempotent."""
        if process in self.processes:
            self.processes.discard(process)
            self.release()


async def start_worker(request: Request, job: dict, workers: WorkerSlots | None = None, payload: bytes = b"",
                       timeout_s: float | None = None) -> asyncio.subprocess.Process:
    """A worker process running `job` (with `payload` after its line, for the job to read), or 429
    when `workers` (the export slots unless named) already run as many as they allow."""
    settings = request.app.state.settings
    workers = request.app.state.export_workers if workers is None else workers
    workers.reserve()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app.export_worker", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env)
    except BaseException:
        workers.release()
        raise
    workers.started(process)
    process.stdin.write(json.dumps({**job, "timeout_s": timeout_s or settings.export_timeout_s}).encode() + b"\n" + payload)
    process.stdin.close()
    return process


async def stream(process: asyncio.subprocess.Process, workers: set, timeout_s: float, max_bytes: int, what: str = "exports"):
    """The worker's output as it comes, within the budget of time and bytes (`what` it computes
    names the budget when it runs out)."""
    deadline = time.monotonic() + timeout_s
    sent = 0
    try:
        while chunk := await asyncio.wait_for(process.stdout.read(CHUNK_BYTES), max(0.0, deadline - time.monotonic())):
            sent += len(chunk)
            if sent > max_bytes:
                raise BudgetSpent(f"{what} are limited to {max_bytes // 2**20} MiB")
            yield chunk
        if await process.wait() != 0:
            raise BudgetSpent("the worker failed")
    except TimeoutError:
        raise BudgetSpent(f"{what} are limited to {timeout_s:g} s") from None
    finally:
        await stop_worker(process, workers)


async def worker_result(request: Request, job: dict) -> dict:
    """Run `job` in a worker and return the JSON document it writes; 503 when its budget runs out."""
    settings = request.app.state.settings
    return json.loads(await worker_output(request, job, request.app.state.export_workers, settings.export_timeout_s,
                                          settings.max_export_bytes, what=f"{job['kind']} runs"))


async def worker_output(request: Request, job: dict, workers: WorkerSlots, timeout_s: float, max_bytes: int,
                        what: str, payload: bytes = b"") -> bytes:
    """Run `job` in a worker and return what it writes; 503 when its budget runs out. A client
    that hangs up takes its worker with it (within CLIENT_GONE_POLL_S), freeing the slot."""
    process = await start_worker(request, job, workers, payload, timeout_s)
    output = stream(process, workers, timeout_s, max_bytes, what=what)
    collecting = asyncio.ensure_future(collect(output))
    watching = asyncio.ensure_future(client_gone(request))
    try:
        await asyncio.wait({collecting, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not collecting.done():  # the client left (or this request was cancelled): the worker goes
            collecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collecting
            await stop_worker(process, workers)
    if not collecting.done() or collecting.cancelled():
        raise HTTPException(503, "the client went away")
    try:
        parts = collecting.result()
    except BudgetSpent as spent:
        raise HTTPException(503, str(spent)) from None
    return b"".join(parts)


async def collect(output) -> list[bytes]:
    return [chunk async for chunk in output]


async def client_gone(request: Request) -> None:
    """Returns once the HTTP client has disconnected."""
    while not await request.is_disconnected():
        await asyncio.sleep(CLIENT_GONE_POLL_S)


async def stop_worker(process: asyncio.subprocess.Process, workers: set) -> None:
    workers.discard(process)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await asyncio.shield(process.wait())
