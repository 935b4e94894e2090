"""A long headless run: wall time and peak memory of a whole simulated serving session.

20,000 requests with the Azure 2023 conversation lengths, Poisson at 8 requests/s, into
Llama-3.1-8B on one H200 (KV pool sized from memory), through the full Simulation: cost model,
metrics and all. Peak memory is the process's maximum resident set.

    python benchmarks/bench_long_run.py [--requests 20000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.scenario import Scenario  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    scenario = Scenario.from_dict({
        "model": "llama-3.1-8b", "gpu": "h200",
        "engine": {"max_num_batched_tokens": 8192},
        "workload": {"num_requests": args.requests, "arrival_rate": 8.0, "lengths": "azure-conversation", "seed": 0},
    })
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    sim = scenario.build(keep_finished=False)
    num_steps = sim.run()
    wall_s = time.perf_counter() - start
    report = sim.metrics.report(wall_s)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.requests} requests ({scenario.workload.lengths}, {scenario.workload.arrival_rate} req/s), "
          f"{scenario.engine.num_gpu_blocks} KV blocks: {num_steps} steps, {report['simulated_s']:.0f} s simulated")
    print(f"  wall {wall_s:.1f} s ({num_steps / wall_s:,.0f} steps/s, "
          f"{report['output_tokens_per_s'] * report['simulated_s'] / wall_s:,.0f} output tokens/s)")
    print(f"  peak RSS {peak_mib:.0f} MiB (before the run: {rss_before / 1024:.0f} MiB)")
    print(f"  TTFT p99 {report['ttft_s']['p99'] * 1e3:.0f} ms, ITL p99 {report['itl_s']['p99'] * 1e3:.1f} ms, "
          f"{report['preemptions']} preemptions, KV usage {report['kv_usage_mean']:.0%}")


if __name__ == "__main__":
    main()
