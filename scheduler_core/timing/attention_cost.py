"""A step's attention, layer group by layer group: the keys each layer kind reads and attends to.

For one request whose chunk covers positions c .. c+n-1 (c cached tokens before it, n new), the new
token at position p attends, in a layer of each kind (attention_specs.py), to:

    full attention, MLA     every position 0 .. p                       p + 1 keys
    sliding window W        the last W positions, itself included       min(p + 1, W) keys
    chunked local C         its own chunk, (p // C) * C .. p            p mod C + 1 keys
    state (Mamba, DeltaNet) no keys: a fixed state per request, read and written back

The rules are those of vLLM's kernels, which skip the key blocks a query cannot see rather than mask
them: FlashAttention runs a sliding-window layer with `window_size = (sliding_window - 1, 0)`
(vllm/v1/attention/backends/flash_attn.py; FlashInfer and Triton take the same left window), and
its tile loop starts at the window's first block, so only the window is read. Chunked local
attention (vllm/attention/layers/chunked_local_attention.py) splits each request into one
"virtual" request per attention chunk (`make_local_attention_virtual_batches` in
vllm/v1/attention/backends/utils.py), whose keys are that chunk's tokens only. A gated DeltaNet or
Mamba layer (vLLM's fla / mamba ops) updates its recurrent state once per new token.

So the keys read are the union of what the chunk's queries see (min(c, W - 1) + n for a window,
c mod C + n for local chunks, c + n in full), and the query-key pairs are the prefix sums below. The
kernels read whole tiles, so a window costs up to a tile more than counted: small against a long
context, which is what these rules are for. Each group is its own roofline (its layers' kernels run
apart), as the dense formula is for identical layers.
"""

from __future__ import annotations

from collections.abc import Iterable

from .attention_specs import CHUNKED_LOCAL, MAMBA, MLA, SLIDING_WINDOW, LayerGroup

# Per new token, a gated-DeltaNet state of d_k x d_v is used three times (S.k for the delta rule,
# the rank-one update, S.q for the output), at 2 FLOPs an element each; the short convolution
# (a few FLOPs per channel) is small beside it and not counted.
STATE_FLOPS_PER_ELEMENT = 6


def smooth_max(a: float, b: float, p: float) -> float:
    """A roofline's limit with a rounded corner, `(a^p + b^p)^(1/p)`: near it both limits cost something."""
    return (a**p + b**p) ** (1.0 / p)


def _keys_before(kind: str, window: int, position: int) -> int:
    """Query-key pairs of the queries at positions 0 .. position-1 in one layer of this kind."""
    if kind == SLIDING_WINDOW and position > window:
        return window * (window + 1) // 2 + (position - window) * window
    if kind == CHUNKED_LOCAL:
        full_chunks, rest = divmod(position, window)
        return full_chunks * window * (window + 1) // 2 + rest * (rest + 1) // 2
    return position * (position + 1) // 2


def _keys_read(kind: str, window: int, num_new: int, num_cached: int) -> int:
    """Keys one chunk reads in one layer: everything its queries see."""
    if kind == SLIDING_WINDOW:
        return min(num_cached, window - 1) + num_new
    if kind == CHUNKED_LOCAL:
        return num_cached % window + num_new
    return num_cached + num_new


class GroupedAttention:
    """The attention part of a step for a model whose layers differ (sliding windows, local chunks,
    state layers): per group, a smooth maximum of its KV (or state) reads and its FLOPs."""

    def __init__(self, groups: Iterable[LayerGroup], heads_per_gpu: float, mla_head_dim: int, tp: int,
                 kv_dtype_bytes: int, read_bytes_per_s: float, flops_per_s: float, mixed_decode_query_rows: float):
        self.rows = mixed_decode_query_rows
        self.groups = []  # (kind, window, s per key read, s per query-key pair, s per request, s per new token)
        for g in groups:
            n = g.num_layers
            if g.kind == MAMBA:
                heads, head_v, head_k = g.ssm_state
                state_flops = STATE_FLOPS_PER_ELEMENT * heads // tp * head_v * head_k
                # The state is read at the chunk's start and written back at its end.
                self.groups.append((g.kind, 0, 0.0, 0.0, 2 * n * g.state_bytes(tp) / read_bytes_per_s,
                                    n * state_flops / flops_per_s))
                continue
            head_dim = mla_head_dim if g.kind == MLA else g.head_size
            # Q.K^T and A.V: 2 matmuls x 2 FLOPs per (query token, key token, head dim, head).
            self.groups.append((g.kind, g.window, n * g.bytes_per_token(tp, kv_dtype_bytes) / read_bytes_per_s,
                                4 * n * heads_per_gpu * head_dim / flops_per_s, 0.0, 0.0))

    def seconds(self, chunks: list[tuple[int, int]], has_prompt_chunk: bool, p: float) -> float:
        """Attention time of a step's chunks, (new tokens, cached tokens before) per request. In a
        mixed step a decode costs `mixed_decode_query_rows` query rows (cost_model.Efficiency)."""
        extra_rows = self.rows - 1 if has_prompt_chunk else 0.0
        total = 0.0
        for kind, window, s_per_key, s_per_pair, s_per_request, s_per_token in self.groups:
            if kind == MAMBA:
                total += smooth_max(len(chunks) * s_per_request, sum(n for n, _ in chunks) * s_per_token, p)
                continue
            keys = pairs = 0
            decode_keys = 0
            for num_new, num_cached in chunks:
                keys += _keys_read(kind, window, num_new, num_cached)
                pairs += _keys_before(kind, window, num_cached + num_new) - _keys_before(kind, window, num_cached)
                if num_new == 1:
                    decode_keys += _keys_read(kind, window, 1, num_cached)
            total += smooth_max(keys * s_per_key, (pairs + extra_rows * decode_keys) * s_per_pair, p)
        return total
