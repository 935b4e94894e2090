"""vLLM 0.33.0's KV cache groups for a model whose layers differ, and what one block costs.

`kv_cache_planning._get_kv_cache_groups_uniform_page_size`: layers are bucketed by spec, each bucket
split into groups of `group_size` layers (the smallest bucket's count, or the largest when it is
under 1.5 x the smallest), every group drawing its blocks from one shared pool. One block id is a
page in every layer of a group, so the pool's bytes per block are `group_size x page`
(`_get_kv_cache_bytes_per_block`) and `num_blocks = available // that`. A request of max_model_len
needs the sum over groups of each spec's blocks (`get_max_concurrency_for_kv_cache_config`), hence
the concurrency vLLM logs. Mamba layers' state must fit a page: vLLM raises the attention block size
to the smallest multiple of the kernel's alignment (assumed 16 tokens, FlashAttention's) whose page
holds one state, and pads the state to that page.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..utils import cdiv
from .attention_specs import MAMBA, LayerGroup

KERNEL_BLOCK_ALIGNMENT = 16
# Scheduled-but-unsettled batches (VllmConfig.max_concurrent_batches): 2 under async scheduling,
# vLLM 0.33's default; sliding-window and chunked-local groups reserve blocks for them.
MAX_CONCURRENT_BATCHES = 2


@dataclass(frozen=True)
class KvLayout:
    block_size: int  # tokens per block (raised for Mamba hybrids)
    bytes_per_block: int  # one block id across the widest group
    blocks_per_request: int  # a max_model_len request, summed over groups
    num_groups: int
    descriptions: tuple[str, ...]


def kv_layout(groups: tuple[LayerGroup, ...], tp: int, dtype_bytes: int, block_size: int, max_model_len: int,
              max_num_batched_tokens: int) -> KvLayout:
    attention = [g for g in groups if g.kind != MAMBA]
    states = [g for g in groups if g.kind == MAMBA]
    per_token = {g.bytes_per_token(tp, dtype_bytes) for g in attention}
    if len(per_token) > 1:
        raise ConfigError("model.layer_types", "attention layers with different bytes per token are not modelled "
                                               "(vLLM pads their pages to one size)")
    token_bytes = per_token.pop() if per_token else 0
    if states and token_bytes:
        state_page = max(g.state_bytes(tp, dtype_bytes) for g in states)
        needed = KERNEL_BLOCK_ALIGNMENT * cdiv(state_page, KERNEL_BLOCK_ALIGNMENT * token_bytes)
        block_size = max(block_size, needed)
    page = token_bytes * block_size if token_bytes else max(g.state_bytes(tp, dtype_bytes) for g in states)
    counts = [g.num_layers for g in groups]
    group_size = max(counts) if max(counts) < 1.5 * min(counts) else min(counts)
    in_flight = MAX_CONCURRENT_BATCHES * max_num_batched_tokens
    num_groups = blocks = 0
    for g in groups:
        n = cdiv(g.num_layers, group_size)
        num_groups += n
        blocks += n * g.blocks_per_request(max_model_len, block_size, in_flight)
    return KvLayout(block_size, group_size * page, blocks, num_groups,
                    tuple(g.describe(tp, dtype_bytes) for g in groups))
