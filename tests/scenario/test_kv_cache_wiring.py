"""A hybrid preset runs vLLM 0.33's KV cache groups with no `kv_cache_groups` given: the groups, the
block size and the pool are derived from the model's layers as vLLM's planner derives them.

Every row below is worked out by hand from vLLM 0.33.0's rules, at --max-model-len 32768,
--max-num-batched-tokens 8192 and async scheduling (two batches in flight: 16,384 tokens):
- groups (`_get_kv_cache_groups_uniform_page_size`): layers bucketed by spec in layer order (layer
  0's kind first), group_size = the smallest bucket's layer count (the largest when under 1.5 x the
  smallest), each bucket split into cdiv(layers, group_size) groups;
- bytes per block = group_size x page, page = block_size x KV heads on the GPU x (K + V head dims) x 2 B;
- a request's blocks (`get_max_concurrency_for_kv_cache_config`): full attention cdiv(32768, bs);
  sliding window W cdiv(min(W - 1 + 16384, 32768), bs) + 1; chunked local C cdiv(min(C + 16384, 32768), bs);
  Mamba 1 (mamba_cache_mode 'none').
"""

import pytest

from scheduler_core.engine.kv_events import BlocksLeftWindow
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario, apply_assignments

ENGINE = {"max_model_len": 32768, "max_num_batched_tokens": 8192, "async_scheduling": True}

HYBRID_PRESETS = [
    # gpt-oss-20b: 24 layers alternating sliding (layer 0) and full, 8 KV heads of 64. group_size 12:
    # page 16 x 8 x 128 x 2 = 32,768 B, x 12 = 393,216 B a block; a request 2,048 + cdiv(127 + 16,384, 16) + 1 = 3,081.
    ("gpt-oss-20b", 1, "sliding_window:128,full_attention", 16, 393_216, 3_081),
    # gpt-oss-120b: 36 layers, 18 + 18: 18 x 32,768 = 589,824 B a block; the same 3,081 blocks a request.
    ("gpt-oss-120b", 1, "sliding_window:128,full_attention", 16, 589_824, 3_081),
    # Gemma-3-27B: 52 sliding (window 1024, layer 0 among them) + 10 full, 16 KV heads of 128. group_size 10:
    # 6 sliding groups then 1 full; page 16 x 16 x 256 x 2 = 131,072 B, x 10 = 1,310,720 B;
    # a request 6 x (cdiv(1,023 + 16,384, 16) + 1) + 2,048 = 6 x 1,089 + 2,048 = 8,582.
    ("gemma-3-27b", 1, ",".join(["sliding_window:1024"] * 6 + ["full_attention"]), 16, 1_310_720, 8_582),
    # Llama-4-Scout at TP 4: 36 chunked-local (chunk 8192, layer 0 among them) + 12 full (NoPE), 8 KV heads
    # of 128, 2 per GPU. group_size 12: 3 chunked groups then 1 full; page 16 x 2 x 256 x 2 = 16,384 B,
    # x 12 = 196,608 B; a request 3 x cdiv(8,192 + 16,384, 16) + 2,048 = 3 x 1,536 + 2,048 = 6,656.
    ("llama-4-scout", 4, "chunked_local:8192,chunked_local:8192,chunked_local:8192,full_attention", 16, 196_608, 6_656),
    # Llama-4-Maverick at TP 8: the same layers, 1 KV head per GPU: page 8,192 B, x 12 = 98,304 B.
    ("llama-4-maverick", 8, "chunked_local:8192,chunked_local:8192,chunked_local:8192,full_attention", 16, 98_304,
     6_656),
    # Qwen3-Next-80B-A3B at TP 4: 36 gated-DeltaNet layers (layer 0 among them) + 12 full (2 KV heads of
    # 256, so 1 per GPU: 1,024 B a token a layer). A DeltaNet state per GPU: conv (2 x 16 x 128 + 32 x 128)
    # / 4 x 3 = 6,144 values + recurrent 32 / 4 x 128 x 128 = 131,072, in bf16: 274,432 B. The block is
    # raised to 16 x cdiv(274,432, 16 x 1,024) = 272 tokens, page 278,528 B (the state padded to it);
    # group_size 12: 3 Mamba groups then 1 full, 12 x 278,528 = 3,342,336 B; a request 3 + cdiv(32,768, 272) = 124.
    ("qwen3-next-80b-a3b", 4, "mamba,mamba,mamba,full_attention", 272, 3_342_336, 124),
]


def scenario(model: str, tp: int = 1, **engine) -> Scenario:
    return Scenario.from_dict({"model": model, "gpu": "h200", "tensor_parallel_size": tp,
                               "engine": {**ENGINE, **engine}})


@pytest.mark.parametrize(("model", "tp", "groups", "block_size", "block_bytes", "per_request"), HYBRID_PRESETS,
                         ids=[row[0] for row in HYBRID_PRESETS])
def test_a_hybrid_preset_gets_vllms_groups_block_size_and_num_blocks(model, tp, groups, block_size, block_bytes,
                                                                     per_request):
    s = scenario(model, tp)
    plan = s.memory_plan()
    assert s.engine.kv_cache_groups == plan.kv_cache_groups == groups
    assert s.engine.block_size == plan.block_size == block_size
    assert plan.block_bytes == block_bytes and plan.blocks_per_request == per_request
    # The engine's pool is vLLM's num_blocks (available // bytes per block), not a single-group equivalent.
    assert s.engine.num_gpu_blocks == plan.kv_cache_bytes // block_bytes > 0
    assert plan.max_concurrency == s.engine.num_gpu_blocks / per_request
    assert f"Maximum concurrency for 32,768 tokens per request: {s.engine.num_gpu_blocks / per_request:.2f}x" \
        in plan.startup_lines()


def test_dense_models_keep_the_one_full_attention_group():
    for model in ("llama-3.1-8b", "qwen3-30b-a3b", "deepseek-r1"):
        s = scenario(model, 8 if model == "deepseek-r1" else 1)
        assert s.engine.kv_cache_groups == "full_attention" and not s.engine.is_hybrid and s.engine.block_size == 16
        assert "kv_cache_groups" not in s.engine.to_dict()


def test_a_preset_runs_the_hybrid_manager_and_gives_sliding_window_blocks_back_mid_request():
    s = Scenario.from_dict({"model": "gpt-oss-20b", "gpu": "h200", "engine": ENGINE,
                            "workload": {"num_requests": 8, "concurrency": 8, "lengths": "fixed", "prompt_len": 1000,
                                         "output_len": 200, "seed": 1}})
    sim = s.build()
    sim.enable_kv_events()
    left = []
    for record in sim.records(max_steps=60):
        left += [e for e in record.kv_events if isinstance(e, BlocksLeftWindow) and e.request_id not in record.finished]
        running = [r.request_id for r in sim.scheduler.running]
        if left and running:
            break
    assert left and left[0].group_id == 0  # the sliding-window group (layer 0's kind comes first)
    sliding, full = sim.kv_view().group_block_tables(left[0].request_id)
    assert 0 in sliding and 0 not in full  # null slots where blocks left the window; full attention keeps all
    assert len([b for b in sliding if b]) <= -(-(128 - 1 + 2 * 8192) // 16) + 1


def test_groups_that_contradict_the_model_are_refused_by_name():
    with pytest.raises(ConfigError) as error:
        scenario("gpt-oss-120b", kv_cache_groups="full_attention,sliding_window:64")
    assert error.value.field == "kv_cache_groups" and "sliding_window:128,full_attention" in error.value.reason
    with pytest.raises(ConfigError) as error:
        scenario("llama-3.1-8b", kv_cache_groups="full_attention,sliding_window:128")
    assert error.value.field == "kv_cache_groups"
    assert scenario("gpt-oss-120b", kv_cache_groups="sliding_window:128,full_attention").engine.is_hybrid  # the same: fine


def test_outside_vllm_v1_a_window_model_keeps_every_token_as_without_the_hybrid_manager():
    """--disable-hybrid-kv-cache-manager's sizing: every layer a full-attention one, 36 x 32,768 B a block."""
    s = scenario("gpt-oss-120b", policy="vllm-v0", async_scheduling=False, max_num_batched_tokens=32768)
    assert s.engine.kv_cache_groups == "full_attention" and s.memory_plan().block_bytes == 36 * 32_768


def test_llama_4_with_eagle_runs_without_the_hybrid_manager_as_vllm_does():
    s = scenario("llama-4-scout", 4, speculative_config={"method": "eagle", "num_speculative_tokens": 2})
    assert s.engine.kv_cache_groups == "full_attention" and s.memory_plan().block_bytes == 48 * 16_384


def test_a_mamba_hybrid_starts_with_prefix_caching_off_and_says_why():
    s = scenario("qwen3-next-80b-a3b", 4)
    assert not s.engine.enable_prefix_caching
    assert any("mamba_cache_mode='align'" in line for line in s.memory_plan().startup_lines())
    with pytest.raises(ConfigError) as error:
        scenario("qwen3-next-80b-a3b", 4, enable_prefix_caching=True)
    assert error.value.field == "enable_prefix_caching"
    with pytest.raises(ConfigError) as error:
        scenario("qwen3-next-80b-a3b", 4, policy="static", async_scheduling=False, max_num_batched_tokens=32768)
    assert error.value.field == "policy"


def test_a_model_switch_gets_the_new_models_groups():
    data = scenario("gpt-oss-120b").to_dict()
    assert data["engine"]["kv_cache_groups"] == "sliding_window:128,full_attention"  # what ran, in exports too
    apply_assignments(data, [("model", "llama-3.1-8b")])
    assert Scenario.from_dict(data).engine.kv_cache_groups == "full_attention"


def test_the_startup_lines_say_what_vllm_logs_of_the_groups():
    """vLLM's own lines: Gemma-3-27B's 52 sliding layers fill 6 groups of 10 with 8 padding layers
    (8 / 52 = 15.38%); Qwen3-Next's block raised to 272 tokens (worked out in the table above)."""
    gemma = scenario("gemma-3-27b").memory_plan().startup_lines()
    assert "Add 8 padding layers, may waste at most 15.38% KV cache memory" in gemma
    qwen = scenario("qwen3-next-80b-a3b", 4).memory_plan().startup_lines()
    assert qwen[0] == "Setting attention block size to 272 tokens to ensure that attention page size is >= mamba page size."
    dense = scenario("llama-3.1-8b").memory_plan().startup_lines()
    assert dense[0].startswith("Model loading took") and len(dense) == 4
