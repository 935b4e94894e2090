"""The parts of a config.json beyond a Llama shape: experts, MLA, sliding windows, chunked local
attention, linear attention and multimodal wrappers (read by hf_config.py; weight formats in
hf_quantization.py; every field through config_fields.py's checked reader).

Every field a config.json may hold is either modelled here or in hf_config.py, or listed in
NEUTRAL_FIELDS as changing neither memory nor step time; any other field is refused by name, so a
model servescope does not understand never gets numbers that look right.
"""

from __future__ import annotations

from .architecture import Architecture, LinearAttentionShape, MlaShape
from .attention_specs import CHUNKED_LOCAL, FULL, MAMBA, MLA, SLIDING_WINDOW, LayerGroup
from .config_fields import MAX_SHAPE_VALUE, ConfigFields
from .hf_quantization import linear_formats
from .moe import MoeSpec

# Fields that change neither memory nor step time as servescope models them (why, where not obvious):
# never read, so any value passes.
NEUTRAL_FIELDS = frozenset({
    "_name_or_path", "architectures", "transformers_version", "hidden_act", "rms_norm_eps",
    "layer_norm_eps", "rope_theta", "rope_scaling", "rope_parameters", "bos_token_id", "eos_token_id",
    "pad_token_id", "initializer_range", "use_cache", "attention_dropout", "attention_bias", "mlp_bias",
    "pretraining_tp", "output_router_logits", "router_aux_loss_coef", "router_z_loss_coef", "norm_topk_prob",
    "routed_scaling_factor", "scoring_func", "topk_method", "n_group", "topk_group", "ep_size", "aux_loss_alpha",
    "seq_aux", "swiglu_limit", "rope_interleave", "query_pre_attn_scalar", "final_logit_softcapping",
    "attn_logit_softcapping", "hidden_activation", "use_qk_norm", "attn_temperature_tuning", "floor_scale",
    "attn_scale", "router_jitter_noise", "auto_map", "rope_local_base_freq", "boi_token_index", "eoi_token_index",
    "image_token_index", "mm_tokens_per_image", "initializer_factor",
    # biases of attention/linear layers: well under 0.1% of the weights.
    "qkv_bias",
    # MTP layers are loaded only for speculative decoding (a separate drafter model in servescope).
    "num_nextn_predict_layers",
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
                    "sliding_window": 4096, "tie_word_embeddings": True},
    "llama4_text": {"attention_chunk_size": 8192},  # Llama4TextConfig's default
}
DEEPSEEK = ("deepseek_v2", "deepseek_v3", "kimi_k2")  # MLA, shared experts, first_k_dense_replace
QWEN_MOE = ("qwen2_moe", "qwen3_moe", "qwen3_next")
# Families whose experts are intermediate_size wide (the others give moe_intermediate_size).
EXPERTS_OF_INTERMEDIATE_SIZE = ("mixtral", "gpt_oss", "llama4_text")
# Fields of an MoE layer: without an expert count, servescope would ignore them.
MOE_ONLY_FIELDS = ("num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "n_shared_experts",
                   "shared_expert_intermediate_size")
# Fields that only these model types read: given to any other, servescope would ignore them.
READ_ONLY_BY = {
    **dict.fromkeys(("full_attention_interval", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                     "linear_value_head_dim", "linear_conv_kernel_dim"), ("qwen3_next",)),
    **dict.fromkeys(("first_k_dense_replace", "n_shared_experts", "moe_layer_freq"), DEEPSEEK),
    **dict.fromkeys(("interleave_moe_layer_step", "intermediate_size_mlp", "moe_layers"), ("llama4_text",)),
    **dict.fromkeys(("shared_expert_intermediate_size", "mlp_only_layers", "decoder_sparse_step"), QWEN_MOE),
}
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


def model_type_fields(config: ConfigFields, outer: ConfigFields | None) -> ConfigFields:
    """The decoder's fields with transformers' defaults for those its model_type lets it (and its
    multimodal wrapper, `outer`) leave out; a field its model_type would not read is refused."""
    model_type = config.text("model_type")
    for key, readers in READ_ONLY_BY.items():
        if config.has(key) and model_type not in readers:
            config.refuse(key, f"is read only for model_type {' / '.join(readers)}, not {model_type!r}: "
                               "servescope would ignore it")
    defaults = {k: v for k, v in MODEL_TYPE_DEFAULTS.get(model_type, {}).items() if outer is None or not outer.has(k)}
    given = {k: v for k, v in config.data.items() if v is not None}  # null: transformers' default
    return ConfigFields({**defaults, **given}, config.where, outer)


def _aliased(config: ConfigFields, keys: tuple[str, ...], high: int = MAX_SHAPE_VALUE) -> int | None:
    """A field families spell differently (gpt-oss gives both num_experts_per_tok and
    experts_per_token): the first spelling given, every other given agreeing with it."""
    given = [key for key in keys if config.has(key)]
    if not given:
        return None
    value = config.integer(given[0], high=high)
    for other in given[1:]:
        if config.integer(other, high=high) != value:
            config.refuse(other, f"differs from {given[0]} ({value})")
    return value


def _layer_type_counts(c: ConfigFields, layers: int, model_type: str) -> dict[str, int]:
    """How many layers of each attention type, in the order the types first appear: from
    layer_types, or the rules each family's config class derives them by (counted, not listed: a
    hostile layer count builds no list)."""
    window = c.integer("sliding_window", None)
    if not c.flag("use_sliding_window", True):
        window = None
    # Qwen2/3: with use_sliding_window, the first max_window_layers layers still attend in full.
    first_full = min(c.integer("max_window_layers", 0, low=0), layers) if c.has("use_sliding_window") else 0
    types = c.choices("layer_types", LAYER_TYPES)
    interval = c.integer("full_attention_interval", 4) if model_type == "qwen3_next" else 0
    if c.has("attention_chunk_size"):  # Llama 4: NoPE layers attend globally, the rest in chunks
        c.integer("attention_chunk_size")
        # Llama4TextConfig: without a no_rope_layers list, every no_rope_layer_interval-th layer is NoPE
        # (meta-llama/Llama-4-Maverick's config.json gives no list).
        no_rope_interval = c.integer("no_rope_layer_interval", 4)
        no_rope = c.integers("no_rope_layers", 0, 1)
        if no_rope and len(no_rope) != layers:
            c.refuse("no_rope_layers", f"must give one 0/1 per layer ({layers})")
        if no_rope:
            types = ["full_attention" if flag == 0 else "chunked_attention" for flag in no_rope]
        else:
            return _every_nth("full_attention", layers // no_rope_interval, "chunked_attention", layers)
    if model_type == "gpt_oss" and not types:
        c.refuse("layer_types", "missing (gpt-oss alternates sliding and full attention layer by layer)")
    if types:
        if len(types) != layers:
            c.refuse("layer_types", f"must list the {layers} layers' attention types")
        return {t: types.count(t) for t in dict.fromkeys(types)}
    if interval:
        return _every_nth("full_attention", layers // interval, "linear_attention", layers)
    if window and c.has("sliding_window_pattern"):  # Gemma 3 without layer_types
        return _every_nth("full_attention", layers // c.integer("sliding_window_pattern"), "sliding_attention", layers)
    if window:
        return {"full_attention": first_full, "sliding_attention": layers - first_full}
    return {"full_attention": layers}


def _every_nth(nth_type: str, count: int, other_type: str, layers: int) -> dict[str, int]:
    """Every n-th layer of one type (the first layer is of the other unless n is 1)."""
    return {other_type: layers - count, nth_type: count} if count < layers else {nth_type: count}


def _attention_groups(c: ConfigFields, layers: int, kv_heads: int, head_dim: int, model_type: str) -> list[LayerGroup]:
    """Full, sliding-window and chunked-local layers (linear layers are filled in by the caller)."""
    groups = []
    for kind, n in _layer_type_counts(c, layers, model_type).items():
        if not n:
            continue
        if kind == "full_attention":
            groups.append(LayerGroup(FULL, n, kv_heads, head_dim, head_dim))
        elif kind == "sliding_attention":
            groups.append(LayerGroup(SLIDING_WINDOW, n, kv_heads, head_dim, head_dim, window=c.integer("sliding_window")))
        elif kind == "chunked_attention":
            groups.append(LayerGroup(CHUNKED_LOCAL, n, kv_heads, head_dim, head_dim,
                                     window=c.integer("attention_chunk_size")))
        else:
            groups.append(LayerGroup(MAMBA, n))  # filled in by the caller
    if all(g.kind == MAMBA for g in groups):  # the engine's KV cache is paged per token of attention
        c.refuse("layer_types" if c.has("layer_types") else "full_attention_interval",
                 f"leaves none of the {layers} layers attending: a model without attention layers is not modelled")
    return groups


def _moe(c: ConfigFields, layers: int, expert_format: str, model_type: str) -> tuple[MoeSpec | None, int, int]:
    """(experts, dense-MLP layers, their intermediate size)."""
    inter = c.integer("intermediate_size")
    num_experts = _aliased(c, ("num_experts", "num_local_experts", "n_routed_experts"))
    if num_experts is None:
        for key in MOE_ONLY_FIELDS:
            if c.has(key):
                c.refuse(key, "is given without num_experts (or num_local_experts, n_routed_experts)")
        return None, layers, inter
    k = _aliased(c, ("num_experts_per_tok", "experts_per_token"), high=num_experts)
    if k is None:
        c.refuse("num_experts_per_tok", "missing")
    expert_inter = (c.integer("moe_intermediate_size", inter) if model_type in EXPERTS_OF_INTERMEDIATE_SIZE
                    else c.integer("moe_intermediate_size", None))
    if expert_inter is None:
        c.refuse("moe_intermediate_size", f"missing: the experts of model_type {model_type!r} are not intermediate_size wide")
    shared = 0
    dense_layers, dense_inter = 0, inter
    if model_type in DEEPSEEK:
        dense_layers = c.integer("first_k_dense_replace", 0, low=0, high=layers)
        shared = c.integer("n_shared_experts", 0, low=0, high=num_experts) * expert_inter
        if c.integer("moe_layer_freq", 1) != 1:
            c.refuse("moe_layer_freq", "MoE layers other than every layer past first_k_dense_replace are not modelled")
    elif model_type == "llama4_text":
        step = c.integer("interleave_moe_layer_step", 1, high=layers)
        moe_layers = layers // step  # vLLM's llama4.py rule: every step-th layer
        given = c.integers("moe_layers", 0, layers - 1)
        if c.has("moe_layers") and not (len(given) == moe_layers and sorted(given) == list(range(step - 1, layers, step))):
            c.refuse("moe_layers", "differs from interleave_moe_layer_step's layers, which vLLM follows; such a "
                                   "checkpoint is not modelled")
        dense_layers = layers - moe_layers
        dense_inter = c.integer("intermediate_size_mlp")
        shared = inter  # one shared expert of intermediate_size in every MoE layer
    elif model_type in QWEN_MOE:
        if c.integer("decoder_sparse_step", 1) != 1:
            c.refuse("decoder_sparse_step", "MoE layers other than every layer are not modelled")
        mlp_only = c.integers("mlp_only_layers", 0, layers - 1)
        if len(set(mlp_only)) != len(mlp_only):
            c.refuse("mlp_only_layers", "names a layer twice")
        dense_layers = len(mlp_only)
        shared = c.integer("shared_expert_intermediate_size", 0, low=0)
    elif model_type not in ("mixtral", "gpt_oss"):
        c.refuse("model_type", f"experts of model_type {model_type!r} are not modelled; servescope knows mixtral, "
                               "qwen2/3 MoE, qwen3_next, deepseek_v2/v3, kimi_k2, llama4, gpt_oss")
    moe = MoeSpec(num_experts=num_experts, experts_per_token=k, expert_inter=expert_inter,
                  num_moe_layers=layers - dense_layers, shared_expert_inter=shared, expert_format=expert_format,
                  expert_bias=model_type == "gpt_oss")
    return moe, dense_layers, dense_inter


def architecture_from_config(c: ConfigFields, layers: int, heads: int, kv_heads: int, head_dim: int,
                             vision_params: int, dtype: str) -> tuple[Architecture | None, str]:
    """(None for a dense, full-attention, bf16/fp16/fp8 decoder (memory.py's own formula), and the
    format of its linear layers)."""
    linear_fmt, expert_fmt = linear_formats(c, dtype)
    model_type = c.text("model_type")
    mla = None
    if c.has("kv_lora_rank") or model_type in DEEPSEEK:
        mla = MlaShape(c.integer("q_lora_rank", None) or 0, c.integer("kv_lora_rank"), c.integer("qk_nope_head_dim"),
                       c.integer("qk_rope_head_dim"), c.integer("v_head_dim"))
        groups = [LayerGroup(MLA, layers, 1, mla.kv_lora_rank + mla.qk_rope_head_dim, 0)]
    else:
        groups = _attention_groups(c, layers, kv_heads, head_dim, model_type)
    linear = None
    if any(g.kind == MAMBA for g in groups):
        linear = LinearAttentionShape(*(c.integer(f"linear_{key}") for key in (
            "num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim", "conv_kernel_dim")))
        conv = (2 * linear.num_k_heads * linear.head_k_dim + linear.num_v_heads * linear.head_v_dim, linear.conv_kernel - 1)
        groups = [LayerGroup(MAMBA, g.num_layers, conv_state=conv,
                             ssm_state=(linear.num_v_heads, linear.head_v_dim, linear.head_k_dim))
                  if g.kind == MAMBA else g for g in groups]
    moe, dense_layers, dense_inter = _moe(c, layers, expert_fmt if expert_fmt != linear_fmt else "", model_type)
    rotary_factor = c.number("partial_rotary_factor", 1.0, 0.0, 1.0)
    plain = (moe is None and mla is None and len(groups) == 1 and groups[0].kind == FULL and not vision_params
             and linear_fmt in ("bf16", "fp16", "fp8") and model_type != "qwen3_next")
    if plain:
        return None, linear_fmt
    rotary = mla.qk_rope_head_dim if mla else int(head_dim * rotary_factor)
    return Architecture(groups=tuple(groups), moe=moe, dense_mlp_layers=dense_layers, dense_inter=dense_inter or 0,
                        mla=mla, linear_attention=linear, attn_output_gate=model_type == "qwen3_next",
                        linear_format=linear_fmt, vision_params=vision_params, rotary_dim=rotary), linear_fmt


def vision_tower_params(outer: ConfigFields, text: ConfigFields) -> int:
    """A vision encoder's transformer (attention 4h^2 and MLP 2hi per layer) and a projector to the
    text model's hidden size; patch embeddings and norms are small beside it."""
    vision = outer.section("vision_config")
    if vision is None:
        return 0
    h, i, n = (vision.integer(k) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
    return n * (4 * h * h + 2 * h * i) + h * text.integer("hidden_size")


MODELLED_FIELDS = frozenset({
    "model_type", "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "torch_dtype", "dtype", "quantization_config", "tie_word_embeddings",
    "max_position_embeddings", "partial_rotary_factor",
    "num_experts", "num_local_experts", "n_routed_experts",
    "num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "shared_expert_intermediate_size",
    "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "mlp_only_layers", "decoder_sparse_step",
    "interleave_moe_layer_step", "intermediate_size_mlp", "moe_layers", "no_rope_layer_interval", "q_lora_rank",
    "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "sliding_window", "use_sliding_window", "max_window_layers", "sliding_window_pattern", "layer_types",
    "attention_chunk_size", "no_rope_layers", "full_attention_interval",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "text_config", "vision_config",
})


def refuse_unmodelled_fields(config: ConfigFields) -> None:
    """A field neither modelled nor known to be neutral may change memory or time: refuse it by name."""
    for key in config.data:
        if key not in MODELLED_FIELDS and key not in NEUTRAL_FIELDS:
            config.refuse(str(key)[:80], "servescope does not model this config.json field and cannot tell whether it "
                                         "changes memory or step time")
