"""The GPUs of 2025-2026 from their datasheets, scaled as presets.py scales the H100, A100 and L40S
(the H200 calibration's fractions, and kernel_rates.py's measured ratios where a GPU has them).

Peaks are dense (no sparsity); memory is what the driver reports (what vLLM multiplies by
gpu_memory_utilization), about 1% under the nominal size as for the H100; interconnect is bytes/s
per direction between two tensor-parallel peers. Where a datasheet gives only a sparse figure it is
halved. Ampere cards have no FP8 tensor cores and nothing before Blackwell has FP4 ones
(weight_formats.matmul_flops says what vLLM runs there instead).
"""

from __future__ import annotations

from .cost_model import GpuSpec


def modern_gpus(from_datasheet) -> dict[str, GpuSpec]:
    """`from_datasheet` is presets.gpu_from_datasheet (the H200 calibration's achieved fractions)."""
    return {
        # HGX B200: 8 TB/s HBM3e, 2.25 PF bf16, 4.5 PF fp8, 9 PF fp4 dense; NVLink 5 at 1.8 TB/s
        # both ways; nvidia-smi shows 183,359 MiB.
        "b200": from_datasheet("b200", 8.0, 2250, 4500, 179.06, interconnect_gbps=900, pcie_gbps=64,
                               fp4_tflops=9000),
        # GB200 NVL72, one Blackwell GPU of it: 8 TB/s, 2.5 PF bf16, 5 PF fp8, 10 PF fp4 dense, 186 GB
        # (13.4 TB over 72 GPUs); the NVLink switch joins all 72 at 1.8 TB/s.
        "gb200": from_datasheet("gb200", 8.0, 2500, 5000, 184.0, interconnect_gbps=900, pcie_gbps=64,
                                fp4_tflops=10000),
        # H20 (the export Hopper): 4.0 TB/s HBM3, 148 TF bf16, 296 TF fp8, 96 GB; NVLink 900 GB/s.
        "h20": from_datasheet("h20", 4.0, 148, 296, 95.58, interconnect_gbps=450, pcie_gbps=64),
        # H200 NVL (PCIe card): 4.8 TB/s, 835 TF bf16, 1671 TF fp8 dense, 141 GB; NVLink bridges join
        # two or four cards at 900 GB/s, so groups of up to four are fully connected.
        "h200-nvl": from_datasheet("h200-nvl", 4.8, 835, 1671, 140, interconnect_gbps=450, pcie_gbps=64),
        # MI300X: 5.3 TB/s HBM3, 1307 TF bf16, 2615 TF fp8, 192 GB; seven Infinity Fabric links of
        # 64 GB/s a direction join every pair of an 8-GPU platform (448 GB/s to all peers at once).
        "mi300x": from_datasheet("mi300x", 5.3, 1307.4, 2614.9, 191.98, interconnect_gbps=448, pcie_gbps=64,
                                 int8_tops=2614.9, generation="cdna3"),
        # MI325X: the MI300X's compute with 6 TB/s HBM3e and 256 GB.
        "mi325x": from_datasheet("mi325x", 6.0, 1307.4, 2614.9, 255.98, interconnect_gbps=448, pcie_gbps=64,
                                 int8_tops=2614.9, generation="cdna3"),
        # L4: 300 GB/s GDDR6, 121 TF bf16, 242 TF fp8 dense, 24 GB (23,034 MiB); PCIe Gen4 only.
        "l4": from_datasheet("l4", 0.3, 121, 242, 22.49, interconnect_gbps=25, pcie_gbps=25,
                             nvlink_fully_connected=False, generation="ada"),
        # A10G (AWS's A10; NVIDIA publishes the A10's): 600 GB/s GDDR6, 125 TF bf16, no fp8; PCIe Gen4.
        "a10g": from_datasheet("a10g", 0.6, 125, None, 22.49, interconnect_gbps=25, pcie_gbps=25,
                               nvlink_fully_connected=False, int8_tops=250),
        # RTX 4090 (Ada whitepaper, FP32 accumulate): 1008 GB/s GDDR6X, 165 TF bf16, 330 TF fp8, 24 GB
        # (24,564 MiB); no NVLink.
        "rtx-4090": from_datasheet("rtx-4090", 1.008, 165.2, 330.3, 23.99, interconnect_gbps=25, pcie_gbps=25,
                                   nvlink_fully_connected=False, generation="ada"),
        # RTX 5090 (Blackwell whitepaper, FP32 accumulate): 1792 GB/s GDDR7, 209.5 TF bf16, 419 TF fp8,
        # 838 TF fp4 dense, 32 GB (32,607 MiB); PCIe Gen5, no NVLink.
        "rtx-5090": from_datasheet("rtx-5090", 1.792, 209.5, 419, 31.84, interconnect_gbps=50, pcie_gbps=50,
                                   nvlink_fully_connected=False, fp4_tflops=838),
    }
