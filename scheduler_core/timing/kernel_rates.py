"""What vLLM's kernels reach on each GPU, as ratios to the H200 calibration, each with its source.

The cost model's efficiencies are fitted to one H200 run (calibration.py, benchmarks/bench_cost_model.py)
and apply there exactly as fitted: the H200's ceilings are that run's own, and nothing here changes
them. Another GPU's ceiling is the H200's scaled by what a published benchmark measured on that GPU
against the same benchmark on an H200 (or against what the calibration measured), not by its
datasheet alone. Where no source exists the datasheet rule of presets.gpu_from_datasheet stays (its
peak times the fraction the H200 achieves of its own), and the entry says so.

Three kinds of ceiling:
- dense GEMM: `gemm_ratio`, from one torch.matmul table that ran the same script on every GPU;
- prefill attention: `AttentionKernels.prefill_tflops`, the bf16 rate of the backend vLLM picks there
  (FlashAttention 3 on Hopper), by head dimension;
- an fp8 KV cache: `Fp8Attention`, what vLLM's FP8 backend does to the decode read and the prefill
  math, by head dimension and release (FlashAttention 3 on Hopper, FlashInfer on Blackwell; Ampere
  and Ada have no FP8 attention kernel: the cache is dequantized and the math runs in bf16).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.releases import LATEST, release_key

# --- dense GEMM -------------------------------------------------------------------------------------
# zzc0721/torch-performance-test-data, database.md (commit 07858687): user-submitted torch.matmul runs of
# square bf16 sizes 1024-10240, the best size's TFLOP/s, one script on every GPU (so the ratios between
# GPUs are consistent), against each GPU's dense bf16 datasheet peak. Its H200 (790.3) is the H200
# calibration's own matmul (796.3) within 1%.
MATMUL_TABLE = {
    # GPU: (measured TFLOP/s, datasheet dense bf16 TFLOP/s)
    "h200": (790.29, 989),
    "h100-sxm": ((789.24 + 783.66) / 2, 989),  # H100 80GB HBM3: two submitters, the mean
    "b200": (1696.03, 2250),  # B200 180GB, GCP a4-highgpu-8g, PyTorch 2.8.0
    "a100-80g": (264.53, 312),  # A100 SXM4 80GB, PyTorch 2.8.0 + CUDA 12.8
    "a100-40g": (246.33, 312),  # A100 40GB, PyTorch 2.2.0
    "l40s": (269.15, 362),
    "h20": (141.86, 148),
}


# A form factor the table lacks: its measured sibling times NVIDIA's own relative rating. NVIDIA's A100 PCIe
# launch (June 2020) rated the PCIe card at 90% of the SXM4 module's performance at the same peaks and clocks,
# the power limit being the difference (250 W against 400 W): hardwaretimes.com/nvidia-launches-pcie-variant-
# of-the-a100-ampere-gpu-accelerator, "Relative Performance (SXM Version) 90%", "as per NVIDIA's official
# documentation". The 80GB PCIe card is rated 300 W, so 90% is the low end for it. Memory bandwidth is not
# scaled (HBM clocks do not follow the power limit): decode keeps the datasheet's 1,935 GB/s.
FORM_FACTOR_RATIO = {"a100-80g-pcie": ("a100-80g", 0.90)}


def gemm_ratio(name: str) -> float:
    """This GPU's matmul fraction of its datasheet over the H200's, in the same table; 1 for a GPU the
    table lacks (the datasheet rule: it achieves the H200's fraction). The GPU's fp8 and fp4 tensor
    cores are taken to keep the same ratio (no FP8 GEMM figure on these GPUs from one consistent
    source; on the H100 cutlass issue #1662 and the calibration used different cuBLAS releases)."""
    if name in FORM_FACTOR_RATIO:
        sibling, relative = FORM_FACTOR_RATIO[name]
        return gemm_ratio(sibling) * relative
    if name not in MATMUL_TABLE:
        return 1.0
    measured, datasheet = MATMUL_TABLE[name]
    h200_measured, h200_datasheet = MATMUL_TABLE["h200"]
    return (measured / datasheet) / (h200_measured / h200_datasheet)


# --- fp8 KV cache -----------------------------------------------------------------------------------
# The vLLM blog post 'The State of FP8 KV-Cache and Attention Quantization in vLLM' (2026-04-22,
# github.com/vllm-project/vllm-project.github.io _posts/2026-04-22-fp8-kvcache.md): vllm bench serve at
# concurrency 1, inputs 256-125k, fitted `ITL = slope x input + intercept`; the slope is what one more
# cached token costs to read, so fp8's slope over bf16's is the fp8 read's cost per token against the
# bf16 one's (0.5 would be bytes alone).
# The post's improvements (two-level accumulation, FP8 decode tiles, --kv-cache-dtype-skip-layers) are
# all in 0.19.0: vllm#33695's `kv_cache_dtype_skip_layers` first appears there (read in the released
# wheels). Releases before it take the post's 'before (v0.10.2)' figures (its Table 3).
FP8_DECODE_TUNED = "0.19.0"


@dataclass(frozen=True)
class Fp8Attention:
    """What one backend's FP8 attention costs against its bf16 attention, by head dimension: the decode
    read's time per cached token (`decode_cost`, before and from FP8_DECODE_TUNED) and the prefill
    math's speed (`prefill_speed`). Tuples of (head dim, ratio); a head dim takes the first entry at
    or above it, else the last."""

    backend: str
    decode_cost: tuple[tuple[int, float], ...] = ()
    decode_cost_before_tuning: tuple[tuple[int, float], ...] = ()
    prefill_speed: tuple[tuple[int, float], ...] = ()

    def read_speed(self, head_dim: int, vllm_version: str) -> float:
        """The fp8 read's bytes per second over the bf16 read's: 0.5 / (fp8 slope / bf16 slope)."""
        table = self.decode_cost
        if self.decode_cost_before_tuning and release_key(vllm_version) < release_key(FP8_DECODE_TUNED):
            table = self.decode_cost_before_tuning
        return 0.5 / _by_head_dim(table, head_dim) if table else 1.0

    def compute_speed(self, head_dim: int) -> float:
        return _by_head_dim(self.prefill_speed, head_dim) if self.prefill_speed else 1.0


def _by_head_dim(table: tuple[tuple[int, float], ...], head_dim: int) -> float:
    for dim, value in table:
        if head_dim <= dim:
            return value
    return table[-1][1]


# Ampere and Ada: no FP8 attention kernel in vLLM there (FlashAttention 3's fp8 KV is Hopper-only,
# flash_attn_supports_kv_cache_dtype in vllm/v1/attention/backends/fa_utils.py); the cache is stored in
# fp8 and dequantized, the math runs in bf16. No published slope: the bytes halve and nothing else
# changes. vLLM issue #42058 (A100-80GB, vLLM 0.26.0, Qwen3-8B, concurrency 8) measured +0.4 to +5.5%
# decode and -2.5 to -4.9% prefill from fp8 KV, the size of what halving the bytes gives there.
DEQUANTIZED = Fp8Attention("fp8 KV dequantized to bf16 (no FP8 attention kernel)")

# Hopper, FlashAttention 3 (vLLM's fork) running QK^T and PV in FP8:
# - decode, from 0.19.0: Llama-3.1-8B (head dim 128) slope 2.37e-05 vs 4.37e-05 ms/token (54%);
#   gpt-oss-20b (head dim 64) 7.14e-06 vs 8.94e-06 (80%); gemma-4-E2B (head dim 256) 3.60e-05 vs 5.30e-05
#   (68%). Before (v0.10.2, Table 3): 63% at 128, 96% at 64 (no figure at 256: the later one).
# - prefill: two-level accumulation (flash-attention#104, on by default) leaves "slight TTFT speedups ...
#   for long contexts" at head dim 128 with no figure given, and at 64 the same words: counted as 1.0;
#   at 256 the TTFT's quadratic coefficient rises from 6.93e-07 to 1.12e-06 ms/token^2: 0.62x.
HOPPER_FA3_FP8 = Fp8Attention(
    "FlashAttention 3, FP8",
    decode_cost=((64, 7.14e-06 / 8.94e-06), (128, 2.37e-05 / 4.37e-05), (256, 3.60e-05 / 5.30e-05)),
    decode_cost_before_tuning=((64, 0.96), (128, 0.63), (256, 3.60e-05 / 5.30e-05)),
    prefill_speed=((128, 1.0), (256, 6.93e-07 / 1.12e-06)),
)

# B200, FlashInfer (the post's 'Performance with FlashInfer on Blackwell' section; no two-level
# accumulation needed there): Llama-3.1-8B slope 9.72e-06 vs 1.80e-05 (54%), gpt-oss-20b 2.06e-06 vs
# 3.56e-06 (58%). No vLLM prefill figure: FA4's CuTe FP8 forward on SM100 (Dao-AILab/flash-attention
# PR #2109) ran at 0.95-1.15x its BF16, so 1.0.
BLACKWELL_FLASHINFER_FP8 = Fp8Attention(
    "FlashInfer, FP8",
    decode_cost=((64, 2.06e-06 / 3.56e-06), (128, 9.72e-06 / 1.80e-05)),
)


# --- prefill attention ------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionKernels:
    """The attention backend vLLM runs on one GPU: its bf16 prefill rate where a benchmark gives it
    (TFLOP/s counted as servescope counts them: 4 x query-key pairs x head dim x heads, causal pairs
    only), by head dimension, and its FP8 path. Without `prefill_tflops` the GPU keeps the calibration's
    attention (the H200 run's kernel, scaled by the datasheet rule)."""

    backend: str
    fp8: Fp8Attention = DEQUANTIZED
    prefill_tflops: tuple[tuple[int, float], ...] = ()

    def prefill_ceiling(self, head_dim: int, shipped_attention_compute: float) -> float:
        """The FLOP/s the fitted `attention_compute` multiplies, 0 for the calibration's own: the kernel's
        rate over the shipped fraction, so the shipped fit reproduces the kernel figure and a refit that
        moves the H200's attention moves this GPU's in the same ratio."""
        if not self.prefill_tflops:
            return 0.0
        return _by_head_dim(self.prefill_tflops, head_dim) * 1e12 / shipped_attention_compute


# FlashAttention 3 forward, H100 SXM5 (Shah et al., arXiv 2407.08608, Figure 5, BF16, batch x seqlen =
# 16k tokens, heads x head dim = 2048; the values printed on the bars as transcribed in
# /work/tmp/research/27.md section 1a), causal at 8k tokens (vLLM's chunk on an H100 is 8,192 tokens):
# 460 TFLOP/s at head dim 64, 602 at 128, 628 at 256. FlashAttention 2 on the same chart plateaus at
# 333 (causal) - 370 (non-causal) at 128: the calibration's fitted attention (796 x 0.4668 = 372
# TFLOP/s) is that class of kernel (PyTorch SDPA), not vLLM's FA3. Cross-checks: pytorch/benchmark PR
# #2391 614 TFLOP/s (non-causal, 8k), tritonbench PR #1254 639 (non-causal, 8k).
H100_FA3 = ((64, 460.0), (128, 602.0), (256, 628.0))
# H20 (148 TF bf16): FlashAttention 3 forward, head dim 128, causal at 2k tokens, 107.8 TFLOP/s
# (Dao-AILab/flash-attention issue #1310), against the H100's 521 at the same point: the H100's curve
# scaled by 107.8 / 521.
H20_FA3 = tuple((dim, tflops * 107.8 / 521.0) for dim, tflops in H100_FA3)

CALIBRATION_KERNELS = AttentionKernels("the calibration's attention kernel")
HOPPER = AttentionKernels("FlashAttention 3", HOPPER_FA3_FP8)
BLACKWELL = AttentionKernels("FlashInfer", BLACKWELL_FLASHINFER_FP8)
AMPERE_ADA = AttentionKernels("FlashAttention 2", DEQUANTIZED)

# Per GPU. The H200 and H200 NVL are the H100's silicon (the same 132 SMs; the H200 at the H100's clocks,
# the NVL at 835 of 989 TF bf16): vLLM runs FA3 there too, at the H100's rates, scaled for the NVL. The
# calibration's own steps (PyTorch SDPA on an H200) are priced with the kernel they ran,
# CALIBRATION_KERNELS (calibration.CALIBRATION_GPU). GPUs without a prefill figure for vLLM's backend
# keep the calibration's rate: B200 and GB200 (FlashInfer: no published prefill rate; FA4 reaches 1,418
# TFLOP/s causal at head dim 128, 8k, Dao-AILab/flash-attention PR #2280, but vLLM's default there is
# FlashInfer and the B200 prefill rows of validate_published.py are already faster than published),
# A100/A10G/Ada (FA2: no forward figure at vLLM's shapes found), MI300X/MI325X (ROCm backends: no
# figure), RTX 5090 (SM120: no figure).
H200_NVL_FA3 = tuple((dim, tflops * 835 / 989) for dim, tflops in H100_FA3)
ATTENTION_KERNELS = {
    "h200": AttentionKernels("FlashAttention 3", HOPPER_FA3_FP8, H100_FA3),
    "h200-nvl": AttentionKernels("FlashAttention 3", HOPPER_FA3_FP8, H200_NVL_FA3),
    "h100-sxm": AttentionKernels("FlashAttention 3", HOPPER_FA3_FP8, H100_FA3),
    "h20": AttentionKernels("FlashAttention 3", HOPPER_FA3_FP8, H20_FA3),
    "b200": AttentionKernels("FlashInfer (calibration's prefill rate)", BLACKWELL_FLASHINFER_FP8),
    "gb200": AttentionKernels("FlashInfer (calibration's prefill rate)", BLACKWELL_FLASHINFER_FP8),
    **dict.fromkeys(("a100-80g", "a100-80g-pcie", "a100-40g", "a10g", "l40s", "l4", "rtx-4090"), AMPERE_ADA),
}


def attention_kernels(name: str) -> AttentionKernels:
    return ATTENTION_KERNELS.get(name, CALIBRATION_KERNELS)


def kv_read_speed(kernels: AttentionKernels, kv_dtype: str, head_dim: int, vllm_version: str | None) -> float:
    """The KV read's bytes per second over the calibration's (bf16) read, for this cache dtype."""
    return kernels.fp8.read_speed(head_dim, vllm_version or LATEST) if kv_dtype == "fp8" else 1.0


def attention_compute_speed(kernels: AttentionKernels, kv_dtype: str, head_dim: int) -> float:
    """The prefill math's speed over the bf16 kernel's, for this cache dtype (FP8 attention or not)."""
    return kernels.fp8.compute_speed(head_dim) if kv_dtype == "fp8" else 1.0
