"""Work too long for a request: a step log or trace export, a fleet run, a sweep. Each is computed
by a process of its own (`python -m app.export_worker`): it never holds the server's event loop
or its GIL, so every session's viewers keep their frame rate; at most `max_concurrent_exports`
run at once; each has `export_timeout_s` and `max_export_bytes`, and is killed when it spends
either or when nobody waits for it any more.
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


class BudgetSpent(Exception):
    """Raised mid-stream, so a download ends incomplete rather than looking whole."""


async def start_worker(request: Request, job: dict) -> asyncio.subprocess.Process:
    """A worker process running `job`, or 429 when the server already runs as many as it allows."""
    settings = request.app.state.settings
    workers: set[asyncio.subprocess.Process] = request.app.state.export_workers
    if len(workers) >= settings.max_concurrent_exports:
        raise HTTPException(429, f"{len(workers)} exports, fleets or sweeps are being computed; try again when one "
                                 "has finished")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "app.export_worker", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env)
    workers.add(process)
    process.stdin.write(json.dumps({**job, "timeout_s": settings.export_timeout_s}).encode() + b"\n")
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
    process = await start_worker(request, job)
    parts = []
    try:
        async for chunk in stream(process, request.app.state.export_workers, settings.export_timeout_s,
                                  settings.max_export_bytes, what=f"{job['kind']} runs"):
            parts.append(chunk)
    except BudgetSpent as spent:
        raise HTTPException(503, str(spent)) from None
    return json.loads(b"".join(parts))


async def stop_worker(process: asyncio.subprocess.Process, workers: set) -> None:
    workers.discard(process)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await asyncio.shield(process.wait())
