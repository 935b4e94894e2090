"""The eleven modern presets against trimmed copies of the real Hugging Face config.json files
(tests/fixtures/hf_configs/): each must give the same ModelSpec as its preset, so a preset written
from memory cannot drift from the checkpoint it names. Only the fields that decide memory or time
are kept, plus the real files' fields that servescope once refused (initial_context_length,
moe_layers, for_llm_compressor, cache_implementation) and a Gemma 3 text_config that leaves its
vocabulary and sliding-window pattern to transformers' defaults, as the real one does."""

import dataclasses
import json

import pytest

from scheduler_core.timing.hf_config import model_from_hf_config
from scheduler_core.timing.presets import MODELS
from tests.paths import FIXTURES

# Where each trimmed copy was checked (public repositories vendoring the real config.json).
SOURCES = {
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B config.json as vendored verbatim in several test suites found by "
                     "find_string '\"max_window_layers\": 48' (e.g. an lmstudio-community MLX copy, RND1's defaults)",
    "qwen3-235b-a22b-fp8": "shape: the Qwen/Qwen3-235B-A22B configs vendored by planners ('moe_intermediate_size': "
                           "1536, 94 layers, 64/4 heads); max_position_embeddings 262144 and the fp8 block config "
                           "from the -Instruct-2507-FP8 model card (not confirmed from a vendored copy)",
    "gpt-oss-20b": "openai/gpt-oss-20b config.json vendored in circuit-tracer's tests and TensorRT-LLM's gpt-oss test",
    "gpt-oss-120b": "https://huggingface.co/openai/gpt-oss-120b/raw/main/config.json, vendored in a kiln test "
                    "(read 2026-10-02)",
    "deepseek-v3": "DeepSeek-V3 and -R1 share config.json's shape; R1's vendored whole in a planner's "
                   "config_Deepseek_R1 (quantization_config included)",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1 config.json vendored whole (config_Deepseek_R1)",
    "llama-4-scout": "meta-llama/Llama-4-Scout-17B-16E config dump (moe_layers, no_rope_layers, "
                     "for_llm_compressor) and NeuronX's LLAMA4_SCOUT_MINIMAL_MOCK_CONFIG for the Instruct "
                     "model's max_position_embeddings 10485760; vLLM issue text of a Scout fine-tune",
    "llama-4-maverick": "TensorRT-LLM tests' LLAMA_4_MAVERICK_TWO_LAYER_CONFIG (layers cut to 2 there): no "
                        "no_rope_layers list, use_qk_norm false, interleave_moe_layer_step 2",
    "gemma-3-27b": "TensorRT-LLM tests' GEMMA3_27B_MINI_CONFIG (layers and window cut there) and TransformerEngine's "
                   "gemma3_27b_config: text_config has no vocab_size / max_position_embeddings / pattern",
    "qwen3-next-80b-a3b": "Qwen3-Next / Qwen3-Coder-Next config.json vendored in a params test and in an NVFP4 "
                          "loader test (same shape: 48 layers, 512 experts, 16/32 DeltaNet heads)",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B config.json vendored in TensorRT-LLM's test_modeling_mixtral.py",
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_preset_gives_the_same_model_as_the_real_config(name):
    real = json.loads((FIXTURES / "hf_configs" / f"{name}.json").read_text())
    ours = dataclasses.replace(model_from_hf_config(name, real), name=name)
    assert ours == MODELS[name], SOURCES[name]
