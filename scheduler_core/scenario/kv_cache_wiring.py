"""The engine's KV cache groups and block size, derived from the model as vLLM 0.33.0 derives them.

A scenario never needs `kv_cache_groups` by hand: timing/kv_groups.py groups the model's layer
types as vLLM's planner does (gpt-oss: `sliding_window:128,full_attention`; Gemma-3-27B: six
sliding-window groups, then one full-attention group), and raises the block size for a Mamba hybrid
(Qwen3-Next) so that a page holds one state. vLLM runs its hybrid KV cache manager unless something
turns it off; here that is:
- chunked local attention (Llama 4) with an EAGLE-style drafter: vLLM's own rule
  (`VllmConfig.__post_init__`, "not yet supported with chunked local attention + eagle");
- servescope's what-ifs outside vLLM V1 (the vllm-v0 and static policies, the contiguous allocator,
  swap preemption), which the hybrid manager does not serve: they see the model as vLLM does with
  `--disable-hybrid-kv-cache-manager`, every layer keeping every token in one full-attention group.
A Mamba hybrid cannot run that way (vLLM fails to start it), so those settings are refused by name.

Prefix caching: vLLM 0.33 leaves it on for Mamba hybrids and caches their states in
`mamba_cache_mode='align'` (a checkpoint per block, block-aligned prompt chunks, two state blocks a
request), which is not modelled. Left unset, it is turned off here, the mode vLLM runs with
`--no-enable-prefix-caching` ('none', which the hybrid recordings replay), and the startup lines say
so; asked for, it is refused (engine/kv_cache_groups.py names `enable_prefix_caching`).
"""

from __future__ import annotations

from ..engine.config import EngineConfig
from ..engine.kv_cache_groups import FULL_ATTENTION_ONLY, MAMBA, parse_kv_cache_groups, spell_kv_cache_groups
from ..engine.spec_decode import EAGLE_METHODS
from ..errors import ConfigError
from ..timing.attention_specs import CHUNKED_LOCAL
from ..timing.cost_model import ModelSpec
from ..timing.kv_groups import KvLayout
from ..timing.memory import layer_groups, model_kv_layout

# Settings under which the hybrid manager does not run, with the value that keeps it.
HYBRID_MANAGER_NEEDS = {"policy": "vllm-v1", "kv_allocator": "paged", "preemption_mode": "recompute"}
# True whether the user turned caching off or left it to servescope: only vLLM's default differs.
ALIGN_MODE_NOTE = ("servescope: prefix caching off for this Mamba hybrid, as with --no-enable-prefix-caching; "
                   "vLLM 0.33's default caches its states in mamba_cache_mode='align', which is not modelled")


def hybrid_manager_off_by(model: ModelSpec, engine: dict) -> str:
    """The setting that keeps vLLM's hybrid KV cache manager from running, or ''."""
    for name, needed in HYBRID_MANAGER_NEEDS.items():
        if engine.get(name, getattr(EngineConfig, name)) != needed:
            return name
    spec = engine.get("speculative_config")
    method = spec.get("method") if isinstance(spec, dict) else getattr(spec, "method", None)
    if method in EAGLE_METHODS and any(g.kind == CHUNKED_LOCAL for g in layer_groups(model)):
        return "speculative_config"
    return ""


def engine_kv_layout(model: ModelSpec, tp: int, engine: dict) -> KvLayout:
    """vLLM's groups for the model under these engine settings (a dict as a scenario gives them)."""
    off_by = hybrid_manager_off_by(model, engine)
    block_size = engine.get("block_size", EngineConfig.block_size)
    max_model_len = engine.get("max_model_len", EngineConfig.max_model_len)
    tokens = engine.get("max_num_batched_tokens", EngineConfig.max_num_batched_tokens)
    in_flight = (2 if engine.get("async_scheduling", EngineConfig.async_scheduling) else 1) * tokens
    try:
        return model_kv_layout(model, tp, block_size, max_model_len, in_flight, hybrid_manager=not off_by)
    except ConfigError as e:
        if not off_by or e.field != "kv_cache_groups":
            raise
        raise ConfigError(off_by, f"{model.name}: {e.reason}, which {off_by}={engine.get(off_by)!r} turns off") from None


def wire_kv_cache_groups(model: ModelSpec, tp: int, engine: dict) -> None:
    """Set `engine`'s kv_cache_groups and block_size (and prefix caching for a Mamba hybrid) as vLLM
    derives them from the model; a `kv_cache_groups` given that says otherwise is refused by name.
    The default spelling, one full-attention group, counts as not given: the web's schema fills it in."""
    if not all(isinstance(engine.get(k, 0), int) for k in ("block_size", "max_model_len", "max_num_batched_tokens")):
        return  # EngineConfig names the field
    layout = engine_kv_layout(model, tp, engine)
    given = engine.get("kv_cache_groups")
    spelled = given if given in (None, FULL_ATTENTION_ONLY) else spell_kv_cache_groups(parse_kv_cache_groups(given, False))
    if spelled not in (None, FULL_ATTENTION_ONLY, layout.kv_cache_groups):
        raise ConfigError("kv_cache_groups", (
            f"{model.name}'s layers make vLLM 0.33's KV cache groups {layout.kv_cache_groups!r} under these settings, "
            f"not {given!r:.120}; leave kv_cache_groups unset (it follows the model)"))
    engine["kv_cache_groups"] = layout.kv_cache_groups
    engine["block_size"] = layout.block_size
    if MAMBA in layout.kv_cache_groups.split(","):
        engine.setdefault("enable_prefix_caching", False)


def startup_notes(engine: EngineConfig) -> tuple[str, ...]:
    """What servescope runs differently from vLLM's defaults for these groups, for the startup lines."""
    has_mamba = any(spec.kind == MAMBA for spec in engine.kv_cache_group_specs)
    return (ALIGN_MODE_NOTE,) if has_mamba and not engine.enable_prefix_caching else ()
