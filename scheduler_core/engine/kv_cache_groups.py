"""The KV cache groups of the engine's one block pool (vLLM's `KVCacheConfig.kv_cache_groups`).

vLLM 0.33.0 keeps one group per layer type of a hybrid model (Gemma 3, gpt-oss, Llama 4,
Qwen3-Next): every group draws its blocks from one shared `BlockPool`, a request holds a block
table per group, and one `schedule()` decision counts the blocks of all groups together. The
sizing side (how many layers each group has, bytes per block) lives in `timing/kv_groups.py`;
the engine only needs each group's kind and window, which decide how many blocks a request holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

FULL_ATTENTION, SLIDING_WINDOW, CHUNKED_LOCAL, MAMBA = "full_attention", "sliding_window", "chunked_local", "mamba"
KV_CACHE_GROUP_KINDS = (FULL_ATTENTION, SLIDING_WINDOW, CHUNKED_LOCAL, MAMBA)


@dataclass(frozen=True)
class KVCacheGroupSpec:
    """One group's spec: `window` is the sliding window or the attention chunk size (tokens)."""

    kind: str = FULL_ATTENTION
    window: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KV_CACHE_GROUP_KINDS:
            raise ConfigError("kv_cache_groups.kind",
                              f"unknown value {self.kind!r}; expected one of {list(KV_CACHE_GROUP_KINDS)}")
        needs_window = self.kind in (SLIDING_WINDOW, CHUNKED_LOCAL)
        if type(self.window) is not int or (needs_window and self.window < 1) or (not needs_window and self.window):
            wanted = "a window of 1 token or more" if needs_window else "no window"
            raise ConfigError("kv_cache_groups.window", f"{self.kind} needs {wanted}, got {self.window!r}")

    @classmethod
    def from_json(cls, data) -> "KVCacheGroupSpec":
        if isinstance(data, KVCacheGroupSpec):
            return data
        if not isinstance(data, dict) or set(data) - {"kind", "window"}:
            raise ConfigError("kv_cache_groups", f"each group is {{'kind': ..., 'window': ...}}, got {data!r}")
        return cls(**data)


# Every model before hybrids, and the default: one full-attention group (the fast single-group path).
FULL_ATTENTION_ONLY = FULL_ATTENTION
MAX_KV_CACHE_GROUPS = 8
MAX_KV_CACHE_GROUPS_CHARS = 200


def parse_kv_cache_groups(value, enable_prefix_caching: bool) -> tuple[KVCacheGroupSpec, ...]:
    """The groups as specs, from their spelling ("full_attention,sliding_window:128": kinds in group
    order, a window or chunk after a colon) or from a list of {"kind", "window"} tables (a trace's
    config); a ConfigError names what is wrong or what vLLM would refuse."""
    if isinstance(value, str):
        entries = [entry.strip() for entry in value.split(",")]
        groups = []
        for entry in entries:
            kind, _, window = entry.partition(":")
            if window and not window.isdigit():
                raise ConfigError("kv_cache_groups.window", f"must be a whole number of tokens, got {window!r}")
            groups.append({"kind": kind, "window": int(window)} if window else {"kind": kind})
    elif isinstance(value, (tuple, list)):
        groups = list(value)
    else:
        raise ConfigError("kv_cache_groups", f"must be like 'full_attention,sliding_window:128', got {value!r:.80}")
    if not groups or len(groups) > MAX_KV_CACHE_GROUPS:
        raise ConfigError("kv_cache_groups", f"must be 1 to {MAX_KV_CACHE_GROUPS} groups, got {len(groups)}")
    specs = tuple(KVCacheGroupSpec.from_json(group) for group in groups)
    if all(spec.kind == MAMBA for spec in specs):
        raise ConfigError("kv_cache_groups", "needs at least one attention group (a pure state model has no block tables)")
    if enable_prefix_caching and any(spec.kind == MAMBA for spec in specs):
        # vLLM 0.33 caches Mamba prefixes only in mamba_cache_mode='align' (state checkpoints per
        # block), which is not modelled; without it vLLM refuses prefix caching for these models.
        raise ConfigError("enable_prefix_caching", "Mamba groups with prefix caching need mamba_cache_mode='align' "
                                                   "(vLLM 0.33's default for these models), which is not modelled; turn "
                                                   "prefix caching off (--no-enable-prefix-caching)")
    return specs


def spell_kv_cache_groups(specs: tuple[KVCacheGroupSpec, ...]) -> str:
    """The one spelling of these groups (what `EngineConfig.kv_cache_groups` holds once checked)."""
    return ",".join(f"{spec.kind}:{spec.window}" if spec.window else spec.kind for spec in specs)
