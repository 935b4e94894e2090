"""The naive loop: static batches over contiguous KV, as a PyTorch serving loop ran before vLLM.

What "3-4x a naive PyTorch loop" compares against is not vLLM's engine batched statically: such a
loop reserved a contiguous KV buffer of `max_model_len` tokens for every sequence (so the batch
holds what the pool fits at the longest length, not what the tokens fill), shared nothing between
prompts, and launched each layer's kernels from Python every step (no CUDA graphs). The config
demands the first two (`kv_allocator="contiguous"`, prefix caching off); the simulation charges the
third per step (`timing.eager.EagerLaunch`). Batching is `StaticScheduler`'s.
"""

from __future__ import annotations

from .static import StaticScheduler


class NaiveScheduler(StaticScheduler):
    name = "naive"
