"""Multi-head latent attention (DeepSeek-V2/V3/R1) as vLLM's MLA backends run it: two kernels a layer.

vLLM's MLA layer (vllm/v1/attention/backends/mla/common.py) splits a step's requests in two:

- **decodes** run "absorbed": W_UK is folded into the query, so each of the heads attends straight
  over the cached latent (kv_lora_rank + qk_rope_head_dim values per token, read once for all
  heads) and its output is projected back through W_UV afterwards. Per (query, key) pair and head
  that is a dot product over 576 dims and an accumulation over 512 (DeepSeek-V3's 512 + 64):
  2 x (576 + 512) FLOPs, against 2 x (192 + 128) for an ordinary head of those sizes. FlashMLA runs
  it on Hopper.
- **prompt chunks** decompress K and V from the latent (kv_b_proj) and run ordinary attention with
  qk_nope + qk_rope = 192 dims for Q.K and v_head_dim = 128 for A.V: 2 x (192 + 128) FLOPs per pair
  and head.

So the two are two rooflines, each over its own keys; a decode never fills a prompt-shaped tile
(`Efficiency.mixed_decode_query_rows` is for the dense backends' one mixed launch, not MLA's).
Not counted: the per-chunk decompression of a prompt's cached context (kv_b_proj over the cached
tokens, about 4 MFLOP per token per layer per GPU at TP 8) and W_UK/W_UV's bf16 reads at decode.
"""

from __future__ import annotations

from dataclasses import dataclass

from .attention_cost import smooth_max

# FlashMLA's README (github.com/deepseek-ai/FlashMLA): "up to 3000 GB/s in memory-bound configuration
# and 580 TFLOPS in computation-bound configuration on H800 SXM5, using CUDA 12.8". The H800 has the
# H100's compute (989 TFLOP/s dense bf16 datasheet, 796 achievable by the H200 calibration's
# fraction), so the decode kernel's compute rate is 580 / 796 of the GPU's bf16 ceiling. Its 3000
# GB/s is what the calibrated KV read already gives an H100-class GPU (1.599 x 1.88 TB/s = 3.0 TB/s).
FLASHMLA_FLOPS_PER_BF16 = 580e12 / 796.3e12


@dataclass(frozen=True)
class MlaAttention:
    """A step's MLA attention over all its layers on one GPU: decodes (absorbed, over the latent) and
    prompt chunks (decompressed) as two rooflines."""

    s_per_key: float  # reading one cached latent, all layers
    decode_s_per_pair: float
    prefill_s_per_pair: float

    @classmethod
    def build(cls, mla, heads_per_gpu: float, layers: int, s_per_key: float, bf16_flops: float,
              prefill_flops_per_s: float) -> "MlaAttention":
        decode_flops = 2 * heads_per_gpu * (mla.kv_lora_rank + mla.qk_rope_head_dim + mla.kv_lora_rank)
        prefill_flops = 2 * heads_per_gpu * (mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim)
        return cls(s_per_key, layers * decode_flops / (bf16_flops * FLASHMLA_FLOPS_PER_BF16),
                   layers * prefill_flops / prefill_flops_per_s)

    def seconds(self, prompt_pairs: int, prompt_keys: int, decode_pairs: int, decode_keys: int, p: float) -> float:
        decode_s = smooth_max(decode_keys * self.s_per_key, decode_pairs * self.decode_s_per_pair, p) if decode_keys else 0.0
        prompt_s = smooth_max(prompt_keys * self.s_per_key, prompt_pairs * self.prefill_s_per_pair, p) if prompt_keys else 0.0
        return decode_s + prompt_s
