"""How fast the simulation core runs: a large trace replayed through the vllm-v1 policy.

10,000 requests arriving about one per step, so about 256 run at once (max_num_seqs), on a pool
of 32,768 blocks with chunked prefill, every step's log line written to a file. Prints steps per
second and simulated output tokens per second (goal: >= 250,000 on one core), then the cost of
one step as the pool and the number of past requests grow (it should not).

    python benchmarks/bench_core.py [--requests 10000] [--prefix-caching]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.sim.replay import replay, write_log  # noqa: E402
from scheduler_core.workload.workload import lognormal_length, unique_prompt  # noqa: E402


def large_trace(num_requests: int, prefix_caching: bool, seed: int = 0) -> dict:
    rng = random.Random(seed)
    requests = []
    for index in range(num_requests):
        requests.append({
            "id": f"r{index:05d}",
            # Slightly faster than the engine drains, so the batch stays full at max_num_seqs.
            "arrival_step": int(index / 1.2),
            "prompt_token_ids": unique_prompt(index, lognormal_length(rng, 512, 0.8, 16, 4000)),
            "max_tokens": lognormal_length(rng, 256, 0.8, 1, 2000),
        })
    return {
        "config": {
            "block_size": 16,
            "num_gpu_blocks": 32768,
            "max_num_seqs": 256,
            "max_num_batched_tokens": 8192,
            "max_model_len": 8192,
            "enable_chunked_prefill": True,
            "enable_prefix_caching": prefix_caching,
            "long_prefill_token_threshold": 0,
        },
        "requests": requests,
    }


def measure(num_requests: int, prefix_caching: bool) -> None:
    trace = large_trace(num_requests, prefix_caching)
    num_output_tokens = sum(r["max_tokens"] for r in trace["requests"])
    running_total = 0
    lines = 0

    def counted(log):
        nonlocal running_total, lines
        for line in log:
            running_total += line["num_running"]
            lines += 1
            yield line

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        num_steps = write_log(counted(replay(trace)), Path(tmp) / "log.jsonl")
        wall_s = time.perf_counter() - start
    print(f"prefix caching {'on ' if prefix_caching else 'off'}: {num_requests} requests, {num_steps} steps, "
          f"{running_total / lines:.0f} running on average, {wall_s:.2f} s wall")
    print(f"  {num_steps / wall_s:,.0f} steps/s, {num_output_tokens / wall_s:,.0f} simulated output tokens/s "
          f"(log writing included)")


def step_cost(num_blocks: int, num_finished_before: int, steps: int = 2000) -> float:
    """Microseconds per step of a steady batch of 64 decodes, on a pool of `num_blocks`, after
    `num_finished_before` requests have already come and gone."""
    requests = [{"id": f"old{i}", "arrival_step": 0, "prompt_token_ids": unique_prompt(i, 16), "max_tokens": 1}
                for i in range(num_finished_before)]
    requests += [{"id": f"r{i}", "arrival_step": 0, "prompt_token_ids": unique_prompt(10**6 + i, 256), "max_tokens": 10**6}
                 for i in range(64)]
    trace = {"config": {"block_size": 16, "num_gpu_blocks": num_blocks, "max_num_seqs": max(64, num_finished_before + 64),
                        "max_num_batched_tokens": max(65_536, 17 * (num_finished_before + 64)), "max_model_len": 10**7,
                        "enable_chunked_prefill": True, "enable_prefix_caching": True, "long_prefill_token_threshold": 0},
             "requests": requests}
    log = replay(trace)
    for _ in range(50):  # past the prefills and the short requests
        next(log)
    start = time.perf_counter()
    for _ in range(steps):
        next(log)
    return (time.perf_counter() - start) / steps * 1e6


def scaling() -> None:
    print("step cost of 64 running decodes (us/step): by pool size, and by requests already finished")
    for num_blocks in (4_096, 65_536, 1_048_576):
        print(f"  {num_blocks:>9,} blocks, 0 finished before:      {step_cost(num_blocks, 0):7.1f}")
    for finished in (1_000, 20_000):
        print(f"     65,536 blocks, {finished:>6,} finished before: {step_cost(65_536, finished):7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--prefix-caching", action="store_true", help="only the prefix-caching run")
    args = parser.parse_args()
    if not args.prefix_caching:
        measure(args.requests, prefix_caching=False)
    measure(args.requests, prefix_caching=True)
    scaling()


if __name__ == "__main__":
    main()
