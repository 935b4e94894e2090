"""vLLM's startup memory arithmetic: weights as the checkpoint stores them, the KV cache that the
rest of the requested memory makes, and the KV cache size and maximum concurrency vLLM logs."""

import dataclasses
import math

import pytest

from scheduler_core.cli.main import main
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.timing.memory import (
    GIB,
    cuda_graph_capture_sizes,
    kv_block_bytes,
    num_gpu_blocks_from_memory,
    plan_memory,
    weight_bytes_per_gpu,
)
from scheduler_core.timing.presets import GPUS, MODELS

FP8_KV = dataclasses.replace(MODELS["llama-3.3-70b"], kv_dtype="fp8")

# Worked by hand from vLLM 0.33.0's source: page_size_bytes = block_size x KV heads on the GPU x
# (head_size K + head_size V) x dtype bytes, one page per layer per block (kv_cache_planning:
# num_blocks = available // bytes_per_block); concurrency = num_blocks / cdiv(max_model_len,
# block_size) (get_max_concurrency_for_kv_cache_config); tokens = int(concurrency x max_model_len)
# (get_kv_cache_capacity), printed "%.2fx".
# (model, tp, block_size, available GiB, max_model_len) -> (block bytes, num_blocks, tokens, "X.XXx")
KV_CASES = [
    # 16 x 8 heads x 256 x 2 B = 64 KiB a layer, x 32 layers = 2 MiB; 55 GiB / 2 MiB = 28,160
    ((MODELS["llama-3.1-8b"], 1, 16, 55, 131072), (2 * 2**20, 28160, 450560, "3.44x")),
    # fp8 KV: 16 x 8 x 256 x 1 B x 80 layers = 2,621,440 B; 6 GiB / that = 2,457.6
    ((FP8_KV, 1, 16, 6, 4096), (2621440, 2457, 39312, "9.60x")),
    # tp=4: 2 KV heads a GPU: 16 x 2 x 256 x 2 x 80 = 1,310,720 B; 37 GiB / that = 30,310.4
    ((MODELS["llama-3.3-70b"], 4, 16, 37, 8192), (1310720, 30310, 484960, "59.20x")),
    # tp=8: one KV head a GPU: 655,360 B; 60 GiB / that = 98,304 exactly
    ((MODELS["llama-3.3-70b"], 8, 16, 60, 131072), (655360, 98304, 1572864, "12.00x")),
    # Qwen2.5-7B has 4 KV heads: at tp=8 each GPU keeps a replica of one; block 32: 32 x 1 x 256 x 2 x 28
    ((MODELS["qwen2.5-7b"], 8, 32, 10, 32768), (458752, 23405, 748960, "22.86x")),
    # max_model_len not a multiple of the block: cdiv(1000, 16) = 63 blocks a request; 512 / 63
    ((MODELS["llama-3.1-8b"], 1, 16, 1, 1000), (2 * 2**20, 512, 8126, "8.13x")),
]


@pytest.mark.parametrize("case,expected", KV_CASES, ids=[f"{c[0].name}-tp{c[1]}-bs{c[2]}-{c[3]}GiB" for c, _ in KV_CASES])
def test_kv_cache_size_matches_vllms_formula(case, expected):
    model, tp, block_size, available_gib, max_model_len = case
    block_bytes, num_blocks, tokens, concurrency = expected
    plan = plan_memory(model, GPUS["h200"], tp, block_size=block_size, max_model_len=max_model_len)
    plan = dataclasses.replace(plan, kv_cache_bytes=available_gib * GIB, profiled_num_gpu_blocks=0, num_gpu_blocks=0)

    assert kv_block_bytes(model, tp, block_size) == plan.block_bytes == block_bytes
    plan = dataclasses.replace(plan, num_gpu_blocks=plan.kv_cache_bytes // plan.block_bytes)
    assert plan.num_gpu_blocks == num_blocks
    assert plan.kv_cache_size_tokens == tokens
    assert plan.startup_lines()[-2:] == [
        f"GPU KV cache size: {tokens:,} tokens",
        f"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency}",
    ]


def test_blocks_are_the_requested_memory_less_weights_activations_graphs_and_non_torch_over_block_bytes():
    plan = plan_memory(MODELS["llama-3.1-8b"], GPUS["h100-sxm"], gpu_memory_utilization=0.9)
    left = plan.requested_bytes - plan.weights_bytes - plan.activation_peak_bytes - plan.non_torch_bytes - plan.cuda_graph_bytes
    assert plan.requested_bytes == math.ceil(GPUS["h100-sxm"].mem_bytes * 0.9)  # vLLM rounds the request up
    assert plan.kv_cache_bytes == left and plan.num_gpu_blocks == left // (2 * 2**20)


@pytest.mark.parametrize("name,gib", [
    ("llama-3.1-8b", 14.99),  # vLLM logs "Model loading took 14.99 GiB" for Llama-3.1-8B-Instruct
    ("llama-3.3-70b-fp8", 67.72),  # 70B FP8-dynamic: 68.5 GB of fp8 linears + 4.2 GB of bf16 embedding and LM head
    ("mistral-7b", 13.51),
])
def test_weights_as_the_checkpoint_stores_them(name, gib):
    assert round(weight_bytes_per_gpu(MODELS[name], 1) / GIB, 2) == gib


def test_fp8_checkpoint_keeps_embedding_and_lm_head_in_bf16():
    bf16, fp8 = MODELS["llama-3.3-70b"], MODELS["llama-3.3-70b-fp8"]
    embeddings = 2 * bf16.vocab * bf16.hidden * 2
    linear_bf16 = weight_bytes_per_gpu(bf16, 1) - embeddings
    # fp8 halves only the linear layers (plus their per-channel fp32 scales); both embeddings stay 2 bytes.
    assert weight_bytes_per_gpu(fp8, 1) - embeddings == pytest.approx(linear_bf16 / 2, rel=0.002)


def test_tied_embeddings_are_counted_once():
    model = MODELS["llama-3.1-8b"]
    tied = dataclasses.replace(model, tie_word_embeddings=True)
    assert weight_bytes_per_gpu(model, 1) - weight_bytes_per_gpu(tied, 1) == model.vocab * model.hidden * 2


def test_tensor_parallelism_shards_the_weights():
    model = MODELS["llama-3.3-70b"]
    assert weight_bytes_per_gpu(model, 4) == pytest.approx(weight_bytes_per_gpu(model, 1) / 4, rel=0.01)


def test_activation_peak_grows_with_max_num_batched_tokens():
    model, gpu = MODELS["llama-3.3-70b-fp8"], GPUS["h200"]
    small, big = (plan_memory(model, gpu, max_num_batched_tokens=n, max_num_seqs=64) for n in (2048, 16384))
    assert big.activation_peak_bytes > 4 * small.activation_peak_bytes
    assert big.num_gpu_blocks < small.num_gpu_blocks


def test_enforce_eager_gives_the_cuda_graph_memory_to_the_kv_cache():
    model, gpu = MODELS["llama-3.1-8b"], GPUS["h100-sxm"]
    graphs, eager = plan_memory(model, gpu), plan_memory(model, gpu, enforce_eager=True)
    assert graphs.cuda_graph_bytes > 0 and eager.cuda_graph_bytes == 0
    assert eager.kv_cache_bytes - graphs.kv_cache_bytes == graphs.cuda_graph_bytes


def test_cuda_graph_sizes_follow_vllms_default_grid():
    sizes = cuda_graph_capture_sizes(max_num_seqs=256, max_num_batched_tokens=8192)
    assert sizes[:5] == [1, 2, 4, 8, 16] and sizes[-1] == 512 and 264 not in sizes and 272 in sizes
    assert cuda_graph_capture_sizes(max_num_seqs=8, max_num_batched_tokens=8192)[-1] == 16


def test_kv_blocks_grow_with_gpu_memory_utilization_and_tensor_parallelism():
    model, gpu = MODELS["llama-3.3-70b"], GPUS["h100-sxm"]
    assert plan_memory(model, gpu, 4, 0.8).num_gpu_blocks < plan_memory(model, gpu, 4, 0.9).num_gpu_blocks
    assert plan_memory(model, gpu, 4).num_gpu_blocks < plan_memory(model, gpu, 8).num_gpu_blocks


def test_a_model_that_does_not_fit_says_by_how_much():
    plan = plan_memory(MODELS["llama-3.3-70b-fp8"], GPUS["l40s"])
    with pytest.raises(ConfigError) as error:
        num_gpu_blocks_from_memory(plan)
    assert error.value.field == "model"  # not num_gpu_blocks, which nobody gave
    assert error.value.reason.startswith("The model does not fit: its weights alone take")
    assert "No available memory for the cache blocks" in error.value.reason
    assert f"by {round(-plan.kv_cache_bytes / GIB, 2)} GiB" in error.value.reason and "l40s" in error.value.reason


def test_70b_on_an_a100_40g_says_the_model_does_not_fit():
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"model": "llama-3.3-70b", "gpu": "a100-40g"})
    assert error.value.field == "model" and "The model does not fit" in error.value.reason


def test_a_context_longer_than_the_cache_is_refused_with_vllms_estimate():
    with pytest.raises(ConfigError) as error:
        Scenario.from_dict({"model": "llama-3.3-70b-fp8", "gpu": "h100-sxm", "gpu_memory_utilization": 0.9,
                            "engine": {"max_model_len": 131072, "max_num_batched_tokens": 8192}})
    assert error.value.field == "max_model_len"
    assert "To serve at least one request with the model's max seq len (131072)" in error.value.reason
    assert "the estimated maximum model length is" in error.value.reason


def test_num_gpu_blocks_override_is_reported_as_vllm_logs_it():
    scenario = Scenario.from_dict({"model": "llama-3.1-8b", "gpu": "h200", "engine": {"num_gpu_blocks_override": 1000}})
    lines = scenario.memory_plan().startup_lines()
    assert any(line.startswith("Overriding num_gpu_blocks=") and line.endswith("num_gpu_blocks_override=1000")
               for line in lines)
    assert lines[-2] == f"GPU KV cache size: {1000 * 16:,} tokens"


def test_run_prints_vllms_startup_lines_first(capsys):
    assert main(["run", "--model", "llama-3.3-70b-fp8", "--gpu", "h100-sxm", "--kv-cache-dtype", "fp8",
                 "--gpu-memory-utilization", "0.95", "--num-requests", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    scenario = Scenario.from_dict({"model": "llama-3.3-70b-fp8", "gpu": "h100-sxm", "kv_cache_dtype": "fp8",
                                   # vLLM's batch limits on an H100, not the default preset's (they were for its H200)
                                   "gpu_memory_utilization": 0.95, "engine": {"max_num_seqs": 1024,
                                                                             "max_num_batched_tokens": 8192}})
    plan = scenario.memory_plan()
    assert out[0] == "vLLM startup, per GPU (1 x h100-sxm):"
    assert out[3] == f"  GPU KV cache size: {plan.kv_cache_size_tokens:,} tokens"
    assert out[4] == f"  Maximum concurrency for 4,096 tokens per request: {plan.max_concurrency:.2f}x"
