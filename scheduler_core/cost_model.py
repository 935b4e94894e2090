"""How long a step takes: a roofline over the step's batch, from the model's shape and the GPU's peaks.

Each step reads every weight once and does 2 FLOPs per parameter per token (the linear layers),
then for each request reads its cached KV and does attention over it. Each part takes the longer
of its compute time and its memory time at the achieved (not datasheet) rates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True)
class ModelSpec:
    """A Llama-shaped decoder: the fields of the calibration file's `config`."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int
    vocab: int
    wdtype: str = "bf16"
    kv_dtype: str = "bf16"

    @property
    def params_per_layer(self) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        out = self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.inter  # gate, up, down
        return qkv + out + mlp

    @property
    def num_params(self) -> int:
        return self.layers * self.params_per_layer + self.hidden * self.vocab

    @property
    def weight_bytes(self) -> int:
        return self.layers * self.params_per_layer * DTYPE_BYTES[self.wdtype] + self.hidden * self.vocab * 2

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of one token across all layers."""
        return 2 * self.layers * self.kv_heads * self.head_dim * DTYPE_BYTES[self.kv_dtype]


@dataclass(frozen=True)
class GpuSpec:
    name: str
    bf16_tflops: float
    fp8_tflops: float
    mem_bandwidth_gbps: float
    mem_gib: float
    pcie_gbps: float = 55.0

    def matmul_flops(self, dtype: str) -> float:
        return (self.fp8_tflops if dtype == "fp8" else self.bf16_tflops) * 1e12


@dataclass(frozen=True)
class Efficiency:
    """Achieved fraction of each peak, fitted to measured steps (see benchmarks/bench_cost_model.py)."""

    linear_compute: float = 0.70
    weight_read: float = 1.05
    attention_compute: float = 0.35
    kv_read: float = 0.80
    step_overhead_s: float = 0.0003


class CostModel:
    """Step time of a batch on `tp` GPUs of one kind, for one model."""

    def __init__(self, model: ModelSpec, gpu: GpuSpec, tp: int = 1, efficiency: Efficiency = Efficiency()):
        self.model = model
        self.gpu = gpu
        self.tp = tp
        self.efficiency = efficiency
        eff = efficiency
        self._linear_flops_per_token = 2 * model.layers * model.params_per_layer / tp
        self._lm_head_flops_per_seq = 2 * model.hidden * model.vocab / tp
        self._weight_s = model.weight_bytes / tp / (gpu.mem_bandwidth_gbps * 1e9 * eff.weight_read)
        self._linear_rate = gpu.matmul_flops(model.wdtype) * eff.linear_compute
        self._attention_rate = gpu.bf16_tflops * 1e12 * eff.attention_compute
        # Q.K^T and A.V: 2 matmuls x 2 FLOPs per (query token, key token, head dim, head).
        self._attention_flops_per_pair = 4 * model.layers * model.heads * model.head_dim / tp
        self._kv_s_per_token = model.kv_bytes_per_token / tp / (gpu.mem_bandwidth_gbps * 1e9 * eff.kv_read)

    def step_time(self, chunks: Iterable[tuple[int, int]], num_sampled: int) -> tuple[float, dict[str, float]]:
        """Seconds for one step; `chunks` are (new tokens, cached tokens before) per request."""
        num_tokens = 0
        attention_pairs = 0
        kv_tokens_read = 0
        for num_new, num_cached in chunks:
            num_tokens += num_new
            # Causal attention: new token i sees the cached tokens and the new ones before it.
            attention_pairs += num_new * num_cached + num_new * (num_new + 1) // 2
            kv_tokens_read += num_cached + num_new
        if num_tokens == 0:
            return 0.0, {}
        linear_flops = num_tokens * self._linear_flops_per_token + num_sampled * self._lm_head_flops_per_seq
        linear_s = max(linear_flops / self._linear_rate, self._weight_s)
        attention_s = max(
            attention_pairs * self._attention_flops_per_pair / self._attention_rate,
            kv_tokens_read * self._kv_s_per_token,
        )
        overhead_s = self.efficiency.step_overhead_s
        breakdown = {"linear": linear_s, "attention": attention_s, "overhead": overhead_s}
        return linear_s + attention_s + overhead_s, breakdown

    def swap_time(self, num_blocks: int, block_size: int) -> float:
        """PCIe time to move `num_blocks` KV blocks between GPU and CPU memory."""
        return num_blocks * block_size * self.model.kv_bytes_per_token / self.tp / (self.gpu.pcie_gbps * 1e9)


LLAMA_3_1_8B = ModelSpec("llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, "bf16")
H200 = GpuSpec("h200", bf16_tflops=796.3, fp8_tflops=1488.3, mem_bandwidth_gbps=2696.1, mem_gib=141.0)
