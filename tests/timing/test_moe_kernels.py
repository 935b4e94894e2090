"""The fused-MoE, block-FP8 and MLA kernel costs: each sourced figure reproduced, and the step-time
shape they give (moe_kernels.py, mla_cost.py)."""

import pytest

from scheduler_core.timing.architecture import WeightInventory
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.mla_cost import FLASHMLA_FLOPS_PER_BF16
from scheduler_core.timing.moe import ExpertPlacement, MoeSpec
from scheduler_core.timing.moe_kernels import (
    BLOCK_FP8_FLOPS_PER_BF16,
    BLOCK_FP8_GEMM_S,
    BLOCK_FP8_INPUT_QUANT_S,
    BLOCK_FP8_READ_PER_COPY,
    FUSED_MOE_LAYER_S,
    BlockFp8Linears,
    FusedMoeKernel,
)
from scheduler_core.timing.presets import GPUS, MODELS

H100 = GPUS["h100-sxm"]


def fused_moe_us(moe: MoeSpec, expert_bytes: float, kernel: FusedMoeKernel, tokens: int) -> float:
    return (kernel.layer_s + moe.expected_distinct_experts(tokens) * expert_bytes / kernel.read_bytes_per_s) * 1e6


@pytest.mark.parametrize("tokens, published_us", [(1, 44.54), (2, 59.94), (4, 90.46), (8, 129.77), (16, 185.40),
                                                  (32, 238.37), (64, 262.73), (128, 273.72)])
def test_the_fused_moe_line_reproduces_vllm_pr_24700_qwen3_30b_fp8_on_h100(tokens, published_us):
    qwen3_30b = MoeSpec(num_experts=128, experts_per_token=8, expert_inter=768, num_moe_layers=48)
    expert_bytes = 3 * 2048 * 768  # fp8
    kernel = FusedMoeKernel.on(H100, 8)
    assert fused_moe_us(qwen3_30b, expert_bytes, kernel, tokens) == pytest.approx(published_us, rel=0.03 if tokens != 4 else 0.07)


@pytest.mark.parametrize("tokens, published_us", [(1, 144.03), (2, 229.28), (4, 351.10), (8, 434.98), (32, 487.35)])
def test_the_16_bit_line_reproduces_the_same_prs_mixtral_bf16_tp2(tokens, published_us):
    mixtral = MoeSpec(num_experts=8, experts_per_token=2, expert_inter=14336, num_moe_layers=32)
    expert_bytes = 3 * 4096 * 7168 * 2  # bf16, half of each expert's intermediate per GPU at TP 2
    kernel = FusedMoeKernel.on(H100, 16)
    # The fixed part is the fp8 fit's (29.2 us); the bf16 line's own is 29.7.
    assert fused_moe_us(mixtral, expert_bytes, kernel, tokens) == pytest.approx(published_us, rel=0.04)


def test_the_fused_moe_compute_rate_is_the_marginal_rate_of_2048_to_4096_tokens():
    flops = 2048 * 8 * 3 * 2048 * 768 * 2
    assert FusedMoeKernel.on(H100, 8).flops_per_s == pytest.approx(flops / ((1647.57 - 911.64) * 1e-6), rel=0.02)


@pytest.mark.parametrize("rows, cols, published_us, rel", [
    (3072, 1536, 14.53, 0.02), (7168, 16384, 92.64, 0.02),  # sglang PR #5820, vLLM's kernel, M = 1
    (2112, 7168, 23.3, 0.1),  # vLLM PR #23280, H100, Triton at M = 1-16 (cross-check)
])
def test_the_block_fp8_gemm_line_reproduces_its_sources(rows, cols, published_us, rel):
    read = H100.mem_bandwidth * BLOCK_FP8_READ_PER_COPY
    assert (BLOCK_FP8_GEMM_S + rows * cols / read) * 1e6 == pytest.approx(published_us, rel=rel)


def test_block_fp8_and_flashmla_rates_are_the_published_h100_class_figures():
    assert BlockFp8Linears.on(H100).flops_per_s == pytest.approx(489.7e12, rel=0.01)
    assert H100.bf16_flops * FLASHMLA_FLOPS_PER_BF16 == pytest.approx(580e12, rel=0.01)
    assert H100.bf16_flops * BLOCK_FP8_FLOPS_PER_BF16 < H100.fp8_flops / 2


def test_deepseek_r1_launches_three_attention_gemms_a_layer_and_two_per_dense_or_shared_mlp():
    inventory = WeightInventory(MODELS["deepseek-r1"], ExpertPlacement(8), GPUS["h200"])
    assert inventory.linear_gemms_per_step() == 61 * 3 + 2 * (3 + 58)


def test_a_lone_decode_of_an_moe_model_pays_the_fused_moe_layers_fixed_time():
    cost_model = CostModel(MODELS["gpt-oss-20b"], H100)
    one, two = cost_model.decode_time(1, 256), cost_model.decode_time(2, 256)
    moe_layers = MODELS["gpt-oss-20b"].arch.moe.num_moe_layers
    assert one > moe_layers * FUSED_MOE_LAYER_S + cost_model._weight_s
    assert two - one < one / 4  # the second token adds experts' bytes, not another fixed part


def test_blackwell_keeps_the_dense_roofline_for_the_experts():
    kernel = FusedMoeKernel.on(GPUS["b200"], 4)
    assert kernel.read_bytes_per_s is None and kernel.flops_per_s is None and kernel.layer_s == FUSED_MOE_LAYER_S


def test_mla_decode_pairs_cost_the_absorbed_dims_and_prompt_pairs_the_decompressed_ones():
    cost_model = CostModel(MODELS["deepseek-r1"], GPUS["h200"], 8)
    mla = cost_model._mla_attention
    # Per head: 2 x (512 + 64 + 512) FLOPs a decode pair, 2 x (128 + 64 + 128) a prompt pair, at
    # FlashMLA's rate and at the prefill kernel's (FlashAttention 3 at head dim 192: its 256 figure, 628
    # TFLOP/s) respectively.
    decode_flops = mla.decode_s_per_pair * GPUS["h200"].bf16_flops * FLASHMLA_FLOPS_PER_BF16
    prompt_flops = mla.prefill_s_per_pair * 628e12
    assert decode_flops == pytest.approx(61 * 16 * 2 * 1088)
    assert prompt_flops == pytest.approx(61 * 16 * 2 * 320)


def test_an_mla_decode_costs_the_same_beside_a_prompt_chunk():
    """MLA runs decodes and prompt chunks in two kernels: a decode never fills a prompt-shaped tile."""
    cost_model = CostModel(MODELS["deepseek-r1"], GPUS["h200"], 8)
    attention = lambda chunks: cost_model.step_time(chunks, len(chunks))[1]["attention"]  # noqa: E731
    decodes = [(1, 100_000)] * 8
    assert attention(decodes + [(512, 0)]) == pytest.approx(attention(decodes) + attention([(512, 0)]))


@pytest.mark.parametrize("tp, published_us", [(2, 8.7), (4, 9.2), (8, 11.8)])
def test_the_custom_all_reduce_latency_grows_with_the_group_as_sglang_pr_2904_measured(tp, published_us):
    from scheduler_core.timing.all_reduce import custom_all_reduce_latency_s

    assert custom_all_reduce_latency_s(tp, 8.7e-6) == pytest.approx(published_us * 1e-6)
    assert custom_all_reduce_latency_s(6, 8e-6) == custom_all_reduce_latency_s(4, 8e-6)


def test_the_hopper_block_fp8_figures_stay_off_blackwell():
    """The same block-FP8 checkpoint pays the Hopper kernels' launch floor on an H200, not on a B200."""
    model = MODELS["qwen3-235b-a22b-fp8"]
    gemms = WeightInventory(model, ExpertPlacement(4), GPUS["h200"]).linear_gemms_per_step()
    h200, b200 = CostModel(model, GPUS["h200"], 4), CostModel(model, GPUS["b200"], 4)
    moe_fixed = model.arch.moe.num_moe_layers * FUSED_MOE_LAYER_S
    assert h200._fixed_s - b200._fixed_s == pytest.approx(gemms * (BLOCK_FP8_GEMM_S + BLOCK_FP8_INPUT_QUANT_S))
    assert b200._fixed_s > moe_fixed


def test_each_block_fp8_linear_first_quantizes_its_input_as_vllm_pr_25427_timed():
    """apply_w8a8_block_fp8_linear runs per_token_group_quant_fp8 before every block-FP8 GEMM: 3.79 us for
    one 7168-wide token on an H100 (PR #25427's CUDA kernel), on top of the GEMM's own 11.2 us launch floor."""
    assert BLOCK_FP8_INPUT_QUANT_S == pytest.approx(3.79e-6)
    assert BlockFp8Linears.on(H100).launch_s == pytest.approx(11.2e-6 + 3.79e-6)
    # DeepSeek-R1 on 8 H200s: 305 block-FP8 linears a step, so 4.57 ms of launch floors, 1.16 of them the
    # quantization (a B200 keeps the FP8 roofline, with neither).
    model = MODELS["deepseek-r1"]
    assert WeightInventory(model, ExpertPlacement(8), GPUS["h200"]).linear_gemms_per_step() == 305
    h200, b200 = CostModel(model, GPUS["h200"], 8), CostModel(model, GPUS["b200"], 8)
    assert h200._fixed_s - b200._fixed_s == pytest.approx(305 * (11.2e-6 + 3.79e-6))
