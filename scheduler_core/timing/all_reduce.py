"""Which all-reduce vLLM 0.33 runs between tensor-parallel GPUs, and what one call costs.

Every layer all-reduces the hidden state twice (after attention and after the MLP): a message of
`num_tokens x hidden x 2` bytes (the activations are bf16 whatever the weights). vLLM 0.33 on
Ampere and Ada GPUs (A100, L40S) sends it through its own one-shot "custom all-reduce" kernel
when the group allows, and through NCCL otherwise. The two cost very different amounts on PCIe:
the custom kernel is a few microseconds, NCCL's ring over PCIe tens of microseconds per call.
"""

from __future__ import annotations

from dataclasses import dataclass

# vllm/distributed/device_communicators/custom_all_reduce.py (0.33.0), `CustomAllreduce`:
# __init__ gives up for world sizes outside _SUPPORTED_WORLD_SIZES (2, 4, 6, 8, 16) and, within one
# node, for more than two GPUs that are not all NVLink-connected (`is_fully_connected`: "not
# supported on more than two PCIe-only GPUs"); `should_custom_ar` then takes a call only for a
# world size of at most 8, two GPUs or a fully connected group, and a message under `max_size`
# (8 MiB by default; the symmetric-memory caps apply to Hopper and newer only). Anything it declines
# falls through `CudaCommunicator.all_reduce` to NCCL (`PyNcclCommunicator`). The FlashInfer,
# symmetric-memory and NCCL-symmetric-memory backends ahead of it are Hopper-and-newer or opt-in.
# Assumed: PCIe peer-to-peer works (vLLM trusts the driver's report, VLLM_SKIP_P2P_CHECK=1).
CUSTOM_ALL_REDUCE_WORLD_SIZES = (2, 4, 6, 8)
CUSTOM_ALL_REDUCE_MAX_BYTES = 8 * 1024 * 1024

# NCCL all-reduce over PCIe, per call: a latency plus the ring's bytes over a bus bandwidth. Both
# come from a published measurement independent of anything servescope is checked against: four
# GPUs behind one PCIe switch, no NVLink, NCCL inside a CUDA graph as vLLM runs it, fp16
# (github.com/haohervchb/sglang-V100/pull/2: 19.4 us at 4 KB, 20.3 at 8 KB, 22.3 at 16 KB,
# 24.2 at 32 KB, 51.8 at 128 KB, 83.5 at 384 KB). A least-squares line through those six points
# gives 20.6 us and 5.98 GB/s of message, i.e. 8.97 GB/s of ring traffic (2 x 3/4 of the message)
# at four ranks. Those cards are PCIe 3; an A100's PCIe 4 links are faster, but at these sizes
# NCCL's ring runs its low-latency protocol, which NCCL's own tuning model (src/graph/tuning.cc,
# ncclTopoTuneModel) credits with a quarter of the bus bandwidth, so the link's peak matters
# little. For megabyte messages (prompt chunks) it switches to its Simple protocol, credited with
# the full bus bandwidth (LL128 is off without NVLink): bytes beyond the largest measured message
# move at the link's rate. The latency is a four-GPU figure, kept for other group sizes (a ring's
# grows with its length: unmeasured).
NCCL_PCIE_LATENCY_S = 20.6e-6
NCCL_PCIE_BUS_BANDWIDTH = 8.97e9  # bytes/s of ring traffic per GPU, up to the largest measured message
NCCL_PCIE_MEASURED_MAX_BYTES = 384 * 1024


# The custom all-reduce's latency grows with the group: its one-shot kernel reads every peer's buffer.
# sglang PR #2904 (yizhang2077, 2025-01-15) times vLLM's custom all-reduce on H100 (NVLink, without CUDA
# graphs) at 32 KB, a decode batch's message: 8.7 us at TP 2, 9.2 at TP 4, 11.8 at TP 8. The per-call
# latency (Efficiency.allreduce_latency_s, a TP-2-sized figure) is scaled by those ratios; groups of
# 6 or over 8 take the nearest measured size below. (Its larger messages grow faster than the link's
# bandwidth would say: 24.1 us at 256 KB, 45.0 at 1 MB at TP 8; not modelled.)
CUSTOM_ALL_REDUCE_LATENCY_VS_TP2 = {2: 1.0, 4: 9.2 / 8.7, 8: 11.8 / 8.7}


def custom_all_reduce_latency_s(tp: int, tp2_latency_s: float) -> float:
    """One custom all-reduce's fixed time among `tp` NVLink-joined GPUs."""
    measured = max((size for size in CUSTOM_ALL_REDUCE_LATENCY_VS_TP2 if size <= tp), default=2)
    return tp2_latency_s * CUSTOM_ALL_REDUCE_LATENCY_VS_TP2[measured]


def uses_custom_all_reduce(tp: int, nvlink_fully_connected: bool, message_bytes: int) -> bool:
    """vLLM 0.33's rule: its custom all-reduce serves a call when the group has 2, 4, 6 or 8 GPUs,
    either two of them or all NVLink-connected, and the message is under 8 MiB; else NCCL does."""
    return (
        tp in CUSTOM_ALL_REDUCE_WORLD_SIZES
        and (tp == 2 or nvlink_fully_connected)
        and message_bytes < CUSTOM_ALL_REDUCE_MAX_BYTES
    )


@dataclass(frozen=True)
class PcieAllReduce:
    """One all-reduce among `tp` GPUs joined only by PCIe: the custom kernel (latency plus the ring's
    bytes over the link) where vLLM keeps it, NCCL's measured per-call cost where it does not."""

    tp: int
    link_bandwidth: float  # bytes/s per direction between two peers
    custom_latency_s: float

    def ring_bytes(self, message_bytes: int) -> float:
        """What each GPU sends in a ring all-reduce: the message twice, less its own share."""
        return 2 * (self.tp - 1) / self.tp * message_bytes

    def seconds(self, message_bytes: int) -> float:
        if uses_custom_all_reduce(self.tp, False, message_bytes):
            return self.custom_latency_s + self.ring_bytes(message_bytes) / self.link_bandwidth
        measured_bytes = min(message_bytes, NCCL_PCIE_MEASURED_MAX_BYTES)
        return (NCCL_PCIE_LATENCY_S + self.ring_bytes(measured_bytes) / NCCL_PCIE_BUS_BANDWIDTH
                + self.ring_bytes(message_bytes - measured_bytes) / self.link_bandwidth)
