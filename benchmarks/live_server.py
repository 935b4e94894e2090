"""A real `servescope` server for the benchmarks that drive one: a free loopback port, a process of
its own started and stopped here, and what /proc says about it (memory, worker children).

The benchmarks are scripts (`python benchmarks/NAME.py`), so they import this as `live_server`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(args: list[str], port: int, env: dict | None = None, output=subprocess.DEVNULL,
                 timeout_s: float = 30.0) -> subprocess.Popen:
    """`python ARGS` from the repository root (this checkout's code first on the path), once its
    /healthz on 127.0.0.1:`port` answers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    server = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=output, stderr=output)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise RuntimeError(f"the server exited ({server.returncode})")
        time.sleep(0.1)
    server.kill()
    raise RuntimeError("the server did not start")


def stop_server(server: subprocess.Popen) -> None:
    """The server, then any worker it left behind (a benchmark may end with a fleet still running)."""
    workers = children(server.pid)
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    for pid in workers:
        with contextlib.suppress(OSError):
            if b"app.export_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():  # still that worker, not a reused pid
                os.kill(pid, signal.SIGKILL)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB: its resident memory now and at its peak; (0, 0) once gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return 0, 0
    fields = {line.split(":")[0]: line.split()[1] for line in lines if line.startswith(("VmRSS", "VmHWM"))}
    return int(fields.get("VmRSS", 0)), int(fields.get("VmHWM", 0))


def children(pid: int) -> list[int]:
    """The processes `pid` started (all its threads' children), e.g. the server's export workers."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except FileNotFoundError:
            continue
    return found
