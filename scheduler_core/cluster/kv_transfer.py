"""Moving a prefilled request's KV blocks from a prefill replica to a decode replica.

A link has a per-GPU bandwidth (bytes/s, one direction) and a fixed latency per transfer. Each
GPU of a tensor-parallel group holds its share of the KV heads (for MLA, a whole copy of the latent)
and sends it over its own link, so the shards move in parallel over min(prefill TP, decode TP) links.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..timing.cost_model import ModelSpec
from ..utils import cdiv


@dataclass(frozen=True)
class KVLink:
    """A link between the prefill and the decode pool."""

    name: str
    bandwidth: float  # bytes/s per GPU, one direction
    latency_s: float  # per transfer: connection set-up, descriptor exchange, first byte

    def __post_init__(self) -> None:
        if not self.bandwidth > 0:
            raise ConfigError("cluster.link_bandwidth", f"must be > 0 bytes/s, got {self.bandwidth!r}")
        if not self.latency_s >= 0:
            raise ConfigError("cluster.link_latency_s", f"must be >= 0, got {self.latency_s!r}")


# Bandwidths are the datasheet figures per GPU and direction; latencies are our assumptions for
# one block-list transfer (NIXL/UCX-style RDMA over the fabric, a TCP-like path over Ethernet).
LINKS: dict[str, KVLink] = {
    # NVLink 4 (H100/H200): 900 GB/s bidirectional per GPU, so 450 GB/s each way.
    "nvlink": KVLink("nvlink", 450e9, 10e-6),
    # InfiniBand NDR, one 400 Gb/s ConnectX-7 per GPU.
    "infiniband": KVLink("infiniband", 50e9, 30e-6),
    # 100 Gb Ethernet per GPU.
    "ethernet": KVLink("ethernet", 12.5e9, 200e-6),
}


def resolve_link(name: str) -> KVLink:
    if name not in LINKS:
        raise ConfigError("cluster.link", f"unknown link {name!r}; expected one of {', '.join(LINKS)}")
    return LINKS[name]


@dataclass(frozen=True)
class KVTransferCost:
    """What one request's KV costs to move: whole blocks of `block_size` tokens."""

    num_blocks: int
    num_bytes: int
    seconds: float


def kv_transfer_cost(model: ModelSpec, link: KVLink, num_tokens: int, block_size: int,
                     prefill_tp: int, decode_tp: int) -> KVTransferCost:
    """Latency plus bytes over the parallel per-GPU links; nothing to move costs nothing."""
    num_blocks = cdiv(num_tokens, block_size)
    if not num_blocks:
        return KVTransferCost(0, 0, 0.0)
    links = min(prefill_tp, decode_tp)
    # Each link carries one GPU's pages: a KV-head shard, or for MLA a whole copy of the latent.
    num_bytes = num_blocks * block_size * model.kv_group_bytes_per_token(links)
    seconds = link.latency_s + num_bytes / (link.bandwidth * links)
    return KVTransferCost(num_blocks, num_bytes, seconds)
