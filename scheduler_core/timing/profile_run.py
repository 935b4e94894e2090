"""What vLLM's startup profile run counts besides the forward pass, release by release: the
sampler's warm-up over the dummy batch's rows of logits, and whether the CUDA-graph estimate comes
out of the KV cache's memory (`engine/releases.py`, rows of kind MEMORY_PROFILE).

`profile_run` runs `_dummy_run(max_num_batched_tokens)` with `min(max_num_batched_tokens,
max_num_seqs)` requests, so its last hidden states have that many rows, then `_dummy_sampler_run`
on them; "peak activation" is the torch peak over both. The sampler's share is rows x vocabulary x
the bytes alive per logit at the warm-up's peak, which depends on the code the release runs:

- V1 model runner (the default before 0.29; vllm/v1/worker/gpu_model_runner.py,
  `_dummy_sampler_run`): SamplingMetadata with temperature 0.5, top_p 0.9 and top_k = vocab - 1,
  so `apply_top_k_top_p` sorts every row (FlashInfer's sampler was opt-in through 0.20.2:
  `VLLM_USE_FLASHINFER_SAMPLER` unset is None in vllm/envs.py; from 0.21.0, where it defaults to
  True, the warm-up still runs `forward_native` a second time with a generator). Alive while the
  sort runs: the model-dtype logits (2 B), Sampler.forward's fp32 copy (4), the sorted values and
  their int64 indices (4 + 8), and PyTorch's segmented radix sort's own working set for rows wider
  than 4,096: an int64 iota of the indices it sorts with the keys (8) and cub's alternate key and
  value buffers (4 + 8). 38 bytes. The PyTorch part is read from its algorithm
  (aten/src/ATen/native/cuda/SortStable.cu), not measured here; nothing is fitted to llm-d's table,
  which tests/timing/test_llmd_memory.py checks it against.
- Model Runner V2, 0.29.0-0.32.0 (vllm/v1/worker/gpu/model_runner.py, `_dummy_sampler_run`, whose
  NOTE says the profiling "may skip top_k, top_p, and logprobs"):
  one pass over the model-dtype logits with no per-request processing: no fp32 copy, no top-k/top-p,
  and the Gumbel sampler keeps only per-block maxima. The logits alone: 2 bytes.
- Model Runner V2, 0.33.0 (same function, line 993 of the 0.33.0 wheel, its "Warmup-param pass"):
  a second pass with
  `SamplingParams.for_sampler_warmup()` registered for every row. `Sampler.apply_sampling_params`
  copies the logits to fp32 (vllm/v1/worker/gpu/sample/sampler.py:242, `torch.empty_like(...,
  dtype=torch.float32).copy_(logits)`), penalties, temperature and min_p work in place, and with
  both top-k and top-p set `flashinfer_sample` (vllm/v1/sample/ops/topk_topp_sampler.py:631) calls
  FlashInfer's `top_k_top_p_sampling_from_logits`, which masks the top-k into a new fp32 tensor and
  softmaxes it into another (its default top_k_first order; FlashInfer's source is not in the vLLM
  wheel, so this step is as FlashInfer's Python API documents it, not read here); the logprobs
  kernel keeps only top-5 columns (`compute_token_logprobs` never builds the [rows, vocab]
  logprobs). 2 + 4 + 4 + 4 = 14 bytes.
"""

from __future__ import annotations

from ..engine.releases import VllmRelease

V1_SORTED_WARMUP_BYTES_PER_LOGIT = 38
MRV2_PLAIN_WARMUP_BYTES_PER_LOGIT = 2
MRV2_WARMUP_PARAMS_BYTES_PER_LOGIT = 14


def sampler_bytes_per_logit(release: VllmRelease) -> int:
    """Bytes alive per (row, vocabulary entry) at the peak of the release's sampler warm-up."""
    if release.has("sampler_warmup_params_profiled"):
        return MRV2_WARMUP_PARAMS_BYTES_PER_LOGIT
    if release.has("sampler_warmup_model_runner_v2"):
        return MRV2_PLAIN_WARMUP_BYTES_PER_LOGIT
    return V1_SORTED_WARMUP_BYTES_PER_LOGIT


def sampler_peak_bytes(release: VllmRelease, vocab: int, max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """The sampler warm-up's peak over the profile run's rows (one logit row per dummy request)."""
    return min(max_num_seqs, max_num_batched_tokens) * vocab * sampler_bytes_per_logit(release)


def cuda_graphs_in_kv_budget(release: VllmRelease) -> bool:
    """Whether the release takes its CUDA-graph estimate out of the KV cache's memory; before 0.20.0
    graphs were captured after the KV cache was sized (llm-d's 0.11.0 KV figures are
    requested - weights - activation peak - non-torch, with no graph term)."""
    return release.has("cudagraph_memory_in_kv_budget")
