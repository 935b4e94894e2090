"""Write the traces of tests/fixtures/vllm_oracle_spec_prefix/: speculative decoding meets prefix
caching (EAGLE's last-block drop and 0.33's lookahead hashes, under shared prefixes and resends)
and padded 1 + K admission (a prompt whose every token but one is cached).

Standard library only; run from the repository root with any Python:
    python tools/vllm_recorder/spec_prefix_traces.py
"""

from __future__ import annotations

import random

from trace_files import FIXTURES, write_trace

OUT = FIXTURES / "vllm_oracle_spec_prefix"
CONFIG = {"block_size": 16, "max_num_seqs": 16, "max_model_len": 2048, "enable_chunked_prefill": True,
          "enable_prefix_caching": True, "long_prefill_token_threshold": 0}


def tokens(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(2, 30_000) for _ in range(n)]


def shared_prefix_trace(seed: int, num_gpu_blocks: int, budget: int) -> dict:
    """Prompts sharing one of two system prefixes (64 and 80 tokens: a multiple of the block and
    one past it), about a third of them resent whole later (the resend hits all but the last
    block, or under the drop one block less), arriving over the first 40 steps."""
    rng = random.Random(seed)
    prefixes = [tokens(rng, 64), tokens(rng, 81)]
    requests = []
    for i in range(20):
        prompt = prefixes[i % 2] + tokens(rng, rng.randrange(1, 90))
        requests.append({"id": f"r{i}", "arrival_step": rng.randrange(0, 30), "prompt_token_ids": prompt,
                         "max_tokens": rng.randrange(4, 40)})
    for i in range(0, 20, 3):
        resent = requests[i]
        requests.append({**resent, "id": f"{resent['id']}-again", "arrival_step": resent["arrival_step"] + rng.randrange(5, 30)})
    return {"config": {**CONFIG, "num_gpu_blocks": num_gpu_blocks, "max_num_batched_tokens": budget}, "requests": requests}


def padded_admission_trace() -> dict:
    """Prompts of 16n + 1 tokens sent twice: the second copy finds all but its last token cached
    and is admitted with one token to compute, which vLLM pads to 1 + K when the step runs no
    prefill chunk (c0-again, c1-again), and leaves at 1 when one does (c2-again, beside the long
    prompt p's chunks)."""
    rng = random.Random(7)
    c0, c1, c2 = tokens(rng, 33), tokens(rng, 49), tokens(rng, 65)
    requests = [
        {"id": "c0", "arrival_step": 0, "prompt_token_ids": c0, "max_tokens": 12},
        {"id": "c0-again", "arrival_step": 4, "prompt_token_ids": c0, "max_tokens": 6},
        {"id": "c1", "arrival_step": 5, "prompt_token_ids": c1, "max_tokens": 10},
        {"id": "c1-again", "arrival_step": 8, "prompt_token_ids": c1, "max_tokens": 6},
        {"id": "c2", "arrival_step": 10, "prompt_token_ids": c2, "max_tokens": 6},
        {"id": "p", "arrival_step": 13, "prompt_token_ids": tokens(rng, 300), "max_tokens": 4},
        {"id": "c2-again", "arrival_step": 14, "prompt_token_ids": c2, "max_tokens": 6},
        # Alone in the engine, its prompt cached: padded too (vLLM needs company or a hit; it has a hit).
        {"id": "c0-third", "arrival_step": 60, "prompt_token_ids": c0, "max_tokens": 3},
    ]
    return {"config": {**CONFIG, "num_gpu_blocks": 200, "max_num_batched_tokens": 64}, "requests": requests}


TRACES = {
    "shared_prefix": lambda: shared_prefix_trace(3, 400, 256),
    "shared_prefix_tight": lambda: shared_prefix_trace(4, 40, 128),
    "padded_admission": padded_admission_trace,
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, make in TRACES.items():
        write_trace(OUT, name, make())


if __name__ == "__main__":
    main()
