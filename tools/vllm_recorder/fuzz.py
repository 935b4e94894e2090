"""Differential fuzz: random small traces, each replayed by servescope and run through vLLM's own
scheduler (record.py), compared byte for byte. Tight pools, chunking on and off, prefix caching
with shared prefixes, priority, long-prefill caps, arrivals over the first steps; with --hybrid,
several KV cache groups over the pool (full attention with sliding windows, chunked local
attention or a Mamba state group).

Run with the recorder's venv (README.md); servescope's core is standard library only and is
imported from this checkout:
    nice -n 10 /tmp/vllm-venv/bin/python tools/vllm_recorder/fuzz.py [--traces 2000] [--seed 0] [--async-scheduling] [--hybrid]

Prints how many traces were compared, their steps, how many preempted, and every trace whose logs
differ (kept in --keep, default /tmp/servescope-fuzz, to replay and record again by hand).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

from record import record_lines

from scheduler_core.errors import ConfigError  # record.py put this checkout on the path
from scheduler_core.sim.replay import replay
from scheduler_core.sim.simulation import SimulationStalled


def random_trace(rng: random.Random, max_blocks: int) -> dict:
    chunked = rng.random() < 0.75
    max_model_len = rng.choice([128, 256, 512])
    caching = rng.random() < 0.5
    priority = rng.random() < 0.3
    config = {"block_size": 16, "num_gpu_blocks": rng.randint(4, max_blocks), "max_num_seqs": rng.choice([1, 2, 4, 8, 16]),
              "max_num_batched_tokens": rng.choice([32, 64, 128, 256]) if chunked else max_model_len,
              "max_model_len": max_model_len, "enable_chunked_prefill": chunked, "enable_prefix_caching": caching,
              "long_prefill_token_threshold": rng.choice([0, 0, 0, 32])}
    if priority:
        config["policy"] = "priority"
    prefixes = [[rng.randint(2, 900) for _ in range(rng.choice([16, 32, 40]))] for _ in range(2)]
    requests = []
    for i in range(rng.randint(2, 14)):
        prompt = [rng.randint(2, 900) for _ in range(rng.randint(1, min(120, max_model_len - 1)))]
        if caching and rng.random() < 0.5:
            prompt = (rng.choice(prefixes) + prompt)[: max_model_len - 1]
        entry = {"id": f"r{i}", "arrival_step": rng.choice([0, 0, 1, 2, 3, 5, 8]), "prompt_token_ids": prompt,
                 "max_tokens": rng.choice([1, 1, 2, 3, 8, 20])}
        if priority:
            entry["priority"] = rng.choice([0, 1, 2])
        requests.append(entry)
    return {"config": config, "requests": requests}


def random_groups(rng: random.Random, caching: bool) -> list[dict]:
    """Full attention plus one to three other groups, in random order (Mamba only without prefix
    caching, the one way servescope models it); small windows, so blocks leave them often."""
    groups = [{"kind": "full_attention"}]
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["sliding_window", "sliding_window", "chunked_local"] + ([] if caching else ["mamba"]))
        groups.append({"kind": kind} if kind == "mamba" else {"kind": kind, "window": rng.choice([5, 16, 20, 33, 48])})
    rng.shuffle(groups)
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-blocks", type=int, default=24, help="pools of 4 to this many blocks")
    parser.add_argument("--async-scheduling", action="store_true")
    parser.add_argument("--hybrid", action="store_true", help="add random KV cache groups to every trace")
    parser.add_argument("--keep", type=Path, default=Path("/tmp/servescope-fuzz"))
    args = parser.parse_args()
    args.keep.mkdir(parents=True, exist_ok=True)
    compared = steps = preempting = 0
    differing = []
    seed = args.seed
    while compared < args.traces:
        rng = random.Random(seed)
        trace = random_trace(rng, args.max_blocks)
        if args.hybrid:
            trace["config"]["kv_cache_groups"] = random_groups(rng, trace["config"]["enable_prefix_caching"])
        seed += 1
        try:
            ours = "".join(json.dumps(line, separators=(", ", ": ")) + "\n"
                           for line in replay(trace, async_scheduling=args.async_scheduling))
        except (ConfigError, SimulationStalled):
            continue  # refused up front, or can never finish: replay says so instead of a log
        path = args.keep / f"trace_{seed - 1}.json.gz"
        with gzip.open(path, "wt") as f:
            json.dump(trace, f)
        theirs = record_lines(str(path), args.async_scheduling)
        compared += 1
        steps += ours.count("\n")
        preempting += any(json.loads(line)["preempted"] for line in ours.splitlines())
        if ours == theirs:
            path.unlink()
        else:
            differing.append(path)
    kind = f"{'hybrid ' if args.hybrid else ''}traces ({'async' if args.async_scheduling else 'sync'} loop)"
    print(f"{compared} {kind}, {steps:,} steps, "
          f"{preempting} with preemptions: {compared - len(differing)} byte-identical to vLLM")
    for path in differing:
        print(f"DIFFERENT: {path}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
