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

from ..errors import ConfigError
from ..files import MAX_SCENARIO_BYTES, parse_json, read_text
from .config_fields import ConfigFields
from .cost_model import ModelSpec
from .hf_architecture import (
    architecture_from_config,
    model_type_fields,
    refuse_unmodelled_fields,
    vision_tower_params,
)
from .hf_quantization import linear_formats

TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


def torch_dtype(config: ConfigFields) -> str:
    """The activations' dtype (bf16 or fp16) from torch_dtype, or transformers' newer `dtype`."""
    for key in ("torch_dtype", "dtype"):
        holder = config.holder(key)
        if holder.has(key):
            return TORCH_DTYPES[holder.choice(key, TORCH_DTYPES)]
    return "bf16"


def model_from_hf_config(name: str, config: dict, where: str = "model") -> ModelSpec:
    """A ModelSpec from a config.json's fields, each checked and named on error (config_fields.py)."""
    outer = ConfigFields(config, where)
    refuse_unmodelled_fields(outer)
    text = outer.section("text_config")
    if text is not None:  # a multimodal wrapper (Gemma 3, Llama 4): the decoder inside
        refuse_unmodelled_fields(text)
        # The wrapper's own copies of what the decoder may give as well: checked even where shadowed.
        outer.text("model_type")
        outer.flag("tie_word_embeddings", False)
        linear_formats(outer, torch_dtype(outer))
    fields = model_type_fields(text or outer, outer if text is not None else None)
    vision_params = vision_tower_params(outer, fields)
    layers = fields.integer("num_hidden_layers")
    hidden = fields.integer("hidden_size")
    heads = fields.integer("num_attention_heads")
    kv_heads = fields.integer("num_key_value_heads", heads, high=heads)
    if heads % kv_heads:
        fields.refuse("num_key_value_heads", f"must divide num_attention_heads ({heads})")
    if not fields.has("head_dim") and hidden < heads:
        fields.refuse("hidden_size", f"splits into no head_dim over {heads} heads")
    head_dim = fields.integer("head_dim", hidden // heads)  # configs without head_dim split hidden evenly
    tie = fields.holder("tie_word_embeddings").flag("tie_word_embeddings", False)
    dtype = torch_dtype(fields)
    arch, linear_format = architecture_from_config(fields, layers, heads, kv_heads, head_dim, vision_params, dtype)
    return ModelSpec(
        name=name, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        inter=fields.integer("intermediate_size"), vocab=fields.integer("vocab_size"),
        wdtype="bf16" if arch is not None else linear_format, kv_dtype=dtype, tie_word_embeddings=tie,
        max_position_embeddings=fields.integer("max_position_embeddings", 131072),
        arch=arch,
    )


def is_hf_config(data: dict) -> bool:
    return isinstance(data, dict) and ("num_hidden_layers" in data or "text_config" in data)


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
