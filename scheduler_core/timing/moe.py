"""Mixture-of-experts layers: how many experts a batch touches, and how they are spread over GPUs.

The expected number of distinct experts a step's tokens route to, per MoE layer. Assume each token
picks `k = num_experts_per_tok` distinct experts out of `E`, every expert equally likely, tokens
independent (routers are trained towards balance; real batches are somewhat more concentrated,
which this over-counts). One token leaves a given expert out with probability

    P(not chosen by one token) = C(E-1, k) / C(E, k) = (E - k) / E = 1 - k/E,

so T tokens leave it out with probability (1 - k/E)^T, and by linearity of expectation

    E[distinct experts] = E x (1 - (1 - k/E)^T).

T = 1 gives k (a lone decode reads k experts a layer); as T grows it tends to E (a large prefill
reads every expert once). A step's weight traffic is the non-expert weights plus that many experts'
weights per MoE layer; its compute is the active parameters (k experts, and any shared expert) per
token.

Under data parallelism (vLLM's `--data-parallel-size`), every MoE layer runs on the tokens of all
DP ranks together: vLLM's default all2all backend (`allgather_reducescatter`,
vllm/distributed/device_communicators/all2all.py `AgRsAll2AllManager`) all-gathers the ranks'
hidden states over the DP group before the experts and reduce-scatters the experts' output after
them. With T the tokens of the whole DP group (each rank's batch padded to the largest under CUDA
graphs, `coordinate_batch_across_dp`), and N = TP x DP GPUs holding the experts:

- without expert parallelism, every GPU holds 1/N of every expert's intermediate dimension and
  reads its slice of each touched expert: E[distinct experts](T) x (expert bytes / N);
- with `--enable-expert-parallel` (EP size = TP x DP, `FusedMoEParallelConfig.make`), every GPU
  holds E/N whole experts (vLLM's "linear" placement, `determine_expert_map`). A given expert is
  untouched by T tokens with probability (1 - k/E)^T, as above, so the GPU reads in expectation
  (E/N) x (1 - (1 - k/E)^T) = E[distinct experts](T) / N whole experts;
- either way a GPU multiplies T x k / N expert-token products of a whole expert in expectation.

So with balanced routing the two placements cost the same weight traffic and FLOPs; what differs
is that EP gives each GPU whole, wide experts (no thin 256-column slices) and that real routing
is not balanced (the busiest GPU sets the time; vLLM's EPLB, not modelled, moves experts to even
it out). Both charge the dispatch and combine collectives (`MoeDispatch` below).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..utils import cdiv


@dataclass(frozen=True)
class MoeSpec:
    """The MoE part of a decoder, as its config.json gives it."""

    num_experts: int  # routed experts per MoE layer
    experts_per_token: int  # k
    expert_inter: int  # each expert's intermediate size (moe_intermediate_size)
    num_moe_layers: int
    shared_expert_inter: int = 0  # the always-active shared expert(s), summed
    expert_format: str = ""  # "" when the experts are stored as the rest of the model
    expert_bias: bool = False  # gpt-oss's experts carry biases

    def __post_init__(self):
        if self.experts_per_token > self.num_experts:
            raise ConfigError("model.num_experts_per_tok", f"{self.experts_per_token} exceeds the "
                                                           f"{self.num_experts} experts")

    def expected_distinct_experts(self, num_tokens: int) -> float:
        """E x (1 - (1 - k/E)^T): see the module docstring for the derivation."""
        experts, k = self.num_experts, self.experts_per_token
        return experts * (1.0 - (1.0 - k / experts) ** num_tokens)

    def expert_params(self, hidden: int) -> int:
        """One routed expert: gate, up and down projections (and their biases, if any)."""
        return 3 * hidden * self.expert_inter + (2 * self.expert_inter + hidden if self.expert_bias else 0)


@dataclass(frozen=True)
class ExpertPlacement:
    """How one MoE layer's experts spread over `tp x dp` GPUs: vLLM's FusedMoE shards every expert's
    intermediate dimension over all of them, or with --enable-expert-parallel gives each GPU whole
    experts (EP size = TP x DP), attention staying tensor-parallel within each data-parallel rank."""

    tp: int = 1
    dp: int = 1
    expert_parallel: bool = False

    def __post_init__(self):
        if self.expert_parallel and self.moe_world == 1:
            # FusedMoEParallelConfig.make: use_ep only when dp x tp > 1; EP over one GPU is the plain layer.
            object.__setattr__(self, "expert_parallel", False)

    @property
    def moe_world(self) -> int:
        return self.tp * self.dp

    @property
    def ep_size(self) -> int:
        """vLLM's EP size: TP x DP GPUs under --enable-expert-parallel, else 1."""
        return self.moe_world if self.expert_parallel else 1

    def experts_per_gpu(self, moe: MoeSpec) -> int:
        return cdiv(moe.num_experts, self.moe_world) if self.expert_parallel else moe.num_experts

    def startup_line(self, moe: MoeSpec) -> str:
        """What vLLM logs for EP rank 0 (`ExpertMapManager`, fused_moe/expert_map_manager.py), which
        holds the most experts when they do not divide evenly; empty without expert parallelism."""
        if not self.expert_parallel:
            return ""
        return (f"[EP Rank 0/{self.ep_size}] Expert parallelism is enabled. Expert placement strategy: linear. "
                f"Local/global number of experts: {self.experts_per_gpu(moe)}/{moe.num_experts}.")

    def inter_per_gpu(self, moe: MoeSpec, padding: int = 1) -> int:
        shard = moe.expert_inter if self.expert_parallel else moe.expert_inter // self.moe_world
        return cdiv(shard, padding) * padding


# GPUs one NVLink domain joins: an HGX node's 8, a GB200 NVL72 rack's 72. A DP group larger than
# that runs its collectives across nodes, at the inter-node link's rate per GPU: NDR InfiniBand,
# 400 Gb/s (the `infiniband` link of cluster/kv_transfer.py).
NVLINK_DOMAIN_GPUS = {"gb200": 72}
GPUS_PER_NODE = 8
INTER_NODE_BANDWIDTH = 50e9


def dispatch_bandwidth(gpu, num_gpus: int) -> float:
    """Bytes/s per GPU for the MoE collectives over `num_gpus` GPUs: the interconnect within one
    NVLink domain, the inter-node link beyond it (a ring is as fast as its slowest hop)."""
    if num_gpus <= NVLINK_DOMAIN_GPUS.get(gpu.name, GPUS_PER_NODE):
        return gpu.interconnect_bandwidth
    return min(gpu.interconnect_bandwidth, INTER_NODE_BANDWIDTH)


@dataclass(frozen=True)
class MoeDispatch:
    """The two collectives of one MoE layer across `dp` data-parallel ranks with vLLM's default
    `allgather_reducescatter` backend: an all-gather of every rank's hidden states (dispatch) and a
    reduce-scatter of the experts' output (combine), both over the DP group.

    A ring all-gather or reduce-scatter over n GPUs moves (n - 1)/n of the whole gathered tensor
    through each GPU's link (NCCL's bus-bandwidth factor for both, nccl-tests doc/PERFORMANCE.md),
    so each costs a latency plus (dp - 1)/dp x T x hidden x 2 bytes (bf16 activations) over the
    interconnect. The latency is the fitted per-call all-reduce latency (no independent figure for
    NCCL's all-gather here); DeepEP and the other all2all backends are not modelled."""

    dp: int
    hidden: int
    link_bandwidth: float  # bytes/s per direction between two GPUs
    latency_s: float

    def seconds(self, num_tokens: int) -> float:
        """One MoE layer's dispatch plus combine for `num_tokens` tokens of the whole DP group."""
        if self.dp <= 1:
            return 0.0
        moved = (self.dp - 1) / self.dp * num_tokens * self.hidden * 2
        return 2 * (self.latency_s + moved / self.link_bandwidth)
