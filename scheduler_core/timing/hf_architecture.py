"""The parts of a config.json beyond a Llama shape: experts, MLA, sliding windows, chunked local
attention, linear attention, multimodal wrappers and weight formats (read by hf_config.py).

Every field a config.json may hold is either modelled here or in hf_config.py, or listed in
NEUTRAL_FIELDS as changing neither memory nor step time; any other field is refused by name, so a
model servescope does not understand never gets numbers that look right.
"""

from __future__ import annotations

from ..errors import ConfigError, shown
from .architecture import Architecture, LinearAttentionShape, MlaShape
from .attention_specs import CHUNKED_LOCAL, FULL, MAMBA, MLA, SLIDING_WINDOW, LayerGroup
from .moe import MoeSpec

# Fields that change neither memory nor step time as servescope models them (why, where not obvious).
NEUTRAL_FIELDS = frozenset({
    "_name_or_path", "architectures", "model_type", "transformers_version", "hidden_act", "rms_norm_eps",
    "layer_norm_eps", "rope_theta", "rope_scaling", "rope_parameters", "bos_token_id", "eos_token_id",
    "pad_token_id", "initializer_range", "use_cache", "attention_dropout", "attention_bias", "mlp_bias",
    "pretraining_tp", "output_router_logits", "router_aux_loss_coef", "router_z_loss_coef", "norm_topk_prob",
    "routed_scaling_factor", "scoring_func", "topk_method", "n_group", "topk_group", "ep_size", "aux_loss_alpha",
    "seq_aux", "swiglu_limit", "rope_interleave", "query_pre_attn_scalar", "final_logit_softcapping",
    "attn_logit_softcapping", "hidden_activation", "use_qk_norm", "attn_temperature_tuning", "floor_scale",
    "attn_scale", "router_jitter_noise", "use_sliding_window", "max_window_layers", "auto_map", "dtype",
    "torch_dtype", "partial_rotary_factor", "rope_local_base_freq", "boi_token_index", "eoi_token_index",
    "image_token_index", "mm_tokens_per_image", "initializer_factor", "sliding_window_pattern",
    # biases of attention/linear layers: well under 0.1% of the weights.
    "qkv_bias", "head_dim",
    # MTP layers are loaded only for speculative decoding (a separate drafter model in servescope).
    "num_nextn_predict_layers",
    "moe_layer_freq", "decoder_sparse_step", "tie_word_embeddings", "max_position_embeddings",
    # gpt-oss: YaRN's original context (RoPE frequencies only).
    "initial_context_length",
    # Llama 4: a flag for llm-compressor's loader; Gemma 3 / Llama 4: transformers' choice of generation cache.
    "for_llm_compressor", "cache_implementation",
})

# transformers' defaults for fields a real config.json leaves out (google/gemma-3-27b-it's text_config
# gives neither vocab_size, max_position_embeddings, sliding_window_pattern nor tie_word_embeddings:
# Gemma3TextConfig's defaults fill them, and vLLM reads the same).
MODEL_TYPE_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072, "sliding_window_pattern": 6,
                    "tie_word_embeddings": True},
}


def with_model_type_defaults(config: dict) -> dict:
    """The config with transformers' defaults for the fields its model_type lets it leave out."""
    return {**MODEL_TYPE_DEFAULTS.get(config.get("model_type"), {}), **config}


# The largest value a shape field may have: far past any real model (vocabularies of 2^18,
# contexts of 10^7), and small enough that the cost model's floats cannot overflow.
MAX_SHAPE_VALUE = 1 << 30


def _int(config: dict, key: str, where: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SHAPE_VALUE:
        raise ConfigError(f"{where}.{key}", f"must be an integer from 0 to {MAX_SHAPE_VALUE:,}, got {shown(value)}")
    return value


def _first_key(config: dict, *keys: str) -> str:
    """The first of `keys` the config has (configs of different families spell one field differently)."""
    return next((key for key in keys if key in config), keys[0])


def linear_formats(config: dict, where: str) -> tuple[str, str]:
    """(format of the attention and dense layers, format of the routed experts) from quantization_config."""
    quant = config.get("quantization_config")
    if quant is None:
        dtype = config.get("torch_dtype", config.get("dtype", "bfloat16"))
        fmt = "fp16" if dtype in ("float16", "half") else "bf16"
        return fmt, fmt
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if method == "fp8" and quant.get("weight_block_size"):
        return "fp8-block", "fp8-block"
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", "fp8"
    if method == "mxfp4":
        # gpt-oss: modules_to_not_convert keeps attention, router, embedding and LM head in bf16.
        return "bf16", "mxfp4"
    if method == "modelopt":
        algo = str(quant.get("quant_algo", "FP8")).upper()
        return ("nvfp4", "nvfp4") if algo == "NVFP4" else ("fp8", "fp8")
    if method in ("awq", "gptq") and quant.get("bits") == 4 and quant.get("group_size") == 128:
        return (f"int4-{method}",) * 2
    if method == "compressed-tensors":
        weights = [(g.get("weights") or {}) for g in (quant.get("config_groups") or {}).values() if isinstance(g, dict)]
        activations = [g.get("input_activations") for g in (quant.get("config_groups") or {}).values()
                       if isinstance(g, dict)]
        if weights and all(w.get("type") == "float" and w.get("num_bits") == 8 for w in weights):
            return "fp8", "fp8"
        if weights and all(w.get("type") == "int" and w.get("num_bits") == 4 and w.get("group_size") == 128
                           for w in weights) and not any(activations):
            return "w4a16", "w4a16"
        if weights and all(w.get("type") == "int" and w.get("num_bits") == 8 for w in weights) and all(activations):
            return "w8a8-int8", "w8a8-int8"
    raise ConfigError(f"{where}.quantization_config", f"quant_method {method!r} with these settings is not modelled; "
                                                      "servescope knows fp8 (per-tensor, per-channel, 128x128 blocks), "
                                                      "mxfp4, nvfp4, awq/gptq 4-bit group 128, compressed-tensors "
                                                      "w4a16 and w8a8")


def _attention_groups(config: dict, layers: int, kv_heads: int, head_dim: int, where: str) -> list[LayerGroup]:
    """Full, sliding-window and chunked-local layers from layer_types / sliding_window /
    attention_chunk_size / full_attention_interval (linear layers are added by the caller)."""
    window = config.get("sliding_window")
    if config.get("use_sliding_window") is False:
        window = None
    types = config.get("layer_types")
    if config.get("model_type") == "qwen3_next":
        interval = _int(config, "full_attention_interval", where, 4)
        types = types or ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    if config.get("attention_chunk_size"):  # Llama 4: NoPE layers attend globally, the rest in chunks
        # Llama4TextConfig: without a no_rope_layers list, every no_rope_layer_interval-th layer is NoPE
        # (meta-llama/Llama-4-Maverick's config.json gives no list).
        interval = _int(config, "no_rope_layer_interval", where, 4)
        no_rope = config.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(layers)]
        if not isinstance(no_rope, list) or len(no_rope) != layers:
            raise ConfigError(f"{where}.no_rope_layers", f"must give one 0/1 per layer ({layers})")
        types = ["full_attention" if no_rope[i] == 0 else "chunked_attention" for i in range(layers)]
    if types is None and config.get("sliding_window_pattern") and window:  # Gemma 3 without layer_types
        pattern = _int(config, "sliding_window_pattern", where)
        types = ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(layers)]
    if types is None:
        types = ["sliding_attention" if window else "full_attention"] * layers
    if not isinstance(types, list) or len(types) != layers:
        raise ConfigError(f"{where}.layer_types", f"must list the {layers} layers' attention types")
    counts: dict[str, int] = {}
    for t in types:
        counts[t] = counts.get(t, 0) + 1
    groups = []
    for kind, n in counts.items():
        if kind == "full_attention":
            groups.append(LayerGroup(FULL, n, kv_heads, head_dim, head_dim))
        elif kind == "sliding_attention":
            groups.append(LayerGroup(SLIDING_WINDOW, n, kv_heads, head_dim, head_dim,
                                     window=_int(config, "sliding_window", where)))
        elif kind == "chunked_attention":
            groups.append(LayerGroup(CHUNKED_LOCAL, n, kv_heads, head_dim, head_dim,
                                     window=_int(config, "attention_chunk_size", where)))
        elif kind == "linear_attention":
            groups.append(LayerGroup(MAMBA, n))  # filled in by the caller
        else:
            raise ConfigError(f"{where}.layer_types", f"layer type {kind!r} is not modelled")
    return groups


def _moe(config: dict, layers: int, expert_format: str, where: str) -> tuple[MoeSpec | None, int, int]:
    """(experts, dense-MLP layers, their intermediate size)."""
    experts_key = _first_key(config, "num_experts", "num_local_experts", "n_routed_experts")
    inter = config.get("intermediate_size")
    if not config.get(experts_key):
        return None, layers, inter
    num_experts = _int(config, experts_key, where)
    k = _int(config, _first_key(config, "num_experts_per_tok", "experts_per_token"), where)
    model_type = config.get("model_type")
    expert_inter = _int(config, _first_key(config, "moe_intermediate_size", "intermediate_size"), where)
    shared = 0
    dense_layers, dense_inter = 0, inter
    if model_type in ("deepseek_v3", "deepseek_v2", "kimi_k2"):
        dense_layers = _int(config, "first_k_dense_replace", where, 0)
        shared = _int(config, "n_shared_experts", where, 0) * expert_inter
    elif model_type == "llama4_text":
        step = _int(config, "interleave_moe_layer_step", where, 1)
        moe_layers = [i for i in range(layers) if step and (i + 1) % step == 0]  # vLLM's llama4.py rule
        if "moe_layers" in config and sorted(config["moe_layers"] or []) != moe_layers:
            raise ConfigError(f"{where}.moe_layers", "differs from interleave_moe_layer_step's layers, which "
                                                     "vLLM follows; such a checkpoint is not modelled")
        dense_layers = layers - len(moe_layers)
        dense_inter = _int(config, "intermediate_size_mlp", where)
        shared = inter  # one shared expert of intermediate_size in every MoE layer
    elif model_type in ("qwen3_moe", "qwen2_moe", "qwen3_next"):
        if _int(config, "decoder_sparse_step", where, 1) != 1:
            raise ConfigError(f"{where}.decoder_sparse_step", "MoE layers other than every layer are not modelled")
        dense_layers = len(config.get("mlp_only_layers") or [])
        shared = _int(config, "shared_expert_intermediate_size", where, 0)
    elif model_type not in ("mixtral", "gpt_oss"):
        raise ConfigError(f"{where}.model_type", f"experts of model_type {model_type!r} are not modelled; servescope "
                                                 "knows mixtral, qwen2/3 MoE, qwen3_next, deepseek_v2/v3, llama4, gpt_oss")
    moe = MoeSpec(num_experts=num_experts, experts_per_token=k, expert_inter=expert_inter,
                  num_moe_layers=layers - dense_layers, shared_expert_inter=shared, expert_format=expert_format,
                  expert_bias=model_type == "gpt_oss")
    return moe, dense_layers, dense_inter


def architecture_from_config(config: dict, layers: int, heads: int, kv_heads: int, head_dim: int,
                             vision_params: int, where: str) -> Architecture | None:
    """None for a dense, full-attention, bf16/fp16/fp8 decoder (memory.py's own formula)."""
    linear_fmt, expert_fmt = linear_formats(config, where)
    model_type = config.get("model_type")
    mla = None
    if config.get("kv_lora_rank"):
        mla = MlaShape(_int(config, "q_lora_rank", where, 0) if config.get("q_lora_rank") else 0,
                       _int(config, "kv_lora_rank", where), _int(config, "qk_nope_head_dim", where),
                       _int(config, "qk_rope_head_dim", where), _int(config, "v_head_dim", where))
        groups = [LayerGroup(MLA, layers, 1, mla.kv_lora_rank + mla.qk_rope_head_dim, 0)]
    else:
        groups = _attention_groups(config, layers, kv_heads, head_dim, where)
    linear = None
    if any(g.kind == MAMBA for g in groups):
        linear = LinearAttentionShape(_int(config, "linear_num_key_heads", where), _int(config, "linear_num_value_heads", where),
                                      _int(config, "linear_key_head_dim", where), _int(config, "linear_value_head_dim", where),
                                      _int(config, "linear_conv_kernel_dim", where))
        conv = (2 * linear.num_k_heads * linear.head_k_dim + linear.num_v_heads * linear.head_v_dim, linear.conv_kernel - 1)
        groups = [LayerGroup(MAMBA, g.num_layers, conv_state=conv,
                             ssm_state=(linear.num_v_heads, linear.head_v_dim, linear.head_k_dim))
                  if g.kind == MAMBA else g for g in groups]
    moe, dense_layers, dense_inter = _moe(config, layers, expert_fmt if expert_fmt != linear_fmt else "", where)
    plain = (moe is None and mla is None and len(groups) == 1 and groups[0].kind == FULL and not vision_params
             and linear_fmt in ("bf16", "fp16", "fp8") and model_type != "qwen3_next")
    if plain:
        return None
    rotary = mla.qk_rope_head_dim if mla else int(head_dim * float(config.get("partial_rotary_factor", 1.0)))
    return Architecture(groups=tuple(groups), moe=moe, dense_mlp_layers=dense_layers, dense_inter=dense_inter or 0,
                        mla=mla, linear_attention=linear, attn_output_gate=model_type == "qwen3_next",
                        linear_format=linear_fmt, vision_params=vision_params, rotary_dim=rotary)


def vision_tower_params(config: dict) -> int:
    """A vision encoder's transformer (attention 4h^2 and MLP 2hi per layer) and a projector to the
    text model's hidden size; patch embeddings and norms are small beside it."""
    vision = config.get("vision_config")
    if not isinstance(vision, dict):
        return 0
    h, i, n = (vision.get(k) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
    if not all(isinstance(x, int) and x > 0 for x in (h, i, n)):
        raise ConfigError("model.vision_config", "needs hidden_size, intermediate_size and num_hidden_layers")
    text_hidden = (config.get("text_config") or {}).get("hidden_size", h)
    return n * (4 * h * h + 2 * h * i) + h * text_hidden


MODELLED_FIELDS = frozenset({
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
    "vocab_size", "quantization_config", "num_experts", "num_local_experts", "n_routed_experts",
    "num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "shared_expert_intermediate_size",
    "n_shared_experts", "first_k_dense_replace", "mlp_only_layers", "interleave_moe_layer_step",
    "intermediate_size_mlp", "moe_layers", "no_rope_layer_interval", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "sliding_window", "layer_types", "attention_chunk_size", "no_rope_layers", "full_attention_interval",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "text_config", "vision_config",
})


def refuse_unmodelled_fields(config: dict, where: str) -> None:
    """A field neither modelled nor known to be neutral may change memory or time: refuse it by name."""
    for key in config:
        if key not in MODELLED_FIELDS and key not in NEUTRAL_FIELDS:
            raise ConfigError(f"{where}.{str(key)[:80]}", "servescope does not model this config.json field and cannot "
                                                          "tell whether it changes memory or step time")
