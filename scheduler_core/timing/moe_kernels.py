"""What vLLM's fused-MoE and block-FP8 kernels really cost: measured kernel times, not a roofline.

A dense model's linear layers run as large cuBLAS GEMMs near the roofline that the H200 calibration
fits. Two kinds of kernel that MoE checkpoints add do not:

- **The fused MoE layer** (vLLM's Triton `fused_moe`: top-k routing, `moe_align_block_size`'s token
  permutation, the gate/up grouped GEMM, the activation, the down grouped GEMM, the weighted sum
  back) costs a fixed time per layer however few tokens it has, reads the touched experts below the
  dense GEMMs' bandwidth, and computes far below the tensor cores' rate: each expert sees only its
  share of the tokens (a small-M GEMM), tiled per expert.
- **Block-FP8 linear layers** (DeepSeek-V3/R1's and Qwen3-FP8's weights with a scale per 128 x 128
  block: vLLM's `W8A8BlockFp8LinearOp`, CUTLASS, Triton or DeepGEMM) are latency-bound at decode
  sizes: a few-token GEMM takes about the same 10-35 us whatever its M, after a launch of about 4 us
  that quantizes its input in groups of 128.

The figures are H100 kernel benchmarks (the published ones): times are kept as measured, rates as
fractions of the GPU's own ceilings so that other GPUs scale with them.
"""

from __future__ import annotations

from dataclasses import dataclass

# vLLM PR #24700 (mgoin, 2025-09-11, "Benchmarks on H100"), `benchmarks/kernels/benchmark_moe.py
# --model=Qwen/Qwen3-30B-A3B -tp=1 --dtype=fp8_w8a8` on main (CUDA-graph timed, random routing):
# 44.54 us at 1 token, 59.94 at 2, 90.46 at 4, 129.77 at 8, 185.40 at 16, 238.37 at 32, 262.73 at 64,
# 273.72 at 128; 911.64 at 2048, 1279.17 at 3072, 1647.57 at 4096. Each expert is 3 x 2048 x 768
# fp8 weights (4.72 MB) and T tokens touch E[distinct](T) = 128 (1 - (1 - 8/128)^T) of them
# (moe.py): 8 experts (37.7 MB) at T = 1, all 128 (604 MB) from T = 64. Derived: the line through
# T = 1 and T = 128 is 29.2 us + bytes / 2.47 TB/s, and it lands within 3% of every point between
# but T = 4 (85 us against 90.5: -6%). From 2048 to 4096 tokens (128 -> 256 tokens per expert) the
# kernel adds 2048 x 8 x 3 x 2048 x 768 x 2 = 155 GFLOP in 736 us: 210 TFLOP/s.
# The same PR's `--model=mistralai/Mixtral-8x7B-Instruct-v0.1 -tp=2` (bf16, tuned config; experts of
# 3 x 4096 x 7168 bf16 = 176 MB per GPU, 8 of them, top-2): 144.03 us at 1 token (2 experts), 229.28
# at 2 (3.5), 351.10 at 4 (5.5), 434.98 at 8 (7.2), 487.35 at 32 (all 8). Derived: 29.7 us + bytes /
# 3.08 TB/s (within 3% of every point). The two fixed parts agree (29.2 and 29.7 us: routing,
# alignment and launches, not bytes); 16-bit experts stream faster than 8-bit ones.
FUSED_MOE_LAYER_S = 29.2e-6
# Both rates against the H100 preset's copy bandwidth (1.88 TB/s: 3.35 TB/s x the H200 calibration's
# copy fraction, presets.py), the unit GpuSpec.mem_bandwidth is in; 8 bits or fewer (fp8, MXFP4,
# int4: no published figure apart for the 4-bit kernels) read at the fp8 rate.
FUSED_MOE_READ_PER_COPY = {16: 3.08e12 / 1.8817e12, 8: 2.47e12 / 1.8817e12}
# 210 TFLOP/s against the H100 preset's bf16 ceiling (796 TFLOP/s). The Triton kernel does not reach
# the fp8 tensor cores' rate (1488 TFLOP/s there) either: the rate is the kernel's, whatever the format.
FUSED_MOE_FLOPS_PER_BF16 = 210e12 / 796.3e12

# Block-FP8 GEMMs at decode sizes. sglang PR #5820 (BBuf, "cutlass 3.9 supported to improve
# fp8_blockwise_gemm"), the `vllm` column (vLLM's CUTLASS kernel) of its DeepSeek-V3 shapes, M = 1:
# N=3072 K=1536 (4.72 MB) 14.53 us, N=7168 K=16384 (117 MB) 92.64 us. Derived: 11.2 us + bytes at
# 1.44 TB/s. Cross-check, vLLM PR #23280 (mgoin, H100): N=2112 K=7168 (15.1 MB) at M = 1-16 runs at
# 1.30 TFLOP/s in Triton (23.3 us) and 0.89 in CUTLASS (33.9 us); the line gives 21.7 us. The GPU of
# #5820 is not stated; the two-point line is taken as Hopper's. At large M the same kernel reaches
# 490 TFLOP/s (PR #23280, CUTLASS, M = 8192: 489.7) where torch's bf16 GEMM reaches 666-716.
BLOCK_FP8_GEMM_S = 11.2e-6
# Each of those GEMMs quantizes its input first, one more launch that the GEMM timings above leave out
# (their inputs come quantized): vLLM's `apply_w8a8_block_fp8_linear` (quantization/utils/fp8_utils.py,
# every path: DeepGEMM, CUTLASS, Triton) runs `per_token_group_quant_fp8` on the bf16 activations, a
# scale per 128 values of each token, before the GEMM. vLLM PR #25427 (mgoin, 2025-09-22, its "Before"
# H100 table: the CUDA column of benchmarks/kernels/bench_per_token_quant_fp8.py --group-sizes 128,
# bf16, column-major scales) times that kernel at 3.79 us for one token of DeepSeek-V3/R1's hidden size
# (7168) and 4.25 us for 16 (3.35 and 4.11 at 2048): launch-bound at decode sizes. Charged per launch
# at the one-token 7168 figure; the 3 bytes per input value it moves at prefill sizes are not.
BLOCK_FP8_INPUT_QUANT_S = 3.79e-6
# 1.44 TB/s and 490 TFLOP/s as fractions of an H100's copy bandwidth (1.88 TB/s) and bf16 ceiling (796).
BLOCK_FP8_READ_PER_COPY = 1.44e12 / 1.8817e12
BLOCK_FP8_FLOPS_PER_BF16 = 489.7e12 / 796.3e12

# The block-FP8 figures are Hopper kernels' (CUTLASS SM90, Triton, DeepGEMM SM90); Blackwell runs its
# own (DeepGEMM and CUTLASS SM100, FlashInfer), with no published decode-size times here, and keeps the
# roofline of the format (weight_formats.matmul_flops).
BLOCK_FP8_GENERATIONS = ("hopper",)

# Blackwell runs other MoE kernels (FlashInfer's TRT-LLM and CUTLASS MoE, DeepGEMM): no published
# rates for them here, so there the experts keep the dense roofline (their fixed cost stays).
TRITON_MOE_GENERATIONS = ("ampere", "ada", "hopper")


@dataclass(frozen=True)
class FusedMoeKernel:
    """The fused-MoE layer on one GPU: a fixed time per layer per step, and the touched experts'
    bytes and FLOPs at the kernel's own rates (a smooth roofline between them, as the dense layers;
    None: the dense rates). The Triton `fused_moe` figures stand for every pre-Blackwell MoE kernel
    vLLM picks (gpt-oss's MXFP4 `triton_kernels` matmul, Marlin MoE on Ampere): none has its own."""

    read_bytes_per_s: float | None
    flops_per_s: float | None
    layer_s: float = FUSED_MOE_LAYER_S

    @classmethod
    def on(cls, gpu, expert_bits: int) -> "FusedMoeKernel":
        if gpu.generation not in TRITON_MOE_GENERATIONS:
            return cls(None, None)
        read = FUSED_MOE_READ_PER_COPY[16 if expert_bits >= 16 else 8]
        return cls(gpu.mem_bandwidth * read, gpu.bf16_flops * FUSED_MOE_FLOPS_PER_BF16)


@dataclass(frozen=True)
class BlockFp8Linears:
    """The block-FP8 linear layers outside the experts on one GPU: each GEMM launch costs a fixed
    latency, and the quantization of its input another; the weights stream at the kernel's decode
    bandwidth and the FLOPs run at its large-M rate."""

    read_bytes_per_s: float
    flops_per_s: float
    gemm_s: float = BLOCK_FP8_GEMM_S
    input_quant_s: float = BLOCK_FP8_INPUT_QUANT_S

    @property
    def launch_s(self) -> float:
        """The fixed time of one block-FP8 linear layer: its input's group quantization, then its GEMM."""
        return self.input_quant_s + self.gemm_s

    @classmethod
    def on(cls, gpu) -> "BlockFp8Linears":
        return cls(gpu.mem_bandwidth * BLOCK_FP8_READ_PER_COPY, gpu.bf16_flops * BLOCK_FP8_FLOPS_PER_BF16)
