"""Attention per layer group: a sliding-window layer reads its window, a chunked-local layer its chunk,
a state layer its state, so a long context costs hybrids far less than an all-full-attention model;
dense models and full-attention-only architectures keep today's numbers to the bit."""

import pytest

from scheduler_core.timing.attention_cost import _keys_before, _keys_read
from scheduler_core.timing.attention_specs import CHUNKED_LOCAL, FULL, SLIDING_WINDOW
from scheduler_core.timing.calibration import CALIBRATION_GPU
from scheduler_core.timing.cost_model import CostModel
from scheduler_core.timing.presets import GPUS, MODELS

LONG_DECODE = [(1, 125_000)]


def attention_ms(cost_model, chunks):
    return cost_model.step_time(chunks, len(chunks))[1]["attention"] * 1e3


def as_if_all_full_attention(cost_model, chunks):
    """The charge before layer groups: every layer reading every cached token."""
    grouped, cost_model._grouped_attention = cost_model._grouped_attention, None
    try:
        return attention_ms(cost_model, chunks)
    finally:
        cost_model._grouped_attention = grouped


def brute_force_pairs(kind, window, num_new, num_cached):
    def keys(p):
        return {FULL: p + 1, SLIDING_WINDOW: min(p + 1, window), CHUNKED_LOCAL: p % window + 1}[kind]
    return sum(keys(p) for p in range(num_cached, num_cached + num_new))


@pytest.mark.parametrize("kind", [FULL, SLIDING_WINDOW, CHUNKED_LOCAL])
@pytest.mark.parametrize("num_new, num_cached", [(1, 0), (1, 127), (1, 128), (1, 5000), (300, 0), (300, 100), (64, 8190)])
def test_query_key_pairs_count_what_each_query_sees(kind, num_new, num_cached):
    window = 128 if kind == SLIDING_WINDOW else 256
    pairs = _keys_before(kind, window, num_cached + num_new) - _keys_before(kind, window, num_cached)
    assert pairs == brute_force_pairs(kind, window, num_new, num_cached)


def test_a_window_reads_at_most_its_window_plus_the_chunk():
    assert _keys_read(SLIDING_WINDOW, 128, 1, 125_000) == 128
    assert _keys_read(SLIDING_WINDOW, 128, 512, 125_000) == 127 + 512
    assert _keys_read(SLIDING_WINDOW, 128, 1, 10) == 11


def test_a_local_chunk_reads_the_tokens_of_its_own_chunk():
    assert _keys_read(CHUNKED_LOCAL, 8192, 1, 8192) == 1  # the first token of a new chunk
    assert _keys_read(CHUNKED_LOCAL, 8192, 1, 8192 + 99) == 100


def test_gpt_oss_long_context_costs_about_half_the_all_full_attention_charge():
    # Half its layers a 128-token window: only the other half read 125k tokens.
    cost_model = CostModel(MODELS["gpt-oss-20b"], GPUS["h100-sxm"])
    ratio = attention_ms(cost_model, LONG_DECODE) / as_if_all_full_attention(cost_model, LONG_DECODE)
    assert ratio == pytest.approx(0.5, abs=0.02)


def test_gemma_long_context_costs_less_still():
    # 52 of its 62 layers a 1024-token window.
    cost_model = CostModel(MODELS["gemma-3-27b"], GPUS["h100-sxm"])
    ratio = attention_ms(cost_model, LONG_DECODE) / as_if_all_full_attention(cost_model, LONG_DECODE)
    assert ratio < 0.2


def test_llama4_chunks_change_nothing_within_the_first_chunk():
    cost_model = CostModel(MODELS["llama-4-scout"], GPUS["h100-sxm"], 4)
    prefill = [(8192, 0)]
    assert attention_ms(cost_model, prefill) == pytest.approx(as_if_all_full_attention(cost_model, prefill))
    assert attention_ms(cost_model, LONG_DECODE) < 0.5 * as_if_all_full_attention(cost_model, LONG_DECODE)


def test_state_layers_cost_the_same_at_any_context():
    # Qwen3-Next: 36 gated-DeltaNet layers whose state does not grow; the 12 full layers do.
    cost_model = CostModel(MODELS["qwen3-next-80b-a3b"], GPUS["h200"], 4)
    short, long = attention_ms(cost_model, [(1, 1000)]), attention_ms(cost_model, [(1, 101_000)])
    twelve_full_layers = as_if_all_full_attention(cost_model, [(1, 101_000)]) - as_if_all_full_attention(
        cost_model, [(1, 1000)])
    assert long - short == pytest.approx(twelve_full_layers, rel=0.05)


@pytest.mark.parametrize("name, tp, expected", [
    # Step time of [(512, 0), (1, 125000), (1, 300)] on an H200 with the calibration's attention kernel (the
    # formula is pinned, not the kernel table): before layer groups were costed; the two MoE models' since
    # their kernels are costed (moe_kernels.py, mla_cost.py) and TP 8's all-reduce latency is (all_reduce.py);
    # DeepSeek-R1's since each block-FP8 GEMM's input quantization is (305 launches x 3.79 us).
    ("llama-3.1-8b", 1, 0.0210369033535506),
    ("qwen3-30b-a3b", 1, 0.029604900699403316),
    ("deepseek-r1", 8, 0.044213046688705696),
])
def test_dense_and_full_attention_only_models_are_unchanged_to_the_bit(name, tp, expected):
    cost_model = CostModel(MODELS[name], CALIBRATION_GPU, tp)
    assert cost_model._grouped_attention is None
    assert cost_model.step_time([(512, 0), (1, 125_000), (1, 300)], 3)[0] == expected
