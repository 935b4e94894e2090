"""vLLM's startup memory arithmetic: what one GPU of the tensor-parallel group holds besides the KV
cache, how many KV blocks the rest makes, and the lines vLLM prints about it.

vLLM 0.33.0 (`Worker.determine_available_memory`, `request_memory`, `kv_cache_planning`) asks for
`total memory x gpu_memory_utilization`, loads the weights, runs one dummy forward pass of
`max_num_batched_tokens` tokens (and the sampler over `max_num_seqs` rows) to measure the
activation peak, profiles CUDA-graph capture, and gives the KV cache the rest:

    available = ceil(total x utilization) - weights - activation peak - non-torch memory - CUDA graphs

The sampler's share of the peak and whether the graphs are subtracted (not before 0.20.0) follow
the release (profile_run.py).
    num_gpu_blocks = available // (block_size x layers x 2 x KV heads on this GPU x head_dim x dtype bytes)

(for a model whose layers differ, the bytes of a block id across the widest of vLLM's KV cache
groups: kv_groups.py), then logs "GPU KV cache size: N tokens, Maximum concurrency for L tokens per
request: X.XXx" with X = num_gpu_blocks / (the blocks a request of L tokens takes over every group;
cdiv(L, block_size) with one full-attention group) and N = int(X x L) (`update_kv_cache_capacity`).
The weights are computed from the checkpoint's shape; what vLLM measures (activation peak, graph
pools, non-torch allocations) is estimated from the shape, each estimate's assumption stated below.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..engine.kv_cache_groups import FULL_ATTENTION_ONLY
from ..engine.releases import LATEST, VllmRelease
from ..errors import ConfigError
from ..utils import cdiv
from .architecture import WeightInventory
from .attention_specs import FULL, LayerGroup
from .cost_model import DTYPE_BYTES, GpuSpec, ModelSpec
from .kv_groups import KvLayout, kv_layout
from .moe import ExpertPlacement
from .profile_run import cuda_graphs_in_kv_budget, sampler_peak_bytes

GIB = 1 << 30
MIB = 1 << 20
# Assumptions for what vLLM measures rather than computes:
# each CUDA graph after the first of its mode keeps about this much (vLLM's own floor is 1 MiB);
PER_GRAPH_BYTES = 2 * MIB
# cuBLAS/cuDNN workspaces and, under tensor parallelism, NCCL and custom all-reduce buffers.
NON_TORCH_BYTES = {False: 0.15 * GIB, True: 0.6 * GIB}


def kv_heads_per_gpu(model: ModelSpec, tp: int) -> int:
    """KV heads each GPU holds: split over the group, replicated when there are fewer heads than GPUs."""
    return max(1, model.kv_heads // tp)


def weight_bytes_per_gpu(model: ModelSpec, tp: int, gpu: GpuSpec | None = None,
                         placement: ExpertPlacement | None = None) -> int:
    """This GPU's shard of the checkpoint as stored: linear layers in the weight dtype (fp8 with
    an fp32 scale per output channel), the embedding and LM head in the activation dtype (an fp8
    checkpoint keeps both in bf16), the LM head counted once when tied to the embedding, norms and
    the rotary cos/sin cache replicated. Models with experts, MLA or other layers: architecture.py."""
    if model.arch is not None:
        return WeightInventory(model, placement or ExpertPlacement(tp), gpu).total_bytes
    act_bytes = 2  # activations, embeddings and norms in bf16 or fp16
    qkv_out_channels = (model.heads // tp + 2 * kv_heads_per_gpu(model, tp)) * model.head_dim
    out_channels_per_layer = qkv_out_channels + model.hidden + 2 * model.inter // tp + model.hidden
    params_per_layer = (model.hidden * qkv_out_channels + model.heads // tp * model.head_dim * model.hidden
                        + 3 * model.hidden * model.inter // tp)
    linear = model.layers * params_per_layer * DTYPE_BYTES[model.wdtype]
    if model.wdtype == "fp8":
        linear += model.layers * out_channels_per_layer * 4
    vocab_shard = cdiv(cdiv(model.vocab, tp), 64) * 64  # vLLM pads each vocabulary shard to 64 rows
    embeddings = (1 if model.tie_word_embeddings else 2) * vocab_shard * model.hidden * act_bytes
    norms = (2 * model.layers + 1) * model.hidden * act_bytes
    rotary_cache = model.max_position_embeddings * model.head_dim * act_bytes
    return linear + embeddings + norms + rotary_cache


def layer_groups(model: ModelSpec) -> tuple[LayerGroup, ...]:
    if model.arch is not None:
        return model.arch.groups
    return (LayerGroup(FULL, model.layers, model.kv_heads, model.head_dim, model.head_dim),)


def model_kv_layout(model: ModelSpec, tp: int, block_size: int, max_model_len: int, max_in_flight_tokens: int,
                    hybrid_manager: bool = True) -> KvLayout:
    return kv_layout(layer_groups(model), tp, DTYPE_BYTES[model.kv_dtype], block_size, max_model_len,
                     max_in_flight_tokens, hybrid_manager)


def kv_block_bytes(model: ModelSpec, tp: int, block_size: int) -> int:
    """One KV block on one GPU with every attention layer keeping every token (one full-attention
    group: `FullAttentionSpec.page_size_bytes` x layers): the block vLLM's V0 swap space is counted
    in, and a hybrid model's block without the hybrid KV cache manager."""
    if model.arch is not None:
        kv = DTYPE_BYTES[model.kv_dtype]
        return block_size * sum(g.num_layers * g.bytes_per_token(tp, kv) for g in model.arch.groups)
    return block_size * model.layers * 2 * kv_heads_per_gpu(model, tp) * model.head_dim * DTYPE_BYTES[model.kv_dtype]


def forward_activation_bytes(model: ModelSpec, tp: int, num_tokens: int) -> int:
    """Peak activations of one layer over `num_tokens` tokens (layers run one after another): the
    MLP's gate-up and activation outputs, the attention's q/k/v, and four hidden-sized buffers
    (input, residual, attention output, MLP output), all in bf16."""
    qkv = (model.heads // tp + 2 * kv_heads_per_gpu(model, tp)) * model.head_dim
    return num_tokens * (3 * model.inter // tp + qkv + 4 * model.hidden) * 2


def cuda_graph_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int) -> list[int]:
    """vLLM's default capture sizes: up to min(2 x max_num_seqs, 512) tokens, 1, 2, 4, then every
    8 below 256 and every 16 above (`VllmConfig._set_cudagraph_sizes`)."""
    largest = min(2 * max_num_seqs, 512, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= largest] + list(range(8, min(largest + 1, 256), 8))
    sizes += list(range(256, largest + 1, 16))
    return sizes


def cuda_graph_bytes(model: ModelSpec, tp: int, max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """vLLM's CUDA-graph estimate (`profile_cudagraph_memory`): per mode (full graphs for decode
    batches and piecewise graphs for mixed ones), the first capture's pool at the largest size
    plus a small amount per further graph."""
    sizes = cuda_graph_capture_sizes(max_num_seqs, max_num_batched_tokens)
    first = forward_activation_bytes(model, tp, sizes[-1])
    return 2 * (first + (len(sizes) - 1) * PER_GRAPH_BYTES)


@dataclass(frozen=True)
class MemoryPlan:
    """One GPU's memory as vLLM divides it at startup, and the KV cache that results."""

    gpu: str
    tensor_parallel_size: int
    total_bytes: int
    requested_bytes: int  # total x gpu_memory_utilization
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int  # the graph estimate taken out of the KV cache's memory (none before 0.20.0)
    kv_cache_bytes: int  # what is left for the KV cache; <= 0 when the model does not fit
    block_bytes: int  # one KV block id on this GPU: a page in every layer of the widest group
    block_size: int  # tokens per block (vLLM raises it for Mamba hybrids)
    max_model_len: int
    profiled_num_gpu_blocks: int  # what the memory gives (vLLM's num_blocks)
    num_gpu_blocks: int  # what the engine uses (num_gpu_blocks_override, when given, wins)
    # vLLM's KV cache groups (kv_groups.py), as the engine spells them (one entry per group, in
    # vLLM's order), and the blocks one request of max_model_len takes over all of them.
    kv_cache_groups: str = FULL_ATTENTION_ONLY
    blocks_per_request: int = 1
    kv_groups: tuple[str, ...] = ()  # each layer group's bytes, in words
    needed_bytes: int = 0  # the KV one request of max_model_len needs, every layer's (vLLM's max_memory_usage_bytes)
    estimated_max_model_len: int = 0  # when that does not fit: the longest that would
    notes: tuple[str, ...] = ()  # where the run differs from vLLM's defaults, said after vLLM's lines
    planner_lines: tuple[str, ...] = ()  # vLLM's lines about a hybrid's block size and group padding

    @property
    def max_concurrency(self) -> float:
        """Requests of max_model_len tokens the cache holds at once (`get_max_concurrency_for_kv_cache_config`)."""
        return self.num_gpu_blocks / self.blocks_per_request

    @property
    def kv_cache_size_tokens(self) -> int:
        return int(self.max_concurrency * self.max_model_len)

    def weights_do_not_fit(self) -> bool:
        return self.weights_bytes > self.requested_bytes

    def shortfall_field(self) -> str:
        """The setting a shortfall is the user's to change: the model (or the GPU) when its weights
        alone overflow, what the memory is shared with otherwise; never num_gpu_blocks, which the
        user did not give and which is what came out too small."""
        if self.kv_cache_bytes <= 0:
            return "model" if self.weights_do_not_fit() else "gpu_memory_utilization"
        return "max_model_len"

    def shortfall(self) -> str:
        """Why and by how much the model does not fit, in vLLM's words; empty when it fits."""
        if self.kv_cache_bytes <= 0:
            lead = (f"The model does not fit: its weights alone take {gib(self.weights_bytes)} GiB on each GPU, more than "
                    f"the {gib(self.requested_bytes)} GiB requested of each of {self.tensor_parallel_size} x {self.gpu}. "
                    if self.weights_do_not_fit() else "")
            return lead + (f"No available memory for the cache blocks: weights {gib(self.weights_bytes)} GiB + activation "
                    f"peak {gib(self.activation_peak_bytes)} GiB + non-torch {gib(self.non_torch_bytes)} GiB + CUDA "
                    f"graphs {gib(self.cuda_graph_bytes)} GiB exceed the {gib(self.requested_bytes)} GiB requested "
                    f"(total {gib(self.total_bytes)} GiB x gpu_memory_utilization) on each of "
                    f"{self.tensor_parallel_size} x {self.gpu} by {gib(-self.kv_cache_bytes)} GiB. Try increasing "
                    "`gpu_memory_utilization` or `tensor_parallel_size`.")
        needed, estimated = self.needed_bytes, self.estimated_max_model_len
        if needed > self.kv_cache_bytes:
            return (f"To serve at least one request with the model's max seq len ({self.max_model_len}), "
                    f"({gib(needed)} GiB KV cache is needed, which is larger than the available KV cache memory "
                    f"({gib(self.kv_cache_bytes)} GiB). Based on the available memory, the estimated maximum model "
                    f"length is {estimated}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len`.")
        return ""

    def startup_lines(self) -> list[str]:
        """The lines vLLM logs while it starts, with the simulation's numbers."""
        raise_line = [line for line in self.planner_lines if line.startswith("Setting")]  # at config time, first
        lines = [*raise_line, f"Model loading took {gib(self.weights_bytes)} GiB memory",
                 f"Available KV cache memory: {gib(self.kv_cache_bytes)} GiB",
                 *(line for line in self.planner_lines if line not in raise_line)]
        if self.num_gpu_blocks != self.profiled_num_gpu_blocks:
            lines.append(f"Overriding num_gpu_blocks={self.profiled_num_gpu_blocks} with "
                         f"num_gpu_blocks_override={self.num_gpu_blocks}")
        lines.append(f"GPU KV cache size: {self.kv_cache_size_tokens:,} tokens")
        lines.append(f"Maximum concurrency for {self.max_model_len:,} tokens per request: {self.max_concurrency:.2f}x")
        return lines + list(self.notes)

    def to_dict(self) -> dict:
        return {**asdict(self), "kv_cache_size_tokens": self.kv_cache_size_tokens,
                "max_concurrency": self.max_concurrency, "startup_lines": self.startup_lines(),
                "shortfall": self.shortfall()}


def gib(num_bytes: float) -> str:
    return f"{round(num_bytes / GIB, 2)}"  # vLLM's format_gib


def plan_memory(
    model: ModelSpec, gpu: GpuSpec, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.92,
    block_size: int = 16, max_num_batched_tokens: int = 2048, max_num_seqs: int = 256, max_model_len: int = 4096,
    enforce_eager: bool = False, num_gpu_blocks_override: int | None = None, data_parallel_size: int = 1,
    enable_expert_parallel: bool = False, max_concurrent_batches: int = 2, hybrid_kv_cache_manager: bool = True,
    vllm_version: str = LATEST,
) -> MemoryPlan:
    """How vLLM would divide one GPU's memory for this model and engine configuration: the KV cache
    in vLLM's groups (kv_groups.py; one full-attention group for a dense model), `num_gpu_blocks` its
    `num_blocks`. `max_concurrent_batches`: 2 under async scheduling (vLLM 0.33's default), else 1.
    `vllm_version` decides what the profile run counts (profile_run.py)."""
    tp = tensor_parallel_size
    release = VllmRelease.for_version(vllm_version)
    requested = math.ceil(gpu.mem_bytes * gpu_memory_utilization)
    weights = weight_bytes_per_gpu(model, tp, gpu, ExpertPlacement(tp, data_parallel_size, enable_expert_parallel))
    sampler = sampler_peak_bytes(release, model.vocab, max_num_seqs, max_num_batched_tokens)
    activation = max(forward_activation_bytes(model, tp, max_num_batched_tokens), sampler)
    non_torch = int(NON_TORCH_BYTES[tp > 1])
    graphs = 0 if enforce_eager or not cuda_graphs_in_kv_budget(release) else cuda_graph_bytes(
        model, tp, max_num_seqs, max_num_batched_tokens)
    available = requested - weights - activation - non_torch - graphs
    in_flight = max_concurrent_batches * max_num_batched_tokens

    def layout_for(length: int) -> KvLayout:
        return model_kv_layout(model, tp, block_size, length, in_flight, hybrid_kv_cache_manager)

    layout = layout_for(max_model_len)
    profiled = max(0, available // layout.bytes_per_block)
    estimated = 0
    if layout.max_memory_usage_bytes > available > 0:
        # vLLM's estimate_max_model_len: the longest context whose request fits, by bisection.
        low, high = 0, max_model_len
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if layout_for(mid).max_memory_usage_bytes <= available else (low, mid - 1)
        estimated = low
    return MemoryPlan(
        gpu=gpu.name, tensor_parallel_size=tp, total_bytes=int(gpu.mem_bytes), requested_bytes=requested,
        weights_bytes=weights, activation_peak_bytes=activation, non_torch_bytes=non_torch, cuda_graph_bytes=graphs,
        kv_cache_bytes=available, block_bytes=layout.bytes_per_block, block_size=layout.block_size,
        max_model_len=max_model_len, profiled_num_gpu_blocks=profiled,
        num_gpu_blocks=profiled if num_gpu_blocks_override is None else num_gpu_blocks_override,
        kv_cache_groups=layout.kv_cache_groups, blocks_per_request=layout.blocks_per_request, kv_groups=layout.descriptions,
        needed_bytes=layout.max_memory_usage_bytes, estimated_max_model_len=estimated,
        planner_lines=layout.planner_lines(),
    )


def num_gpu_blocks_from_memory(plan: MemoryPlan) -> int:
    """The KV blocks the memory gives, or vLLM's refusal (naming by how much) when it gives none."""
    reason = plan.shortfall()
    if reason:
        raise ConfigError(plan.shortfall_field(), reason)
    return plan.profiled_num_gpu_blocks
