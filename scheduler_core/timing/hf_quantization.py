"""How a config.json's `quantization_config` stores the linear layers: the weight format of the
attention and dense layers, and of the routed experts (weight_formats.py gives their bytes and rates)."""

from __future__ import annotations

from .config_fields import MAX_TEXT_CHARS, ConfigFields

# Fields of a quantization_config (and of compressed-tensors' weights / input_activations) that change
# neither bytes nor rate as servescope models them: never read, so any value passes. The e4m3 / e5m2
# choice and static or dynamic activation scales store the same bytes; `strategy` (channel, tensor,
# block) moves the scales' bytes by well under 0.1%.
QUANT_NEUTRAL_FIELDS = frozenset({"activation_scheme", "fmt", "format", "dynamic", "symmetric", "strategy",
                                  "targets", "observer", "observer_kwargs", "actorder", "block_structure"})
QUANT_METHODS = ("fp8", "fbgemm_fp8", "mxfp4", "modelopt", "awq", "gptq", "compressed-tensors")
UNMODELLED = ("servescope knows fp8 (per-tensor, per-channel, 128x128 blocks), mxfp4, nvfp4, awq/gptq 4-bit "
              "group 128, compressed-tensors w4a16 and w8a8")


def linear_formats(config: ConfigFields, dtype: str) -> tuple[str, str]:
    """(format of the attention and dense layers, format of the routed experts); `dtype` (bf16 or
    fp16) when the checkpoint is not quantized."""
    quant = config.holder("quantization_config").section("quantization_config")
    if quant is None:
        return dtype, dtype
    method = quant.choice("quant_method", QUANT_METHODS)
    # The modules kept in 16 bits: servescope assumes what these checkpoints keep (the LM head, and
    # for gpt-oss attention, router and embeddings), so only their shape is checked.
    for key in ("ignore", "modules_to_not_convert"):
        for i, module in enumerate(quant.items(key)):
            if not isinstance(module, str) or len(module) > MAX_TEXT_CHARS:
                quant.refuse(f"{key}[{i}]", f"must be a module name of at most {MAX_TEXT_CHARS} characters")
    if method == "fp8" and quant.has("weight_block_size"):
        if quant.integers("weight_block_size", 1, 1 << 20) != [128, 128]:
            quant.refuse("weight_block_size", f"blocks other than [128, 128] are not modelled; {UNMODELLED}")
        return "fp8-block", "fp8-block"
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", "fp8"
    if method == "mxfp4":
        # gpt-oss: modules_to_not_convert keeps attention, router, embedding and LM head in bf16.
        return "bf16", "mxfp4"
    if method == "modelopt":
        algo = quant.text("quant_algo", "FP8").upper()
        if algo not in ("FP8", "NVFP4"):
            quant.refuse("quant_algo", f"{algo!r} is not modelled; servescope knows FP8 and NVFP4")
        return ("nvfp4", "nvfp4") if algo == "NVFP4" else ("fp8", "fp8")
    if method in ("awq", "gptq"):
        if quant.integer("bits", low=1, high=64) != 4:
            quant.refuse("bits", f"only 4-bit {method} is modelled; {UNMODELLED}")
        if quant.integer("group_size", low=-1) != 128:
            quant.refuse("group_size", f"only groups of 128 are modelled; {UNMODELLED}")
        return (f"int4-{method}",) * 2
    return _compressed_tensors(quant)


def _compressed_tensors(quant: ConfigFields) -> tuple[str, str]:
    """llm-compressor's checkpoints describe the weights (and activations) of each config group."""
    weights, activations = [], []
    for group in quant.sections("config_groups"):
        w = group.section("weights")
        if w is None:
            group.refuse("weights", "missing")
        weights.append((w.choice("type", ("float", "int")), w.integer("num_bits", low=1, high=64),
                        w.integer("group_size", None, low=-1)))
        a = group.section("input_activations")
        if a is not None and a.data:
            a.choice("type", ("float", "int"))
            a.integer("num_bits", low=1, high=64)
        activations.append(a is not None and bool(a.data))
    if weights and all(t == "float" and bits == 8 for t, bits, _ in weights):
        return "fp8", "fp8"
    if weights and all(w == ("int", 4, 128) for w in weights) and not any(activations):
        return "w4a16", "w4a16"
    if weights and all(t == "int" and bits == 8 for t, bits, _ in weights) and all(activations):
        return "w8a8-int8", "w8a8-int8"
    quant.refuse("config_groups", f"these compressed-tensors settings are not modelled; {UNMODELLED}")
