"""vLLM 0.33.0's KV cache groups for a model, what one block costs, and the engine's spelling of them.

`kv_cache_planning._get_kv_cache_groups_uniform_page_size`: layers are bucketed by spec in the order
the model registers its layers (so the kind of layer 0 comes first), each bucket split into groups of
`group_size` layers (the smallest bucket's count, or the largest when it is under 1.5 x the
smallest), every group drawing its blocks from one shared pool. Gemma-3-27B's 52 sliding and 10 full
layers make 6 sliding-window groups then 1 full-attention group; gpt-oss's 18 + 18, one of each. One
block id is a page in every layer of a group, so the pool's bytes per block are `group_size x page`
(`_get_kv_cache_bytes_per_block`) and `num_blocks = available // that`. A request of max_model_len
needs the sum over groups of each spec's blocks (`get_max_concurrency_for_kv_cache_config`), hence
the concurrency vLLM logs. Mamba layers' state must fit a page: vLLM raises the attention block size
to the smallest multiple of the kernel's alignment (FlashAttention's 16 tokens, or the block size
asked for when larger: `Platform._align_hybrid_block_size`) whose page holds one state, and pads the
state to that page. The state is kept in the model's dtype (`mamba_cache_dtype` auto), not the KV
cache's.

Without the hybrid KV cache manager (`--disable-hybrid-kv-cache-manager`, or what vLLM turns off
itself) every sliding-window and chunked-local layer is promoted to full attention
(`unify_hybrid_kv_cache_specs`): one group keeping every token in every layer. Mamba layers cannot be
promoted; vLLM fails to start such a model without the manager.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import kv_cache_groups as engine_groups
from ..engine.kv_cache_groups import FULL_ATTENTION_ONLY, MAX_KV_CACHE_GROUPS
from ..errors import ConfigError
from ..utils import cdiv
from .attention_specs import CHUNKED_LOCAL, FULL, MAMBA, MLA, SLIDING_WINDOW, LayerGroup

KERNEL_BLOCK_ALIGNMENT = 16
# The engine's name for each layer kind's group (engine/kv_cache_groups.py); MLA's spec is a full-attention one.
ENGINE_GROUP_KIND = {FULL: engine_groups.FULL_ATTENTION, MLA: engine_groups.FULL_ATTENTION,
                     SLIDING_WINDOW: engine_groups.SLIDING_WINDOW, CHUNKED_LOCAL: engine_groups.CHUNKED_LOCAL,
                     MAMBA: engine_groups.MAMBA}


@dataclass(frozen=True)
class KvLayout:
    block_size: int  # tokens per block (raised for Mamba hybrids)
    bytes_per_block: int  # one block id across the widest group
    blocks_per_request: int  # a max_model_len request, summed over groups
    num_groups: int
    descriptions: tuple[str, ...]
    # The engine's `kv_cache_groups`: one entry per vLLM KV cache group, in vLLM's group order.
    kv_cache_groups: str = FULL_ATTENTION_ONLY
    max_memory_usage_bytes: int = 0  # one max_model_len request, summed over layers (not padding slots)
    # What vLLM logs of it: the Mamba block-size raise (its tokens, else 0) and, per bucket that does
    # not fill its groups, (padding layers, the bucket's layers).
    raised_block_size: int = 0
    padding: tuple[tuple[int, int], ...] = ()

    def planner_lines(self) -> tuple[str, ...]:
        """vLLM's own log lines about the block size and the groups (`_align_hybrid_block_size`,
        `_get_kv_cache_groups_uniform_page_size`), in the order it prints them."""
        lines = [f"Setting attention block size to {self.raised_block_size} tokens to ensure that attention page size "
                 "is >= mamba page size."] if self.raised_block_size else []
        return tuple(lines + [f"Add {pad} padding layers, may waste at most {pad / layers * 100:.2f}% KV cache memory"
                              for pad, layers in self.padding])


def engine_group_entry(group: LayerGroup) -> str:
    kind = ENGINE_GROUP_KIND[group.kind]
    return f"{kind}:{group.window}" if group.window else kind


def promote_local_layers(groups: tuple[LayerGroup, ...]) -> tuple[LayerGroup, ...]:
    """vLLM without the hybrid manager: sliding-window and chunked-local layers kept as full
    attention (every token, every layer) beside the full ones, merged into one bucket."""
    if not any(g.kind in (FULL, MLA) for g in groups) or all(g.kind in (FULL, MLA) for g in groups):
        return groups  # nothing to promote to, or nothing to promote
    if any(g.kind == MAMBA for g in groups):
        raise ConfigError("kv_cache_groups", "a model with Mamba / linear-attention layers needs vLLM's hybrid KV cache "
                                             "manager (vLLM fails to start it without one)")
    layers = sum(g.num_layers for g in groups)
    full = next(g for g in groups if g.kind in (FULL, MLA))
    return (LayerGroup(full.kind, layers, full.num_kv_heads, full.head_size, full.head_size_v),)


def kv_layout(groups: tuple[LayerGroup, ...], tp: int, dtype_bytes: int, block_size: int, max_model_len: int,
              max_in_flight_tokens: int, hybrid_manager: bool = True) -> KvLayout:
    """vLLM's groups and block arithmetic for these layer groups (in layer order). `max_in_flight_tokens`
    is `VllmConfig.max_in_flight_tokens`: max_num_batched_tokens per batch that may be in flight (two
    under async scheduling, one otherwise)."""
    if not hybrid_manager:
        groups = promote_local_layers(groups)
    attention = [g for g in groups if g.kind != MAMBA]
    states = [g for g in groups if g.kind == MAMBA]
    per_token = {g.bytes_per_token(tp, dtype_bytes) for g in attention}
    if len(per_token) > 1:
        raise ConfigError("model.layer_types", "attention layers with different bytes per token are not modelled "
                                               "(vLLM pads their pages to one size)")
    token_bytes = per_token.pop() if per_token else 0
    raised = 0
    if states and token_bytes:
        state_page = max(g.state_bytes(tp) for g in states)
        alignment = max(KERNEL_BLOCK_ALIGNMENT, block_size)
        block_size = max(block_size, alignment * cdiv(state_page, alignment * token_bytes))
        # vLLM logs the raise from its default size; a block already raised (a scenario's engine) still shows it.
        from_default = KERNEL_BLOCK_ALIGNMENT * cdiv(state_page, KERNEL_BLOCK_ALIGNMENT * token_bytes)
        raised = block_size if block_size == from_default > KERNEL_BLOCK_ALIGNMENT else 0
    page = token_bytes * block_size if token_bytes else max(g.state_bytes(tp) for g in states)
    counts = [g.num_layers for g in groups]
    group_size = max(counts) if max(counts) < 1.5 * min(counts) else min(counts)
    num_groups = sum(cdiv(g.num_layers, group_size) for g in groups)
    if num_groups > MAX_KV_CACHE_GROUPS:
        raise ConfigError("model.layer_types", f"makes {num_groups:,} KV cache groups ({group_size} layers each); at "
                                               f"most {MAX_KV_CACHE_GROUPS} are modelled")
    entries, blocks, needed = [], 0, 0
    for g in groups:
        n = cdiv(g.num_layers, group_size)
        entries += [engine_group_entry(g)] * n
        per_layer = g.blocks_per_request(max_model_len, block_size, max_in_flight_tokens)
        blocks += n * per_layer
        needed += g.num_layers * per_layer * page
    padding = tuple((-g.num_layers % group_size, g.num_layers) for g in groups if g.num_layers % group_size)
    return KvLayout(block_size, group_size * page, blocks, num_groups,
                    tuple(g.describe(tp, dtype_bytes) for g in groups), ",".join(entries), needed, raised, padding)
