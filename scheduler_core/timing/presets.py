"""Named GPUs and models, and how many KV blocks fit in a GPU's memory.

GPU figures are datasheet peaks (dense, no sparsity), turned into achievable ceilings with the
ratios the H200 calibration run measured against its own datasheet, corrected by what published
kernel benchmarks measured on each GPU against the H200 (kernel_rates.py: the GEMM ratio, the
attention backend vLLM runs there); a GPU without such a figure keeps the H200's ratios.
"""

from __future__ import annotations

import json
from dataclasses import fields
from importlib import resources
from pathlib import Path

from ..errors import ConfigError, shown
from .config_fields import MAX_SHAPE_VALUE
from .cost_model import DTYPE_BYTES, GpuSpec, ModelSpec
from .gpus import modern_gpus
from .hf_config import is_hf_config, model_from_hf_config, packaged_configs, read_json
from .kernel_rates import attention_kernels, gemm_ratio

GIB = 1024**3


def load_calibration(name: str = "data/calibration_h200.json") -> dict:
    """Measured H200 step times shipped with the package (data/calibration_h200.json, and the
    mixed steps in data/calibration_h200_mixed.json)."""
    return json.loads(resources.files("scheduler_core").joinpath(name).read_text())


_CALIBRATION = load_calibration()
# H200 datasheet (SXM): 4.8 TB/s HBM3e, 989 dense bf16 TFLOP/s, 1979 dense fp8 TFLOP/s.
_H200_DATASHEET = {"bandwidth": 4.8e12, "bf16": 989e12, "fp8": 1979e12}
ACHIEVED_FRACTION = {
    "bandwidth": _CALIBRATION["copy_GBps"] * 1e9 / _H200_DATASHEET["bandwidth"],
    "bf16": _CALIBRATION["bf16_matmul_TFLOPs"] * 1e12 / _H200_DATASHEET["bf16"],
    "fp8": _CALIBRATION["fp8_matmul_TFLOPs"] * 1e12 / _H200_DATASHEET["fp8"],
}


def gpu_from_datasheet(
    name: str, bandwidth_tbps: float, bf16_tflops: float, fp8_tflops: float | None, mem_gib: float,
    interconnect_gbps: float, pcie_gbps: float, nvlink_fully_connected: bool = True,
    fp4_tflops: float = 0.0, int8_tops: float = 0.0, generation: str = "",
) -> GpuSpec:
    """A GPU from its datasheet. Without fp8 tensor cores, fp8 weights run at the bf16 rate
    (weight-only quantisation still halves the bytes read). FP4 and INT8 peaks take the fraction
    the H200 achieves of its fp8 peak (low-precision tensor cores alike). Every tensor-core rate is
    then scaled by the GPU's measured GEMM ratio to the H200 (kernel_rates.gemm_ratio)."""
    gemm = gemm_ratio(name)
    bf16 = bf16_tflops * 1e12 * ACHIEVED_FRACTION["bf16"] * gemm
    fp8 = fp8_tflops * 1e12 * ACHIEVED_FRACTION["fp8"] * gemm if fp8_tflops else bf16
    if not generation:
        generation = "blackwell" if fp4_tflops else "ampere" if not fp8_tflops else "hopper"
    return GpuSpec(
        name=name,
        bf16_flops=bf16,
        fp8_flops=fp8,
        mem_bandwidth=bandwidth_tbps * 1e12 * ACHIEVED_FRACTION["bandwidth"],
        mem_bytes=mem_gib * GIB,
        interconnect_bandwidth=interconnect_gbps * 1e9,
        pcie_bandwidth=pcie_gbps * 1e9,
        nvlink_fully_connected=nvlink_fully_connected,
        fp4_flops=fp4_tflops * 1e12 * ACHIEVED_FRACTION["fp8"] * gemm,
        int8_flops=int8_tops * 1e12 * ACHIEVED_FRACTION["fp8"] * gemm,
        generation=generation,
        attention=attention_kernels(name),
    )


GPUS: dict[str, GpuSpec] = {
    # The calibrated card itself: its measured ceilings, not a scaled datasheet.
    "h200": GpuSpec(
        "h200",
        bf16_flops=_CALIBRATION["bf16_matmul_TFLOPs"] * 1e12,
        fp8_flops=_CALIBRATION["fp8_matmul_TFLOPs"] * 1e12,
        mem_bandwidth=_CALIBRATION["copy_GBps"] * 1e9,
        mem_bytes=140 * GIB,  # "141 GB" on the datasheet; about 140 GiB usable as nvidia-smi reports
        interconnect_bandwidth=450e9,
        pcie_bandwidth=50e9,
        attention=attention_kernels("h200"),
    ),
    # Memory as CUDA reports it (what vLLM multiplies by gpu_memory_utilization): an "80 GB" H100
    # or A100 shows 79.19 / 79.15 GiB in vLLM's logs, a "48 GB" L40S about 44.4 GiB.
    "h100-sxm": gpu_from_datasheet("h100-sxm", 3.35, 989, 1979, 79.19, interconnect_gbps=450, pcie_gbps=50),
    "a100-80g": gpu_from_datasheet("a100-80g", 2.039, 312, None, 79.15, interconnect_gbps=300, pcie_gbps=25,
                                   int8_tops=624),
    # A100 80GB PCIe cards without NVLink bridges: tensor-parallel peers talk over PCIe Gen4.
    "a100-80g-pcie": gpu_from_datasheet("a100-80g-pcie", 1.935, 312, None, 79.15, interconnect_gbps=25, pcie_gbps=25,
                                        nvlink_fully_connected=False, int8_tops=624),
    "a100-40g": gpu_from_datasheet("a100-40g", 1.555, 312, None, 39.39, interconnect_gbps=300, pcie_gbps=25,
                                   int8_tops=624),
    # The L40S has no NVLink at all.
    "l40s": gpu_from_datasheet("l40s", 0.864, 362, 733, 44.4, interconnect_gbps=32, pcie_gbps=25,
                               nvlink_fully_connected=False, generation="ada"),
    **modern_gpus(gpu_from_datasheet),
}

# The presets are config.json files shipped in data/models (scheduler_core/timing/hf_config.py reads them).
PRESET_CONFIGS = packaged_configs()
PRESET_ORDER = ("llama-3.1-8b", "llama-3.3-70b", "llama-3.3-70b-fp8", "qwen2.5-7b", "qwen2.5-72b", "mistral-7b",
                "qwen3-30b-a3b", "qwen3-235b-a22b-fp8", "gpt-oss-20b", "gpt-oss-120b", "deepseek-v3", "deepseek-r1",
                "llama-4-scout", "llama-4-maverick", "gemma-3-27b", "qwen3-next-80b-a3b", "mixtral-8x7b")
MODELS: dict[str, ModelSpec] = {name: model_from_hf_config(name, PRESET_CONFIGS[name]) for name in PRESET_ORDER}
# Hugging Face repository ids of the presets, so `vllm serve meta-llama/Llama-3.1-8B-Instruct` finds one.
HF_REPOS = {config["_name_or_path"]: name for name, config in PRESET_CONFIGS.items()}

MODEL_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "inter", "vocab", "wdtype")


def model_from_config(name: str, config: dict) -> ModelSpec:
    """A model from a calibration-style `config` dict, each field checked."""
    for key in MODEL_FIELDS:
        if key not in config:
            raise ConfigError(f"model.{key}", "missing")
    for key in MODEL_FIELDS[:-1]:
        value = config[key]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_SHAPE_VALUE:
            raise ConfigError(f"model.{key}", f"must be a positive integer of at most {MAX_SHAPE_VALUE:,}, got {shown(value)}")
    if not isinstance(config["wdtype"], str) or config["wdtype"] not in DTYPE_BYTES:
        raise ConfigError("model.wdtype", f"unknown dtype {shown(config['wdtype'])}; expected one of {sorted(DTYPE_BYTES)}")
    kv_dtype = config.get("kv_dtype", "bf16")
    if not isinstance(kv_dtype, str) or kv_dtype not in DTYPE_BYTES:
        raise ConfigError("model.kv_dtype", f"unknown dtype {shown(kv_dtype)}")
    if config["heads"] % config["kv_heads"]:
        raise ConfigError("model.kv_heads", "must divide heads")
    known = {f.name for f in fields(ModelSpec)}
    return ModelSpec(name=name, kv_dtype=kv_dtype, **{k: config[k] for k in MODEL_FIELDS if k in known})


def resolve_model(name_or_path: str) -> ModelSpec:
    """A preset name or its Hugging Face repository id, or a local file: a model's config.json (or
    the folder holding it), or a JSON file with the calibration file's `config` fields."""
    if name_or_path in MODELS:
        return MODELS[name_or_path]
    if name_or_path in HF_REPOS:
        return MODELS[HF_REPOS[name_or_path]]
    path = Path(name_or_path)
    if path.is_dir() and (path / "config.json").is_file():
        path = path / "config.json"
    if not path.is_file():
        raise ConfigError("model", f"unknown model {name_or_path!r}: not a preset ({', '.join(MODELS)}), a preset's "
                                   f"Hugging Face id, nor a local config.json (servescope never downloads)")
    data = read_json(path)
    name = path.parent.name if path.name == "config.json" else path.stem
    try:
        if is_hf_config(data):
            return model_from_hf_config(name, data)
        config = data.get("config", data) if isinstance(data, dict) else data
        if not isinstance(config, dict):
            raise ConfigError("model", "a model file holds a JSON object")
        return model_from_config(name, config)
    except ConfigError as e:  # name the file as well as the field
        raise ConfigError(e.field, f"{path}: {e.reason}") from None


def resolve_gpu(name: str) -> GpuSpec:
    if name not in GPUS:
        raise ConfigError("gpu", f"unknown GPU {name!r}; expected one of {', '.join(GPUS)}")
    return GPUS[name]
