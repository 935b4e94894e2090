"""How fast the simulation core runs: a large trace replayed through the vllm-v1 policy.

10,000 requests arriving about one per step, so about 256 run at once (max_num_seqs), on a pool
of 32,768 blocks with chunked prefill, every step's log line written to a file. Prints steps per
second and simulated output tokens per second (goal: >= 500,000 on one core), then the cost of
one step as the pool and the number of past requests grow (it should not).

`--baseline PATH` replays the same traces with another checkout (an older commit's worktree, in
the flat layout or the layered one) in a child process, in turn with this one, and prints the ratio.

    python benchmarks/bench_core.py [--requests 10000] [--prefix-caching] [--baseline PATH] [--smoke]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--root" in sys.argv:  # a baseline's child process: that checkout's scheduler_core
    ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
sys.path.insert(0, str(ROOT))

try:
    from scheduler_core.sim.replay import replay, write_log
    from scheduler_core.workload.workload import lognormal_length
except ImportError:  # a checkout from before the layered subpackages
    from scheduler_core.replay import replay, write_log
    from scheduler_core.workload import lognormal_length

# Longer than any prompt here, so each request's token ids are its own (no prefix-cache hit), and
# small enough that every id stays below the 2^31 a trace allows.
PROMPT_ID_STRIDE = 4096


def distinct_prompt(index: int, length: int) -> list[int]:
    """Token ids that no other `distinct_prompt` shares (length at most PROMPT_ID_STRIDE)."""
    return list(range(index * PROMPT_ID_STRIDE, index * PROMPT_ID_STRIDE + length))


def large_trace(num_requests: int, prefix_caching: bool, seed: int = 0) -> dict:
    rng = random.Random(seed)
    requests = []
    for index in range(num_requests):
        requests.append({
            "id": f"r{index:05d}",
            # Slightly faster than the engine drains, so the batch stays full at max_num_seqs.
            "arrival_step": int(index / 1.2),
            "prompt_token_ids": distinct_prompt(index, lognormal_length(rng, 512, 0.8, 16, 4000)),
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


def measure(num_requests: int, prefix_caching: bool) -> float:
    """Replay the large trace, print its figures, and return simulated output tokens per second."""
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
    tokens_per_s = num_output_tokens / wall_s
    print(f"prefix caching {'on ' if prefix_caching else 'off'}: {num_requests} requests, {num_steps} steps, "
          f"{running_total / lines:.0f} running on average, {wall_s:.2f} s wall")
    print(f"  {num_steps / wall_s:,.0f} steps/s, {tokens_per_s:,.0f} simulated output tokens/s "
          f"(log writing included)", flush=True)
    return tokens_per_s


def measure_baseline(path: str, num_requests: int, prefix_caching: bool) -> float:
    """The same replay with the checkout at `path`, in a child process (its own imports)."""
    command = [sys.executable, __file__, "--root", path, "--requests", str(num_requests),
               "--only-replay", "on" if prefix_caching else "off"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    print("  baseline " + out.strip().replace("\n", "\n  baseline "))
    return float(re.findall(r"([\d,]+) simulated output tokens/s", out)[-1].replace(",", ""))


def step_cost(num_blocks: int, num_finished_before: int, steps: int = 2000) -> float:
    """Microseconds per step of a steady batch of 64 decodes, on a pool of `num_blocks`, after
    `num_finished_before` requests have already come and gone."""
    requests = [{"id": f"old{i}", "arrival_step": 0, "prompt_token_ids": distinct_prompt(i, 16), "max_tokens": 1}
                for i in range(num_finished_before)]
    requests += [{"id": f"r{i}", "arrival_step": 0, "prompt_token_ids": distinct_prompt(num_finished_before + i, 256),
                  "max_tokens": 100_000} for i in range(64)]
    trace = {"config": {"block_size": 16, "num_gpu_blocks": num_blocks, "max_num_seqs": max(64, num_finished_before + 64),
                        "max_num_batched_tokens": max(65_536, 17 * (num_finished_before + 64)), "max_model_len": 1_000_000,
                        "enable_chunked_prefill": True, "enable_prefix_caching": True, "long_prefill_token_threshold": 0},
             "requests": requests}
    log = replay(trace)
    for _ in range(50):  # past the prefills and the short requests
        next(log)
    start = time.perf_counter()
    for _ in range(steps):
        next(log)
    return (time.perf_counter() - start) / steps * 1e6


def scaling(block_counts: tuple[int, ...], finished_counts: tuple[int, ...], steps: int) -> None:
    print("step cost of 64 running decodes (us/step): by pool size, and by requests already finished")
    for num_blocks in block_counts:
        print(f"  {num_blocks:>9,} blocks, 0 finished before:      {step_cost(num_blocks, 0, steps):7.1f}")
    for finished in finished_counts:
        print(f"     65,536 blocks, {finished:>6,} finished before: {step_cost(65_536, finished, steps):7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--prefix-caching", action="store_true", help="only the prefix-caching run")
    parser.add_argument("--baseline", metavar="PATH", help="also time the checkout at PATH, in turn, and print the ratio")
    parser.add_argument("--smoke", action="store_true", help="a tiny size, to check that the benchmark runs")
    parser.add_argument("--root", help=argparse.SUPPRESS)  # read before the imports above
    parser.add_argument("--only-replay", choices=["off", "on"], help=argparse.SUPPRESS)  # a baseline's child process
    args = parser.parse_args()
    num_requests = 200 if args.smoke else args.requests
    if args.only_replay:
        measure(num_requests, prefix_caching=args.only_replay == "on")
        return
    for prefix_caching in ([True] if args.prefix_caching else [False, True]):
        tokens_per_s = measure(num_requests, prefix_caching)
        if args.baseline:
            baseline = measure_baseline(args.baseline, num_requests, prefix_caching)
            print(f"  {tokens_per_s / baseline:.2f}x the baseline's simulated output tokens/s")
    if args.smoke:
        scaling((4_096,), (100,), steps=50)
    else:
        scaling((4_096, 65_536, 1_048_576), (1_000, 10_000), steps=2000)


if __name__ == "__main__":
    main()
