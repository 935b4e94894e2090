"""Sweep throughput: points per second run one after another, in local processes, and as Ray tasks.

A 12-point grid (replicas x max_num_seqs x arrival rate) of a 4-replica-at-most fleet, each point
about a second of simulation. The figures depend on the cores free at the time: on a shared
machine they are noisy. Ray's figure includes starting a local Ray (what `--ray` without an
address does) and is left out when Ray is not installed.

    python benchmarks/bench_sweep.py [--requests 120] [--workers N]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.ray_sweep import run_ray  # noqa: E402
from scheduler_core.sweep import Sweep, run_processes, run_serial, run_sweep  # noqa: E402


def timed(sweep: Sweep, executor, label: str, directory: Path) -> tuple[float, bytes]:
    path = directory / f"{label}.csv"
    start = time.perf_counter()
    run_sweep(sweep, path, executor)
    return time.perf_counter() - start, path.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args()
    sweep = Sweep.from_dict({
        "model": "llama-3.1-8b", "gpu": "h200",
        "engine": {"num_gpu_blocks": 2000},
        "workload": {"num_requests": args.requests, "lengths": "sharegpt", "shared_prefix_len": 256,
                     "num_shared_prefixes": 4, "seed": 0},
        "cluster": {"router": "prefix-aware"},
        "sweep": {"cluster.replicas": [1, 2, 4], "engine.max_num_seqs": [32, 128], "workload.arrival_rate": [10.0, 30.0]},
    }, name="bench")
    num_points = len(sweep.points())
    print(f"{num_points} points of {args.requests} requests each; {os.cpu_count()} cores, {args.workers} workers")
    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        serial_s, serial_file = timed(sweep, run_serial, "serial", directory)
        print(f"  serial             {serial_s:6.1f} s  {num_points / serial_s:5.2f} points/s")
        local_s, local_file = timed(sweep, functools.partial(run_processes, workers=args.workers), "local", directory)
        print(f"  local processes    {local_s:6.1f} s  {num_points / local_s:5.2f} points/s  "
              f"speed-up {serial_s / local_s:.2f}x  same file: {local_file == serial_file}")
        if importlib.util.find_spec("ray") is None:
            print("  ray                not installed (pip install 'servescope[ray]')")
            return
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        init_s = time.perf_counter() - start
        try:
            ray_s, ray_file = timed(sweep, run_ray, "ray", directory)
        finally:
            ray.shutdown()
        print(f"  ray (local)        {ray_s:6.1f} s  {num_points / ray_s:5.2f} points/s  "
              f"speed-up {serial_s / ray_s:.2f}x  same file: {ray_file == serial_file}  (+{init_s:.1f} s to start Ray)")


if __name__ == "__main__":
    main()
