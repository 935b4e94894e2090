"""A model from its Hugging Face `config.json`, read from a local file (servescope never downloads).

The fields read are the ones that decide memory and step time: the decoder's shape
(`num_hidden_layers`, `hidden_size`, `num_attention_heads`, `num_key_value_heads`, `head_dim`,
`intermediate_size`, `vocab_size`), how the checkpoint stores its weights (`torch_dtype`,
`quantization_config`), whether the LM head shares the embedding (`tie_word_embeddings`) and the
longest context (`max_position_embeddings`). The presets ship as such files in `data/models/`.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from ..errors import ConfigError, shown
from ..files import MAX_SCENARIO_BYTES, parse_json, read_text
from .cost_model import ModelSpec
from .hf_architecture import (
    MAX_SHAPE_VALUE,
    architecture_from_config,
    refuse_unmodelled_fields,
    vision_tower_params,
    with_model_type_defaults,
)

TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}
# quantization_config.quant_method values whose linear weights are stored as 8-bit floats.
FP8_QUANT_METHODS = ("fp8", "fbgemm_fp8", "modelopt")




def _positive_int(config: dict, key: str, where: str) -> int:
    value = config.get(key)
    if value is None:
        raise ConfigError(f"{where}.{key}", "missing")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_SHAPE_VALUE:
        raise ConfigError(f"{where}.{key}", f"must be a positive integer of at most {MAX_SHAPE_VALUE:,}, got {shown(value)}")
    return value


def weight_dtype(config: dict, where: str) -> str:
    """How the checkpoint stores its linear layers: fp8 under an fp8 quantization_config, else torch_dtype."""
    quant = config.get("quantization_config")
    if quant is not None:
        method = quant.get("quant_method") if isinstance(quant, dict) else None
        if method in FP8_QUANT_METHODS or (isinstance(quant, dict) and _is_fp8_compressed_tensors(quant)):
            return "fp8"
        raise ConfigError(f"{where}.quantization_config", f"quant_method {method!r} is not modelled; "
                                                          f"servescope knows fp8 ({', '.join(FP8_QUANT_METHODS)})")
    dtype = config.get("torch_dtype", config.get("dtype", "bfloat16"))
    if not isinstance(dtype, str) or dtype not in TORCH_DTYPES:
        raise ConfigError(f"{where}.torch_dtype", f"{shown(dtype)} is not modelled; expected one of {sorted(TORCH_DTYPES)}")
    return TORCH_DTYPES[dtype]


def _is_fp8_compressed_tensors(quant: dict) -> bool:
    # compressed-tensors checkpoints (e.g. RedHatAI's FP8-dynamic) describe weights per config group.
    if quant.get("quant_method") != "compressed-tensors":
        return False
    groups = quant.get("config_groups")
    weights = [g.get("weights") for g in groups.values() if isinstance(g, dict)] if isinstance(groups, dict) else []
    return any(isinstance(w, dict) and w.get("type") == "float" and w.get("num_bits") == 8 for w in weights)


def model_from_hf_config(name: str, config: dict, where: str = "model") -> ModelSpec:
    """A ModelSpec from a config.json's fields, each checked and named on error."""
    if not isinstance(config, dict):
        raise ConfigError(where, "a config.json holds a JSON object")
    refuse_unmodelled_fields(config, where)
    vision_params = vision_tower_params(config)
    if isinstance(config.get("text_config"), dict):  # a multimodal wrapper (Gemma 3, Llama 4): the decoder inside
        refuse_unmodelled_fields(config["text_config"], f"{where}.text_config")
        outer = {k: config[k] for k in ("quantization_config", "torch_dtype", "tie_word_embeddings") if k in config}
        config, where = {**outer, **config["text_config"]}, f"{where}.text_config"
    config = with_model_type_defaults(config)
    layers = _positive_int(config, "num_hidden_layers", where)
    hidden = _positive_int(config, "hidden_size", where)
    heads = _positive_int(config, "num_attention_heads", where)
    kv_heads = _positive_int({"num_key_value_heads": heads, **config}, "num_key_value_heads", where)
    head_dim = config.get("head_dim") or hidden // heads  # configs without head_dim split hidden evenly
    if heads % kv_heads:
        raise ConfigError(f"{where}.num_key_value_heads", f"must divide num_attention_heads ({heads})")
    tie = config.get("tie_word_embeddings", False)
    if not isinstance(tie, bool):
        raise ConfigError(f"{where}.tie_word_embeddings", f"must be true or false, got {tie!r}")
    arch = architecture_from_config(config, layers, heads, kv_heads, head_dim, vision_params, where)
    wdtype = "bf16" if arch is not None else weight_dtype(config, where)
    return ModelSpec(
        name=name, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
        head_dim=_positive_int({"head_dim": head_dim}, "head_dim", where),
        inter=_positive_int(config, "intermediate_size", where), vocab=_positive_int(config, "vocab_size", where),
        wdtype=wdtype, kv_dtype="fp16" if config.get("torch_dtype") in ("float16", "half") else "bf16",
        tie_word_embeddings=tie,
        max_position_embeddings=_positive_int({"max_position_embeddings": 131072, **config}, "max_position_embeddings", where),
        arch=arch,
    )


def is_hf_config(data: dict) -> bool:
    return isinstance(data, dict) and ("num_hidden_layers" in data or isinstance(data.get("text_config"), dict))


def read_json(path: Path, where: str = "model") -> dict:
    try:
        return parse_json(read_text(path, MAX_SCENARIO_BYTES), str(path))  # a regular file of bounded size, never a FIFO
    except OSError as e:
        raise ConfigError(where, f"{path}: cannot read ({e.strerror})") from None


def packaged_configs() -> dict[str, dict]:
    """The presets' config.json files shipped in scheduler_core/data/models, by preset name."""
    folder = resources.files("scheduler_core").joinpath("data/models")
    return {entry.name.removesuffix(".json"): json.loads(entry.read_text())
            for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".json")}
