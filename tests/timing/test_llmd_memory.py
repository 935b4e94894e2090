"""servescope's startup memory against llm-d's measured vLLM table (issue 27 item 4).

Validation only: nothing here sets a parameter. The sampler's bytes per logit come from vLLM's
code (timing/profile_run.py), not from this table.

Source: github.com/llm-d/llm-d-benchmark, config_explorer/empirical-vllm-memory-results.md
(commit 87ab01be, 2026-02-26): image vllm/vllm-openai:v0.11.0 on one H100 80GB (79.18 GiB), `vllm
serve MODEL --gpu-memory-utilization 0.90 --max-model-len 16000 --block-size 128
--enable-prefix-caching`, the rest vLLM 0.11's H100 defaults (1,024 sequences, 8,192 tokens);
figures from the "torch peak memory increase", "non-torch forward increase memory" and "Available
KV cache memory" lines, in GiB. Every row whose model servescope has as a preset; Qwen3-0.6B,
Qwen3-32B and Mistral-Small-3.2 are not presets.

Tolerances: the activation peak within 5% (the sampler's warm-up, 1,024 rows x the vocabulary x 38
bytes, is it on every row: the measured peaks are 38.4-39.6 bytes per logit, and what the forward
pass leaves alive is not modelled); the KV memory per GPU within 1 GiB, of which up to 0.64 GiB is
gpt-oss's MXFP4 weights (0.11 on an H100 pads them for another kernel than 0.33's, which servescope
models).
"""

from dataclasses import dataclass

import pytest

from scheduler_core.engine.releases import VllmRelease
from scheduler_core.timing.memory import GIB, plan_memory
from scheduler_core.timing.presets import GPUS, MODELS
from scheduler_core.timing.profile_run import sampler_peak_bytes

LLMD = "github.com/llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md (87ab01be)"


@dataclass(frozen=True)
class Measured:
    preset: str
    tp: int
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    kv_gib: float  # negative: vLLM refused to start, short by that much


LLMD_ROWS = [
    Measured("gpt-oss-20b", 1, 13.47, 7.38, 0.13, 50.28),
    Measured("gpt-oss-120b", 1, 64.38, 7.38, 0.13, 3.33),
    Measured("llama-3.3-70b-fp8", 2, 33.88, 4.84, 0.55, 32.00),  # RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic
    Measured("llama-3.3-70b-fp8", 1, 67.72, 4.84, 0.14, -1.44),
    Measured("llama-3.1-8b", 1, 14.99, 4.76, 0.13, 51.38),
]


def plan(row: Measured):
    return plan_memory(MODELS[row.preset], GPUS["h100-sxm"], row.tp, 0.9, block_size=128, max_num_batched_tokens=8192,
                       max_num_seqs=1024, max_model_len=16000, vllm_version="0.11.0")


def ids(rows):
    return [f"{r.preset}-tp{r.tp}" for r in rows]


@pytest.mark.parametrize("row", LLMD_ROWS, ids=ids(LLMD_ROWS))
def test_activation_peak_within_5_percent_of_vllm_0_11(row):
    ours = plan(row).activation_peak_bytes / GIB
    assert abs(ours / row.activation_gib - 1) < 0.05, (ours, row.activation_gib, LLMD)


@pytest.mark.parametrize("row", LLMD_ROWS, ids=ids(LLMD_ROWS))
def test_kv_memory_per_gpu_within_1_gib_of_vllm_0_11(row):
    ours = plan(row).kv_cache_bytes / GIB
    assert abs(ours - row.kv_gib) < 1.0, (ours, row.kv_gib, LLMD)


def test_vllm_0_11_sizes_the_kv_cache_before_its_cuda_graphs():
    """llm-d's KV figures are requested - weights - activation - non-torch: no graph term in 0.11."""
    assert plan(LLMD_ROWS[-1]).cuda_graph_bytes == 0


@pytest.mark.parametrize("version, bytes_per_logit", [("0.11.0", 38), ("0.28.0", 38), ("0.29.0", 2), ("0.33.0", 14)])
def test_the_sampler_warm_up_follows_the_release(version, bytes_per_logit):
    """The V1 runner sorts fp32 logits; Model Runner V2 samples the model-dtype logits, and from 0.33 also
    profiles its warm-up params' fp32 pipeline (profile_run.py). One row per dummy request."""
    release = VllmRelease.for_version(version)
    assert sampler_peak_bytes(release, 128256, 1024, 8192) == 1024 * 128256 * bytes_per_logit
    assert sampler_peak_bytes(release, 128256, 1024, 512) == 512 * 128256 * bytes_per_logit
