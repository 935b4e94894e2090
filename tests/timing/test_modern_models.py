"""Today's models: KV bytes per token as vLLM's specs compute them, MoE routing, formats and field
refusal. Their startup numbers against published vLLM logs: test_startup_logs.py."""

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.hf_config import model_from_hf_config, packaged_configs
from scheduler_core.timing.memory import model_kv_layout, plan_memory
from scheduler_core.timing.moe import MoeSpec
from scheduler_core.timing.presets import GPUS, MODELS, resolve_model
from scheduler_core.timing.weight_formats import FORMATS, matmul_flops


def test_mla_latent_is_70272_bytes_per_token_on_every_gpu():
    for tp in (1, 8):
        layout = model_kv_layout(MODELS["deepseek-r1"], tp, 16, 4096, 2 * 2048)
        assert layout.bytes_per_block == 16 * 70_272  # 61 layers x 576 x 2 B, not split by TP


def test_deepseek_r1_does_not_fit_one_h100():
    plan = plan_memory(MODELS["deepseek-r1"], GPUS["h100-sxm"], 1)
    assert "No available memory for the cache blocks" in plan.shortfall()


def test_gpt_oss_sliding_window_group_caps_its_blocks():
    layout = model_kv_layout(MODELS["gpt-oss-120b"], 1, 16, 131072, 2 * 2048)  # async: two batches in flight
    # 18 full + 18 sliding: 8192 + cdiv(127 + 2 x 2048, 16) + 1 = 8192 + 265 blocks a request.
    assert (layout.num_groups, layout.blocks_per_request) == (2, 8192 + 265)


def test_qwen3_next_state_layers_hold_one_block_each():
    layout = model_kv_layout(MODELS["qwen3-next-80b-a3b"], 4, 16, 32768, 2 * 2048)
    assert layout.num_groups == 4 and layout.block_size > 16  # raised so a page holds one DeltaNet state


def test_expected_distinct_experts():
    moe = MoeSpec(num_experts=128, experts_per_token=8, expert_inter=768, num_moe_layers=48)
    assert moe.expected_distinct_experts(1) == pytest.approx(8)
    assert moe.expected_distinct_experts(10_000) == pytest.approx(128)
    assert 8 < moe.expected_distinct_experts(16) < 128 * (1 - (1 - 8 / 128) ** 16) + 1e-9 + 1


def test_no_fp4_tensor_cores_before_blackwell():
    assert matmul_flops(GPUS["h100-sxm"], FORMATS["nvfp4"]) == GPUS["h100-sxm"].bf16_flops
    assert matmul_flops(GPUS["b200"], FORMATS["nvfp4"]) == GPUS["b200"].fp4_flops > GPUS["b200"].fp8_flops


def test_formats_count_their_scales():
    assert FORMATS["mxfp4"].matrix_bytes(1, 32) == 16 + 1
    assert FORMATS["fp8-block"].matrix_bytes(128, 128) == 128 * 128 + 4


@pytest.mark.parametrize("name", sorted(packaged_configs()))
def test_every_preset_field_is_modelled_or_neutral(name):
    model_from_hf_config(name, packaged_configs()[name])  # an unknown field would raise, naming it


def test_an_unmodelled_field_is_refused_by_name():
    with pytest.raises(ConfigError) as error:
        model_from_hf_config("m", {**packaged_configs()["qwen3-30b-a3b"], "num_experts_in_a_new_way": 3})
    assert error.value.field == "model.num_experts_in_a_new_way"


def test_presets_are_found_by_their_hugging_face_ids():
    assert resolve_model("Qwen/Qwen3-30B-A3B") == MODELS["qwen3-30b-a3b"]
    assert resolve_model("google/gemma-3-27b-it") == MODELS["gemma-3-27b"]


def test_mla_kv_group_bytes_hold_one_latent_per_gpu():
    r1 = MODELS["deepseek-r1"]
    assert r1.kv_group_bytes_per_token(1) == 70_272  # not the dense formula's 128 heads of K and V
    assert r1.kv_group_bytes_per_token(8) == 8 * 70_272  # replicated, not split


def test_swap_moves_each_gpus_own_copy_of_the_latent():
    one, eight = CostModel(MODELS["deepseek-r1"], GPUS["h200"], 1), CostModel(MODELS["deepseek-r1"], GPUS["h200"], 8)
    assert one.swap_time(10, 16) == pytest.approx(eight.swap_time(10, 16))  # TP does not shrink an MLA swap


def test_dense_kv_group_bytes_are_the_dense_formula():
    llama = MODELS["llama-3.1-8b"]
    assert llama.kv_group_bytes_per_token(4) == llama.kv_bytes_per_token
