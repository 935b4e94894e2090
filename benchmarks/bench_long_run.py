"""A long headless run: wall time, peak memory, and memory along the way, of a whole simulated session.

By default 1,000,000 short requests (64-token prompts behind one of 3 shared 96-token system
prompts, 4 output tokens, Poisson at 200 requests/s) into Llama-3.1-8B on one H200, through the
full Simulation (cost model, streaming metrics, keep_finished=False), as `servescope run` does
it. Memory is the resident set, sampled when 10%, 50% and 100% of the requests have finished: a
flat line shows memory does not grow with the number of requests served.

    python benchmarks/bench_long_run.py [--requests 1000000] [--lengths azure-conversation --arrival-rate 8]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.scenario.scenario import Scenario  # noqa: E402


def rss_mib() -> float:
    """The current resident set (not the peak), from /proc."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--lengths", default="fixed", help="fixed (64-token prompts, 4 output tokens) or a named distribution")
    parser.add_argument("--arrival-rate", type=float, default=200.0)
    args = parser.parse_args()
    workload = {"num_requests": args.requests, "arrival_rate": args.arrival_rate, "lengths": args.lengths, "seed": 0,
                "shared_prefix_len": 96, "num_shared_prefixes": 3}
    if args.lengths == "fixed":
        workload.update(prompt_len=64, output_len=4)
    scenario = Scenario.from_dict({"model": "llama-3.1-8b", "gpu": "h200", "engine": {"max_num_batched_tokens": 8192},
                                   "workload": workload})
    rss_before = rss_mib()
    start = time.perf_counter()
    sim = scenario.build(keep_finished=False)
    print(f"{args.requests:,} requests ({args.lengths}, {args.arrival_rate:g} req/s), "
          f"{scenario.engine.num_gpu_blocks} KV blocks; before the run {rss_before:.0f} MiB, "
          f"workload built in {time.perf_counter() - start:.1f} s, RSS {rss_mib():.0f} MiB")
    marks = [int(args.requests * fraction) for fraction in (0.1, 0.5, 1.0)]
    num_steps = 0
    for _ in sim.records():
        num_steps += 1
        if marks and sim.metrics.num_finished >= marks[0]:
            print(f"  {sim.metrics.num_finished:>9,} finished ({time.perf_counter() - start:7.1f} s wall): "
                  f"RSS {rss_mib():.0f} MiB", flush=True)
            marks.pop(0)
    wall_s = time.perf_counter() - start
    report = sim.metrics.report(wall_s)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {num_steps:,} steps, {report['simulated_s']:,.0f} s simulated; wall {wall_s:.1f} s "
          f"({args.requests / wall_s:,.0f} requests/s, {num_steps / wall_s:,.0f} steps/s)")
    print(f"  peak RSS {peak_mib:.0f} MiB "
          f"({(peak_mib - rss_before) * 2**20 / args.requests:,.0f} bytes per request above the start)")
    print(f"  TTFT p99 {report['ttft_s']['p99'] * 1e3:.0f} ms, ITL p99 {report['itl_s']['p99'] * 1e3:.1f} ms, "
          f"{report['preemptions']} preemptions, prefix cache hit rate {report['prefix_cache_hit_rate']:.0%}")


if __name__ == "__main__":
    main()
