"""KV cache bytes per token per layer group, as vLLM 0.33.0's `kv_cache_interface` specs compute them.

One page holds `block_size` tokens of one layer: `AttentionSpec.page_size_bytes` = KV heads on the
GPU x block_size x (head_size + head_size_v) x dtype bytes. Full attention (`FullAttentionSpec`)
with grouped- or multi-query heads splits the KV heads over tensor parallelism and replicates them
when there are fewer heads than GPUs. MLA (`MLAAttentionSpec`) stores one latent of
kv_lora_rank + qk_rope_head_dim per token (head_size_v 0) on every GPU of the group: its latent is
not split by TP. Sliding-window (`SlidingWindowSpec`) and chunked local attention
(`ChunkedLocalAttentionSpec`) pages are the same size as full attention's, but a request holds at
most the window's blocks. Linear attention / Mamba layers (`MambaSpec`) hold a fixed state per
request, whatever its length, in the model's dtype (vLLM's `mamba_cache_dtype` auto: bf16 here,
whatever `--kv-cache-dtype` says). Attention sinks (gpt-oss) are one learned logit per head: weights,
no KV.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.kv_cache_groups import KVCacheGroupSpec
from ..engine.single_type_kv_cache_manager import max_admission_blocks_per_request
from ..utils import cdiv

FULL, SLIDING_WINDOW, CHUNKED_LOCAL, MLA, MAMBA = "full_attention", "sliding_window", "chunked_local", "mla", "mamba"
STATE_DTYPE_BYTES = 2  # Mamba / DeltaNet states in bf16, the model's dtype


@dataclass(frozen=True)
class LayerGroup:
    """Layers of one kind with one KV spec. For MAMBA, `state_bytes(tp)` is the per-request state."""

    kind: str
    num_layers: int
    num_kv_heads: int = 1
    head_size: int = 0
    head_size_v: int = 0
    window: int = 0  # sliding_window or attention_chunk_size
    conv_state: tuple[int, int] = (0, 0)  # MAMBA: (channels, kernel - 1), split over TP on channels
    ssm_state: tuple[int, int, int] = (0, 0, 0)  # MAMBA: (heads, head_v, head_k), split over TP on heads

    def kv_heads_per_gpu(self, tp: int) -> int:
        return 1 if self.kind == MLA else max(1, self.num_kv_heads // tp)

    def bytes_per_token(self, tp: int, dtype_bytes: int) -> int:
        """One token of one layer on one GPU (0 for state layers)."""
        if self.kind == MAMBA:
            return 0
        return self.kv_heads_per_gpu(tp) * (self.head_size + self.head_size_v) * dtype_bytes

    def state_bytes(self, tp: int) -> int:
        """MAMBA: one request's conv and recurrent state in one layer on one GPU."""
        channels, width = self.conv_state
        heads, head_v, head_k = self.ssm_state
        return (channels // tp * width + heads // tp * head_v * head_k) * STATE_DTYPE_BYTES

    def blocks_per_request(self, max_model_len: int, block_size: int, max_in_flight_tokens: int) -> int:
        """Blocks one request of max_model_len tokens holds in this group (the specs'
        max_memory_usage_bytes / page_size_bytes): every block for full attention and MLA, the
        window plus the tokens in flight (+1 for a window not starting on a block boundary) for
        sliding windows, a chunk plus those tokens for chunked local attention, one state for Mamba."""
        if self.kind in (FULL, MLA):
            return cdiv(max_model_len, block_size)
        if self.kind in (SLIDING_WINDOW, CHUNKED_LOCAL):
            # The same bound the engine's managers hold a request to.
            return max_admission_blocks_per_request(KVCacheGroupSpec(self.kind, self.window), block_size,
                                                    max_in_flight_tokens, max_model_len)
        return 1

    def describe(self, tp: int, dtype_bytes: int) -> str:
        if self.kind == MAMBA:
            return f"{self.num_layers} x {self.kind}: {self.state_bytes(tp):,} B state per request per layer"
        window = f" (window {self.window})" if self.window else ""
        return f"{self.num_layers} x {self.kind}{window}: {self.bytes_per_token(tp, dtype_bytes):,} B per token per layer"
