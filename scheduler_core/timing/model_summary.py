"""A model's size in the words a model card and vLLM's startup log use: total and active parameters,
the weights one GPU holds and in which format, the KV bytes per token of each layer group, and the
experts. Read-only arithmetic over what architecture.py, attention_specs.py and memory.py compute:
the dashboard's configuration panel and the lessons quote it.

Parameters are counted as model cards count them: every weight of the checkpoint (all experts, the
embedding and the LM head, norms, the vision tower) is total; active is what one token multiplies
through (the non-expert weights, `num_experts_per_tok` routed experts and any shared expert per MoE
layer, the LM head), not the input embedding, which is only indexed. A dense model's parameters are
all active but that embedding.
"""

from __future__ import annotations

import dataclasses

from .architecture import ACT_BYTES, WeightInventory
from .attention_specs import MAMBA
from .cost_model import DTYPE_BYTES, GpuSpec, ModelSpec
from .memory import layer_groups, weight_bytes_per_gpu
from .moe import ExpertPlacement


def _unquantized(model: ModelSpec) -> ModelSpec:
    """The same shape with every linear layer in bf16: 2 bytes a parameter, no scales, no padding."""
    arch = model.arch
    moe = arch.moe and dataclasses.replace(arch.moe, expert_format="")
    return dataclasses.replace(model, arch=dataclasses.replace(arch, linear_format="bf16", moe=moe))


def parameter_counts(model: ModelSpec) -> tuple[int, int]:
    """(total, active) parameters of the whole model (one GPU's worth at TP 1)."""
    h, embedding = model.hidden, model.vocab * model.hidden
    if model.arch is None:
        total = model.layers * model.params_per_layer + (2 * model.layers + 1) * h
        total += embedding * (1 if model.tie_word_embeddings else 2)
        return total, total - (0 if model.tie_word_embeddings else embedding)
    inventory = WeightInventory(_unquantized(model), ExpertPlacement(1))
    rotary = model.max_position_embeddings * (model.arch.rotary_dim or model.head_dim) * ACT_BYTES  # a buffer
    total = (inventory.total_bytes - rotary) // ACT_BYTES
    # One token: active_params_per_token leaves the LM head out (the cost model charges it apart).
    active = int(inventory.active_params_per_token()) + embedding
    return total, active


def weight_formats(model: ModelSpec) -> dict[str, str]:
    """The storage format of the linear layers, and of the experts where they differ."""
    if model.arch is None:
        return {"linear": model.wdtype}
    formats = {"linear": model.arch.linear_format}
    moe = model.arch.moe
    if moe is not None and moe.expert_format and moe.expert_format != model.arch.linear_format:
        formats["experts"] = moe.expert_format
    return formats


def kv_groups_summary(model: ModelSpec, tp: int) -> list[dict]:
    """Per layer group on one GPU: its kind, layers, window, and KV bytes per token per layer (for
    linear-attention / Mamba layers, the fixed state per request per layer instead)."""
    dtype_bytes = DTYPE_BYTES[model.kv_dtype]
    groups = []
    for group in layer_groups(model):
        entry = {"kind": group.kind, "num_layers": group.num_layers, "window": group.window}
        if group.kind == MAMBA:
            entry["state_bytes_per_request"] = group.state_bytes(tp)
        else:
            entry["bytes_per_token"] = group.bytes_per_token(tp, dtype_bytes)
        groups.append(entry)
    return groups


def model_summary(model: ModelSpec, gpu: GpuSpec, tp: int = 1, placement: ExpertPlacement | None = None) -> dict:
    """What the configuration panel shows of the model, all numbers per GPU of the TP group (its
    experts placed as `placement` says: sliced over TP by default, whole under expert parallelism)."""
    total, active = parameter_counts(model)
    groups = kv_groups_summary(model, tp)
    summary = {
        "name": model.name,
        "total_params": total,
        "active_params": active,
        "weights_bytes_per_gpu": weight_bytes_per_gpu(model, tp, gpu, placement),
        "weight_formats": weight_formats(model),
        "kv_dtype": model.kv_dtype,
        "kv_groups": groups,
        # Every attention layer keeping every token: what a request's token would cost without windows.
        "kv_bytes_per_token_all_layers": sum(g["num_layers"] * g.get("bytes_per_token", 0) for g in groups),
        "experts": None,
    }
    moe = model.arch.moe if model.arch is not None else None
    if moe is not None:
        summary["experts"] = {"num_experts": moe.num_experts, "per_token": moe.experts_per_token,
                              "shared": moe.shared_expert_inter > 0, "num_moe_layers": moe.num_moe_layers}
    return summary
