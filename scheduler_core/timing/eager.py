"""Eager mode's cost: each layer's kernels launched from Python every step, with no CUDA graph to
replay them in one call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EagerLaunch:
    """Seconds a step spends on kernel launches that CUDA graphs would have saved, per layer.

    Measured, not fitted: vLLM PR #1440 (github.com/vllm-project/vllm/pull/1440, October 2023, the
    first CUDA-graph patch for Llama) timed Llama-2-7B at batch size 1, 5 prompt and 100 output
    tokens: 1.2 s eager, 1.05 s with one CUDA graph per batch size, 1.5 ms per decode step over the
    model's 32 layers, 47 us per layer. The same order as llama.cpp's 14% at batch 1 on an H100
    (llama.cpp issue #6763). It is charged on every step whatever its batch; the PR saw the gain
    vanish at large batches, where the kernels run long enough to hide their launches, so there
    it is an upper bound.
    """

    per_layer_s: float = 1.5e-3 / 32

    def seconds(self, num_layers: int) -> float:
        return self.per_layer_s * num_layers
