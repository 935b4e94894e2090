"""Time vLLM's own V1 scheduler on this CPU: `schedule()` and `update_from_output()` for one
decode step of N running requests, the scheduler's share of the host work that async scheduling
overlaps with the GPU (the model runner's input preparation and the engine's IPC come on top, and
are not timed here: they need the model runner).

Run with the recorder's venv (README.md), never the project's own:
    nice -n 10 /tmp/vllm-venv/bin/python tools/vllm_recorder/time_scheduler.py [--batch-sizes 1 8 32 64 128 256]

Prints the median microseconds per step for each batch size and a least-squares line
(fixed + per request). servescope's host time per step (`scheduler_core/timing/host_time.py`) cites it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from record import FakeModel, build_scheduler
from vllm.sampling_params import SamplingParams
from vllm.v1.request import Request

PROMPT_LEN = 256
CONFIG = {"max_model_len": 8192, "max_num_batched_tokens": 8192, "enable_chunked_prefill": True,
          "block_size": 16, "enable_prefix_caching": True, "num_gpu_blocks": 65536}


def time_decode_steps(batch_size: int, num_steps: int) -> list[float]:
    """Seconds of schedule() + update_from_output() for each of `num_steps` all-decode steps."""
    scheduler = build_scheduler({**CONFIG, "max_num_seqs": batch_size}, async_scheduling=False, speculative_config=None)
    model = FakeModel(None)
    for i in range(batch_size):
        params = SamplingParams(max_tokens=num_steps + 64, ignore_eos=True)
        # Distinct prompts: no prefix-cache hits, every request holds its own blocks.
        prompt = [(i * 7919 + j) % 1000 + 2 for j in range(PROMPT_LEN)]
        scheduler.add_request(Request(f"r{i}", prompt, params, None, arrival_time=i * 1e-6))
    while any(r.num_computed_tokens < r.num_prompt_tokens for r in scheduler.requests.values()):
        output = scheduler.schedule()
        scheduler.update_from_output(output, model.run(scheduler, output)[0])
    timings = []
    for _ in range(num_steps):
        start = time.perf_counter()
        output = scheduler.schedule()
        scheduled = time.perf_counter()
        model_output = model.run(scheduler, output)[0]  # the fake model: not vLLM's work, not timed
        updating = time.perf_counter()
        scheduler.update_from_output(output, model_output)
        timings.append((scheduled - start) + (time.perf_counter() - updating))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32, 64, 128, 256])
    parser.add_argument("--steps", type=int, default=400, help="decode steps timed per batch size")
    args = parser.parse_args()
    points = []
    print("| running requests | schedule() + update_from_output() per step, median (us) |")
    print("| ---: | ---: |")
    for n in args.batch_sizes:
        median_s = statistics.median(time_decode_steps(n, args.steps))
        points.append((n, median_s * 1e6))
        print(f"| {n} | {median_s * 1e6:.1f} |")
    if len(points) < 2:
        return
    slope, intercept = statistics.linear_regression([n for n, _ in points], [us for _, us in points])
    print(f"least squares: {intercept:.1f} us + {slope:.2f} us per running request")


if __name__ == "__main__":
    main()
