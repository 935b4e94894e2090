"""Write the hybrid-model traces of tests/fixtures/vllm_oracle_hybrid/: existing recorded traces
(their requests and engine settings) with several KV cache groups sharing the pool.

Standard library only; run from the repository root with any Python:
    python tools/vllm_recorder/hybrid_traces.py
"""

from __future__ import annotations

import gzip
import json
import random

from trace_files import FIXTURES, write_trace

OUT = FIXTURES / "vllm_oracle_hybrid"
FULL = {"kind": "full_attention"}


def sliding(window: int) -> dict:
    return {"kind": "sliding_window", "window": window}


# name -> (source trace, KV cache groups, what it exercises)
HYBRID_TRACES = {
    "sw_a_chunked": ("vllm_oracle/trace_a_ample_chunked", [FULL, sliding(64)], "chunked prefill, ample pool"),
    "sw_b_pressure": ("vllm_oracle/trace_b_tight_preempt", [FULL, sliding(64)], "memory pressure: preemptions"),
    "sw_c_prefix": ("vllm_oracle/trace_c_prefix_cache", [FULL, sliding(64)], "prefix caching"),
    "sw_c_prefix_window40_first": ("vllm_oracle/trace_c_prefix_cache", [sliding(40), FULL],
                                   "prefix caching, a window not a multiple of the block, listed first"),
    "sw_h_prefix_pressure": ("vllm_oracle_more/trace_h_prefix_tight", [FULL, sliding(64)],
                             "prefix caching under memory pressure"),
    "sw2_h_prefix_pressure": ("vllm_oracle_more/trace_h_prefix_tight", [FULL, sliding(64), sliding(32)],
                              "two window sizes: the fixed-point search over three kinds"),
    "sw_l_small_blocks": ("vllm_oracle_more/trace_l_small_blocks", [FULL, sliding(20)], "8-token blocks, window 20"),
    "cl_a_chunked": ("vllm_oracle/trace_a_ample_chunked", [FULL, {"kind": "chunked_local", "window": 128}],
                     "chunked local attention, chunked prefill"),
    "cl_h_prefix_pressure": ("vllm_oracle_more/trace_h_prefix_tight", [FULL, {"kind": "chunked_local", "window": 64}],
                             "chunked local attention, prefix caching under pressure"),
    "mamba_a_chunked": ("vllm_oracle/trace_a_ample_chunked", [{"kind": "mamba"}, FULL], "a state group listed first"),
    "mamba_b_pressure": ("vllm_oracle/trace_b_tight_preempt", [FULL, {"kind": "mamba"}], "state group under pressure"),
}


def decode_growth_trace(seed: int, prefix_caching: bool) -> dict:
    """Short prompts and long outputs arriving over the first steps: admission is easy, the decodes'
    growth is what runs the pool out, so running requests get preempted. With prefix caching, the
    prompts share one of three 96-token system prefixes."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(2, 30_000) for _ in range(96)] for _ in range(3)]
    requests = []
    for i in range(24):
        tail = [rng.randrange(2, 30_000) for _ in range(rng.randrange(40, 300))]
        prompt = (prefixes[i % 3] + tail) if prefix_caching else tail
        requests.append({"id": f"r{i}", "arrival_step": rng.randrange(0, 40), "prompt_token_ids": prompt,
                         "max_tokens": rng.randrange(200, 500)})
    config = {"block_size": 16, "num_gpu_blocks": 140, "max_num_seqs": 16, "max_num_batched_tokens": 256,
              "max_model_len": 2048, "enable_chunked_prefill": True, "enable_prefix_caching": prefix_caching,
              "long_prefill_token_threshold": 0}
    return {"config": config, "requests": requests}


# name -> (seed, prefix caching, KV cache groups, what it exercises)
GROWTH_TRACES = {
    "sw_p_decode_growth": (1, False, [FULL, sliding(64)], "decode growth runs the pool out: preemptions"),
    "sw_q_prefix_growth": (2, True, [FULL, sliding(48)], "shared prefixes and preemptions"),
    "mamba_p_decode_growth": (1, False, [FULL, {"kind": "mamba"}], "a state group, preemptions"),
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, (seed, prefix_caching, groups, _) in GROWTH_TRACES.items():
        trace = decode_growth_trace(seed, prefix_caching)
        trace["config"]["kv_cache_groups"] = groups
        write_trace(OUT, name, trace)
    for name, (source, groups, _) in HYBRID_TRACES.items():
        with gzip.open(FIXTURES / f"{source}.json.gz", "rt") as f:
            trace = json.load(f)
        trace["config"]["kv_cache_groups"] = groups
        write_trace(OUT, name, trace)


if __name__ == "__main__":
    main()
