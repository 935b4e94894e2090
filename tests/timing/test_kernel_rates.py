"""Kernel ceilings per GPU (timing/kernel_rates.py): each sourced ratio gives back its source's figure,
an fp8 KV cache costs what vLLM's FP8 backend costs on each GPU, and the H200 anchor is untouched."""

import dataclasses

import pytest

from scheduler_core.timing.calibration import CALIBRATION_GPU
from scheduler_core.timing.cost_model import CostModel, Efficiency, ModelSpec
from scheduler_core.timing.kernel_rates import CALIBRATION_KERNELS, MATMUL_TABLE, gemm_ratio
from scheduler_core.timing.presets import GPUS, MODELS, load_calibration


def with_kv(model: str | ModelSpec, kv_dtype: str) -> ModelSpec:
    return dataclasses.replace(MODELS[model] if isinstance(model, str) else model, kv_dtype=kv_dtype)


def itl_slope_ms(model: ModelSpec, gpu: str, vllm_version: str = "0.19.1") -> float:
    """The concurrency-1 decode step's cost per cached token, over the FP8 KV post's 256-125k range."""
    cm = CostModel(model, GPUS[gpu], vllm_version=vllm_version)
    return (cm.decode_time(1, 125_000) - cm.decode_time(1, 256)) / (125_000 - 256) * 1e3


def attention_ms(model: ModelSpec, gpu: str, cached: int = 16_384) -> float:
    """The attention part of an 8,192-token chunk over `cached` tokens (compute-bound)."""
    return CostModel(model, GPUS[gpu]).step_time([(8192, cached)], 1)[1]["attention"] * 1e3


def test_the_calibration_gpu_is_the_calibration_run_itself():
    """The H200's ceilings are the calibration run's and its GEMM ratio is 1; the calibration's steps are
    priced with the kernel they ran (CALIBRATION_GPU: PyTorch's attention), while the H200 that vLLM
    runs differs from it in its attention kernel alone (FlashAttention 3)."""
    calibration, h200 = load_calibration(), GPUS["h200"]
    assert h200.bf16_flops == calibration["bf16_matmul_TFLOPs"] * 1e12
    assert h200.fp8_flops == calibration["fp8_matmul_TFLOPs"] * 1e12
    assert h200.mem_bandwidth == calibration["copy_GBps"] * 1e9
    assert gemm_ratio("h200") == 1.0
    assert CALIBRATION_GPU == dataclasses.replace(h200, attention=CALIBRATION_KERNELS)
    assert h200.attention.backend == "FlashAttention 3"


def test_gemm_ceilings_keep_the_matmul_tables_ratios_to_the_h200():
    """torch.matmul's best TFLOP/s per GPU in one table (B200 1,696, A100 SXM 264.5, L40S 269.2 against
    the H200's 790.3): each GPU's bf16 ceiling over the H200's is the table's ratio."""
    h200 = GPUS["h200"].bf16_flops
    for name in ("b200", "a100-80g", "a100-40g", "l40s", "h20", "h100-sxm"):
        assert GPUS[name].bf16_flops / h200 == pytest.approx(MATMUL_TABLE[name][0] / MATMUL_TABLE["h200"][0], rel=1e-9)
    assert 0.93 < gemm_ratio("b200") < 0.95 and 1.05 < gemm_ratio("a100-80g") < 1.07
    # A GPU the table lacks keeps the datasheet rule.
    assert gemm_ratio("mi300x") == 1.0


def test_the_a100_pcie_computes_at_nvidias_90_percent_of_the_measured_sxm4():
    """NVIDIA rated the A100 PCIe at 90% of the SXM4 (the power limit): its GEMM ceiling is the measured
    SXM4's times 0.9, and its memory bandwidth its own datasheet's, not scaled."""
    assert gemm_ratio("a100-80g-pcie") == pytest.approx(0.9 * gemm_ratio("a100-80g"))
    pcie, sxm = GPUS["a100-80g-pcie"], GPUS["a100-80g"]
    assert pcie.bf16_flops / sxm.bf16_flops == pytest.approx(0.9)
    assert pcie.mem_bandwidth / sxm.mem_bandwidth == pytest.approx(1.935 / 2.039)


def test_hopper_prefill_attention_runs_at_flashattention_3s_rate():
    """FA3's causal forward at 8k tokens (paper, Figure 5): 602 TFLOP/s at head dim 128, against the
    calibration's 796 x 0.4668 = 372 (PyTorch's kernel); 460 at head dim 64. An H100 and an H200 are the
    same silicon at the same clocks: the same attention time, 372 / 602 of the calibration's."""
    ceiling = GPUS["h100-sxm"].attention.prefill_ceiling(128, Efficiency.attention_compute)
    assert ceiling * Efficiency().attention_compute == pytest.approx(602e12, rel=1e-9)
    assert GPUS["h100-sxm"].attention.prefill_ceiling(64, Efficiency.attention_compute) * 0.4668 == pytest.approx(460e12)
    calibrated = GPUS["h200"].bf16_flops * Efficiency().attention_compute
    assert calibrated == pytest.approx(371.7e12, rel=1e-3)
    model = MODELS["llama-3.1-8b"]
    assert attention_ms(model, "h100-sxm") == pytest.approx(attention_ms(model, "h200"), rel=1e-9)
    on_calibration = CostModel(model, CALIBRATION_GPU).step_time([(8192, 16_384)], 1)[1]["attention"] * 1e3
    assert attention_ms(model, "h200") / on_calibration == pytest.approx(calibrated / 602e12, rel=0.01)
    # The H200 NVL: the same kernel at its lower clocks (835 of 989 TF).
    assert attention_ms(model, "h200-nvl") / attention_ms(model, "h200") == pytest.approx(989 / 835, rel=0.01)


@pytest.mark.parametrize("gpu, bf16, fp8, tolerance", [
    # The FP8 KV post's fitted ITL slopes for Llama-3.1-8B at vLLM 0.19.1 (ms per cached token).
    ("h100-sxm", 4.37e-05, 2.37e-05, 0.02),
    ("b200", 1.80e-05, 9.72e-06, 0.02),
])
def test_the_fp8_posts_8b_slopes(gpu, bf16, fp8, tolerance):
    """bf16: the calibration's KV read (90% of HBM peak) on both GPUs; fp8: 54% of bf16's time per
    cached token, not 50% (the dequantizing FP8 kernel reads at ~83% of peak)."""
    model = MODELS["llama-3.1-8b"]
    assert itl_slope_ms(with_kv(model, "bf16"), gpu) == pytest.approx(bf16, rel=tolerance)
    assert itl_slope_ms(with_kv(model, "fp8"), gpu) == pytest.approx(fp8, rel=tolerance)


def test_fp8_decode_cost_by_release_and_head_dim_on_hopper():
    """The post's Table 3: Llama-3.1-8B's fp8 slope 63% of bf16's in v0.10.2, 54% in 0.19.1;
    gpt-oss-20b (head dim 64) 96% then 80%; B200's FlashInfer 54% and 58% whatever the release."""
    for model, before, after, b200 in (("llama-3.1-8b", 0.63, 0.54, 0.54), ("gpt-oss-20b", 0.96, 0.80, 0.58)):
        bf16, fp8 = with_kv(model, "bf16"), with_kv(model, "fp8")
        for version, ratio in (("0.10.2", before), ("0.18.1", before), ("0.19.0", after), ("0.33.0", after)):
            assert itl_slope_ms(fp8, "h100-sxm", version) / itl_slope_ms(bf16, "h100-sxm", version) == pytest.approx(
                ratio, abs=0.005)
        assert itl_slope_ms(fp8, "b200", "0.10.2") / itl_slope_ms(bf16, "b200", "0.10.2") == pytest.approx(b200, abs=0.005)


def test_ampere_and_ada_fp8_kv_only_halves_the_bytes():
    """No FP8 attention kernel there: the cache is dequantized, the read halves, the math is bf16's."""
    model = MODELS["llama-3.1-8b"]
    for gpu in ("a100-80g", "l40s"):
        assert itl_slope_ms(with_kv(model, "fp8"), gpu) / itl_slope_ms(with_kv(model, "bf16"), gpu) == pytest.approx(0.5)
        assert attention_ms(with_kv(model, "fp8"), gpu, cached=65_536) == pytest.approx(
            attention_ms(with_kv(model, "bf16"), gpu, cached=65_536), rel=0.01)


def test_fp8_prefill_math_is_bf16s_at_128_and_slower_at_256_on_hopper():
    """Two-level accumulation: 'slight' TTFT gains at head dim 128 (counted as none), and at 256 the
    TTFT's quadratic term 1.12e-06 / 6.93e-07 = 1.6x bf16's (gemma-4-E2B on an H100)."""
    llama = MODELS["llama-3.1-8b"]
    assert attention_ms(with_kv(llama, "fp8"), "h100-sxm", 65_536) == pytest.approx(
        attention_ms(with_kv(llama, "bf16"), "h100-sxm", 65_536), rel=0.01)
    wide = dataclasses.replace(llama, name="head-dim-256", heads=16, kv_heads=4, head_dim=256)
    ratio = attention_ms(with_kv(wide, "fp8"), "h100-sxm", 65_536) / attention_ms(with_kv(wide, "bf16"), "h100-sxm", 65_536)
    assert ratio == pytest.approx(1.12e-06 / 6.93e-07, rel=0.02)
    # FlashInfer on a B200 needs no two-level accumulation: no slowdown.
    assert attention_ms(with_kv(wide, "fp8"), "b200", 65_536) == pytest.approx(
        attention_ms(with_kv(wide, "bf16"), "b200", 65_536), rel=0.01)
