"""How a checkpoint stores a linear layer's weights, and the tensor-core rate its matmul runs at.

Bytes are as stored on the GPU after loading: the packed weights plus their scales (and zero points),
per `rows x cols` matrix (rows = output channels, cols = input channels). The rate is the GPU's
achievable ceiling for the precision vLLM 0.33.0's kernel computes in: a format whose activations
stay 16-bit (weight-only: AWQ, GPTQ, w4a16, and FP8/FP4 on GPUs without those tensor cores, where
vLLM runs its Marlin kernels) runs at the bf16 rate; it still reads fewer bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class WeightFormat:
    """One storage format: bits per weight, one scale of `scale_bytes` per `group` weights along a
    row (group 0: one per output channel, -1: one per tensor, a pair: a 2-D block), and the precision
    the matmul computes in where the GPU has tensor cores for it."""

    name: str
    bits: int
    scale_bytes: float = 0.0
    group: int | tuple[int, int] = 0
    compute: str = "bf16"  # "bf16", "fp8", "int8" or "fp4"
    per_column_bytes: float = 0.0  # GPTQ's g_idx: an int32 per input channel

    def matrix_bytes(self, rows: int, cols: int) -> float:
        weights = rows * cols * self.bits / 8
        if self.group == -1:
            scales = self.scale_bytes
        elif self.group == 0:
            scales = rows * self.scale_bytes
        elif isinstance(self.group, tuple):
            block_rows, block_cols = self.group
            scales = -(-rows // block_rows) * -(-cols // block_cols) * self.scale_bytes
        else:
            scales = rows * -(-cols // self.group) * self.scale_bytes
        return weights + scales + cols * self.per_column_bytes


FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    WeightFormat("bf16", 16),
    WeightFormat("fp16", 16),
    # FP8 e4m3 with an fp32 scale per output channel (compressed-tensors FP8-dynamic, the fp8 presets).
    WeightFormat("fp8", 8, 4, 0, "fp8"),
    WeightFormat("fp8-per-tensor", 8, 4, -1, "fp8"),
    # DeepSeek-V3/R1 and Qwen3-FP8: an fp32 scale per 128 x 128 block (weight_block_size).
    WeightFormat("fp8-block", 8, 4, (128, 128), "fp8"),
    # OCP MX: 4-bit e2m1 with a shared e8m0 (one byte) scale per 32 weights (gpt-oss's experts).
    WeightFormat("mxfp4", 4, 1, 32, "fp4"),
    # NVIDIA's: an e4m3 scale per 16 weights and an fp32 global scale per tensor (the latter neglected).
    WeightFormat("nvfp4", 4, 1, 16, "fp4"),
    # AWQ: fp16 scales and 4-bit zero points per group of 128 input channels.
    WeightFormat("int4-awq", 4, 2.5, 128, "bf16"),
    # GPTQ: the same, plus g_idx (the group of each input channel, int32).
    WeightFormat("int4-gptq", 4, 2.5, 128, "bf16", per_column_bytes=4),
    # compressed-tensors pack-quantized w4a16: symmetric, a bf16 scale per group of 128.
    WeightFormat("w4a16", 4, 2, 128, "bf16"),
    # compressed-tensors w8a8 int8: an fp32 scale per output channel, int8 activations.
    WeightFormat("w8a8-int8", 8, 4, 0, "int8"),
)}


def weight_format(name: str) -> WeightFormat:
    if name not in FORMATS:
        raise ConfigError("model.quantization_config", f"weight format {name!r} is not modelled; "
                                                        f"expected one of {', '.join(FORMATS)}")
    return FORMATS[name]


def matmul_flops(gpu, fmt: WeightFormat) -> float:
    """The rate a matmul of this format runs at on `gpu` (a GpuSpec): its own tensor cores where the
    GPU has them, else what vLLM falls back to. FP4 tensor cores exist from Blackwell on only; before
    it vLLM logs "Your GPU does not have native support for FP4 computation ... Weight-only FP4
    compression will be used leveraging the Marlin kernel" and computes in bf16. FP8 without FP8
    tensor cores (Ampere) is FP8 Marlin, weight-only, in bf16 too. INT8 runs on INT8 tensor cores."""
    if fmt.compute == "fp4" and gpu.fp4_flops:
        return gpu.fp4_flops
    if fmt.compute == "int8" and gpu.int8_flops:
        return gpu.int8_flops
    if fmt.compute == "fp8":
        return gpu.fp8_flops  # equal to bf16_flops on GPUs without fp8 tensor cores
    return gpu.bf16_flops
