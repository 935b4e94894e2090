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
token. With expert parallelism each GPU holds E / EP experts and reads the same fraction of them.
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

    @property
    def moe_world(self) -> int:
        return self.tp * self.dp

    def experts_per_gpu(self, moe: MoeSpec) -> int:
        return cdiv(moe.num_experts, self.moe_world) if self.expert_parallel else moe.num_experts

    def inter_per_gpu(self, moe: MoeSpec, padding: int = 1) -> int:
        shard = moe.expert_inter if self.expert_parallel else moe.expert_inter // self.moe_world
        return cdiv(shard, padding) * padding
