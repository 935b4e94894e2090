"""vLLM 0.33's KV cache groups as timing/kv_groups.py makes them: order, promotion without the hybrid
manager, the Mamba state's dtype, and a hybrid model that cannot hold one request."""

import dataclasses

import pytest

from scheduler_core.errors import ConfigError
from scheduler_core.timing.attention_specs import FULL, SLIDING_WINDOW, LayerGroup
from scheduler_core.timing.kv_groups import kv_layout
from scheduler_core.timing.memory import model_kv_layout, plan_memory
from scheduler_core.timing.presets import GPUS, MODELS

FULL_8x128 = LayerGroup(FULL, 10, 8, 128, 128)
SLIDING_8x128 = LayerGroup(SLIDING_WINDOW, 30, 8, 128, 128, window=512)


def test_groups_follow_the_kind_of_the_first_layer():
    # 10 full + 30 sliding, full first (Qwen2's max_window_layers puts full layers first): group_size 10.
    layout = kv_layout((FULL_8x128, SLIDING_8x128), 1, 2, 16, 8192, 2048)
    assert layout.kv_cache_groups == "full_attention,sliding_window:512,sliding_window:512,sliding_window:512"
    assert layout.bytes_per_block == 10 * 16 * 8 * 256 * 2
    # 512 cdiv(8192, 16) + 3 x (cdiv(511 + 2048, 16) + 1) = 512 + 3 x 161.
    assert layout.blocks_per_request == 512 + 3 * 161


def test_without_the_hybrid_manager_every_layer_keeps_every_token():
    layout = kv_layout((SLIDING_8x128, FULL_8x128), 1, 2, 16, 8192, 2048, hybrid_manager=False)
    assert layout.kv_cache_groups == "full_attention" and layout.bytes_per_block == 40 * 16 * 8 * 256 * 2
    assert layout.blocks_per_request == 512
    with pytest.raises(ConfigError):
        model_kv_layout(MODELS["qwen3-next-80b-a3b"], 4, 16, 8192, 2048, hybrid_manager=False)


def test_the_mamba_state_stays_in_the_models_dtype_under_an_fp8_kv_cache():
    """An fp8 KV cache halves the attention page, not the DeltaNet state (vLLM's mamba_cache_dtype
    auto): at TP 4 the 274,432-byte state needs 16 x cdiv(274,432, 16 x 512) = 544 tokens a block."""
    qwen = MODELS["qwen3-next-80b-a3b"]
    assert model_kv_layout(qwen, 4, 16, 32768, 4096).block_size == 272
    assert model_kv_layout(dataclasses.replace(qwen, kv_dtype="fp8"), 4, 16, 32768, 4096).block_size == 544


def test_too_many_groups_are_refused_not_built():
    groups = (LayerGroup(FULL, 1, 8, 128, 128), LayerGroup(SLIDING_WINDOW, 10_000, 8, 128, 128, window=64))
    with pytest.raises(ConfigError) as error:
        kv_layout(groups, 1, 2, 16, 4096, 2048)
    assert error.value.field == "model.layer_types"


def test_a_hybrid_that_cannot_hold_one_request_says_the_longest_that_fits():
    """vLLM's estimate_max_model_len bisects on every group's bytes for one request."""
    plan = plan_memory(MODELS["gemma-3-27b"], GPUS["h100-sxm"], 1, 0.72, max_model_len=131072)
    assert plan.kv_cache_bytes < plan.needed_bytes
    estimated = plan.estimated_max_model_len
    fits = plan_memory(MODELS["gemma-3-27b"], GPUS["h100-sxm"], 1, 0.72, max_model_len=estimated)
    too_long = plan_memory(MODELS["gemma-3-27b"], GPUS["h100-sxm"], 1, 0.72, max_model_len=estimated + 1)
    assert fits.needed_bytes <= plan.kv_cache_bytes < too_long.needed_bytes
    assert f"the estimated maximum model length is {estimated}" in plan.shortfall()
