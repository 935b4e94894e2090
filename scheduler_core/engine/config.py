"""Engine configuration: vLLM's scheduler and cache settings, validated with the field at fault.

Names follow vLLM's `SchedulerConfig` / `CacheConfig` so a reader can move between the two.
`VllmCompat` holds the behaviour switches that differ between vLLM releases: 0.33.0 is the
default; 0.10.1.1 is the same scheduler with each of the recorded rule changes reverted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields

from ..bounds import MAX_BLOCKS, MAX_TOKENS_PER_CONTEXT, Bound, bounds_of, check_all, check_text, setting, settings_of
from ..errors import ConfigError
from .kv_cache_groups import (
    FULL_ATTENTION_ONLY,
    MAX_KV_CACHE_GROUPS_CHARS,
    KVCacheGroupSpec,
    parse_kv_cache_groups,
    spell_kv_cache_groups,
)
from .spec_decode import SpeculativeConfig

POLICIES = ("vllm-v1", "vllm-v0", "static")
SCHEDULING_ORDERS = ("fcfs", "priority")
PREEMPTION_MODES = ("recompute", "swap")
KV_ALLOCATORS = ("paged", "contiguous")


@dataclass(frozen=True)
class VllmCompat:
    """vLLM behaviours that changed between 0.10.1.1 and 0.33.0, one named switch each.

    True is the 0.33.0 behaviour. Each switch can be flipped on its own to see what that one
    change does to a workload (`../shared/data/vllm_oracle/README.md` proves each against vLLM).
    """

    # R1: admit a waiting request only if the free blocks cover its whole current context, not
    # just its first chunk; stops chunked prefill from admitting work it cannot finish.
    full_prompt_admission: bool = setting(True, "admit only if free blocks cover the whole context")
    # R2: `long_prefill_token_threshold` is lifted when at most one request is running or
    # waiting, since there is nobody to starve.
    long_prefill_cap_lifted_when_alone: bool = setting(True, "lift the long-prefill cap for a lone request")
    # R3: without chunked prefill, a prompt larger than the remaining budget stops the waiting
    # scan (strict head of line); 0.10 skipped it and tried the requests behind it.
    unchunked_prompt_blocks_queue: bool = setting(True, "without chunking, a too-big prompt stops the scan")
    # R4: requests skipped during one waiting scan go back to the head in their original order;
    # 0.10 put them back reversed.
    skipped_requests_keep_order: bool = setting(True, "skipped requests return in their original order")
    # R5: freed blocks without a prefix hash go to the FRONT of the free queue (reused first, so
    # cached blocks live longer); 0.10 appended every freed block to the tail.
    unhashed_blocks_reused_first: bool = setting(True, "freed uncached blocks are reused first")
    # R6: when priority preemption picks a request already scheduled this step, unschedule it
    # and return its tokens to the budget (0.10 crashed); a request that preempts itself lets
    # the higher-priority requests behind it still try (0.10 stopped the running scan).
    priority_victim_unscheduled: bool = setting(True, "a scheduled priority victim is unscheduled")
    # R7: KV usage excludes the reserved null block: 1 - free / (num_gpu_blocks - 1).
    usage_excludes_null_block: bool = setting(True, "KV usage excludes the null block")
    # R8: the engine refuses a prompt of exactly max_model_len tokens, which leaves no room for
    # an output token; 0.10 accepted it (and, chunked, it stalls one token short for ever).
    prompt_leaves_room_for_output: bool = setting(True, "a prompt of max_model_len tokens is refused")

    @classmethod
    def for_version(cls, version: str) -> "VllmCompat":
        try:
            return VLLM_PROFILES[version]
        except KeyError:
            raise ConfigError(
                "vllm_version", f"unknown version {version!r}; expected one of {sorted(VLLM_PROFILES)}"
            ) from None


VLLM_PROFILES = {
    "0.33.0": VllmCompat(),
    "0.10.1.1": VllmCompat(**{f.name: False for f in fields(VllmCompat)}),
}


@dataclass(frozen=True)
class EngineConfig:
    """Everything that decides what the engine schedules. The batch limits default to vLLM's for a
    device it does not know (256 sequences, 2,048 tokens); `vllm_default_batch_limits` gives a named GPU's."""

    # Each setting is declared here once: the web schema, the command line's flags and the checks
    # below are made from these declarations (`bounds.setting`). A flag is vLLM's `serve` flag unless
    # `vllm_flag=False` marks it as servescope's own.
    # Past vLLM's usual sizes: a Mamba hybrid's block is raised until its page holds one state (Qwen3-Next: 544).
    block_size: int = setting(16, "tokens per KV block", bound=Bound(1, 4096), flag="--block-size")
    # 1 is only the reserved null block: vLLM accepts it (nothing can run, which the run then reports).
    num_gpu_blocks: int = setting(8192, "KV blocks (unset: sized from GPU memory)", bound=Bound(1, MAX_BLOCKS),
                                  flag="--num-gpu-blocks-override", aliases=("--num-gpu-blocks",), left_open=True)
    max_num_seqs: int = setting(256, "most requests running at once (unset: vLLM's default for the GPU)",
                                bound=Bound(1, 16_384), flag="--max-num-seqs", left_open=True)
    max_num_batched_tokens: int = setting(2048, "token budget of one step (unset: vLLM's default for the GPU)",
                                          bound=Bound(1, MAX_TOKENS_PER_CONTEXT), flag="--max-num-batched-tokens",
                                          left_open=True)
    max_model_len: int = setting(4096, "longest context (prompt + output)",
                                 bound=Bound(1, MAX_TOKENS_PER_CONTEXT), flag="--max-model-len")
    enable_chunked_prefill: bool = setting(True, "split prompts under the token budget", flag="--enable-chunked-prefill",
                                           aliases=("--chunked-prefill",))
    # Left open on the web: a Mamba hybrid turns it off when unset (scenario/kv_cache_wiring.py), so a form
    # that always sent the default would be refused for one.
    enable_prefix_caching: bool = setting(True, "share full KV blocks between requests with the same prefix (unset: on, "
                                                "but off for a Mamba hybrid)", flag="--enable-prefix-caching",
                                          aliases=("--prefix-caching",), left_open=True)
    long_prefill_token_threshold: int = setting(0, "cap on one prompt's chunk per step (0: no cap)",
                                                bound=Bound(0, MAX_TOKENS_PER_CONTEXT), flag="--long-prefill-token-threshold")
    policy: str = setting("vllm-v1", "scheduling policy: vLLM V1's, V0's prefill-first one, or static batches",
                          choices=POLICIES, flag="--policy", vllm_flag=False)
    scheduling_order: str = setting("fcfs", "waiting-queue order: fcfs, or priority (lower value first)",
                                    choices=SCHEDULING_ORDERS, flag="--scheduling-policy", aliases=("--scheduling-order",))
    preemption_mode: str = setting("recompute", "what preemption does with a victim's KV: recompute (V1) or swap to CPU (V0)",
                                   choices=PREEMPTION_MODES, flag="--preemption-mode")
    # CPU blocks for swap preemption (vLLM V0's `swap_space`); only used with preemption_mode=swap.
    num_cpu_blocks: int = setting(0, "swap space in blocks (or swap_space in GiB)", bound=Bound(0, MAX_BLOCKS),
                                  flag="--num-cpu-blocks", vllm_flag=False)
    kv_allocator: str = setting("paged", "PagedAttention, or contiguous: reserve max_model_len per request",
                                choices=KV_ALLOCATORS, flag="--kv-allocator", vllm_flag=False)
    compat: VllmCompat = field(default_factory=VllmCompat)
    # vLLM's `async_scheduling`: schedule step N+1 while step N runs (AsyncScheduler with a batch
    # queue of two). Off here; `resolve_async_scheduling` gives vLLM's own default.
    async_scheduling: bool = setting(False, "schedule the next step while this one runs (unset: vLLM's default for "
                                            "the version: on for 0.33.0)", flag="--async-scheduling", left_open=True)
    # vLLM's `speculative_config` (None: no drafts).
    speculative_config: SpeculativeConfig | None = setting(
        None, 'speculative decoding as vLLM spells it, e.g. \'{"method": "eagle", "num_speculative_tokens": 3}\', '
              'plus servescope\'s "acceptance_rate" (per position) and "acceptance_seed" (unset: none)',
        flag="--speculative-config")
    # vLLM's `KVCacheConfig.kv_cache_groups`: one group per layer type of a hybrid model, all taking
    # blocks from the one pool of num_gpu_blocks (see kv_cache_groups.py). The default, one
    # full-attention group, is every dense model and the engine's single-group fast path. A trace's
    # config may give a list of {"kind", "window"} tables; it is held in its one spelling.
    kv_cache_groups: str = setting(
        FULL_ATTENTION_ONLY, "KV cache groups sharing the pool, in order: full_attention, sliding_window:W, "
                             "chunked_local:C or mamba, comma-separated (a hybrid model's layer types)",
        max_chars=MAX_KV_CACHE_GROUPS_CHARS)

    def __post_init__(self) -> None:
        check_all(ENGINE_BOUNDS, self)
        if isinstance(self.kv_cache_groups, str):
            check_text("kv_cache_groups", self.kv_cache_groups, MAX_KV_CACHE_GROUPS_CHARS)
        specs = parse_kv_cache_groups(self.kv_cache_groups, self.enable_prefix_caching)
        object.__setattr__(self, "kv_cache_groups", spell_kv_cache_groups(specs))
        if self.is_hybrid and (self.policy != "vllm-v1" or self.kv_allocator != "paged" or self.preemption_mode != "recompute"):
            raise ConfigError("kv_cache_groups", "several KV cache groups are vLLM V1's: they need policy vllm-v1, "
                                                 "the paged allocator and recompute preemption")
        for name in ENGINE_SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, f"must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.compat, VllmCompat):
            raise ConfigError("compat", f"must be a table of vLLM behaviour switches, got {self.compat!r}")
        for name, allowed in ENGINE_CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(name, f"unknown value {getattr(self, name)!r}; expected one of {list(allowed)}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError(
                "max_num_batched_tokens", f"must be >= max_num_seqs ({self.max_num_seqs}): every running request needs a token"
            )
        if self.preemption_mode == "swap" and self.num_cpu_blocks == 0:
            raise ConfigError("num_cpu_blocks", "swap preemption needs CPU swap space (num_cpu_blocks > 0)")
        if self.kv_allocator == "contiguous" and self.enable_prefix_caching:
            raise ConfigError("enable_prefix_caching", "the contiguous allocator cannot share blocks; turn it off")
        if not self.chunks_prompts and self.max_num_batched_tokens < self.max_model_len:
            # vLLM refuses this too: a prompt of max_model_len tokens could never be scheduled.
            raise ConfigError(
                "max_num_batched_tokens",
                f"without chunked prefill it must be >= max_model_len ({self.max_model_len})",
            )

    @property
    def chunks_prompts(self) -> bool:
        """Whether prompts may be split over steps; vllm-v0 is V0's prefill-first mode, whole prompts only."""
        return self.enable_chunked_prefill and self.policy != "vllm-v0"

    @property
    def kv_cache_group_specs(self) -> tuple[KVCacheGroupSpec, ...]:
        return parse_kv_cache_groups(self.kv_cache_groups, self.enable_prefix_caching)

    @property
    def is_hybrid(self) -> bool:
        """Whether the KV cache is anything but the one full-attention group."""
        return self.kv_cache_groups != FULL_ATTENTION_ONLY

    @property
    def max_in_flight_tokens(self) -> int:
        """Tokens scheduled but not settled (vLLM's `VllmConfig.max_in_flight_tokens`): a budget per
        batch in flight, two under async scheduling."""
        return (2 if self.async_scheduling else 1) * self.max_num_batched_tokens

    def replace(self, **changes) -> "EngineConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        if not self.is_hybrid:
            # Left out for the default so every scenario file and export written before groups existed reads the same.
            del data["kv_cache_groups"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "EngineConfig":
        """Build from plain JSON-like data; unknown keys are errors so typos are not ignored."""
        if not isinstance(data, dict):
            raise ConfigError("engine", f"must be a table of engine settings, got {data!r}")
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(key, "unknown engine setting")
        data = dict(data)
        if isinstance(data.get("compat"), dict):
            compat_known = {f.name for f in fields(VllmCompat)}
            for key in data["compat"]:
                if key not in compat_known:
                    raise ConfigError(f"compat.{key}", "unknown vLLM compatibility switch")
            for key, value in data["compat"].items():
                if not isinstance(value, bool):
                    raise ConfigError(f"compat.{key}", f"must be true or false, got {value!r}")
            data["compat"] = VllmCompat(**data["compat"])
        if isinstance(data.get("speculative_config"), dict):
            data["speculative_config"] = SpeculativeConfig.from_json(data["speculative_config"])
        return cls(**data)


ENGINE_SETTINGS = settings_of(EngineConfig)
ENGINE_BOUNDS = bounds_of(EngineConfig)
ENGINE_SWITCHES = tuple(name for name, s in ENGINE_SETTINGS.items() if s.type is bool)
ENGINE_CHOICES = {name: s.choices for name, s in ENGINE_SETTINGS.items() if s.choices}


# vLLM's `CacheConfig.gpu_memory_utilization` default: 0.92 since 0.33; 0.10.1.1 had 0.9.
GPU_MEMORY_UTILIZATION_DEFAULT = {"0.33.0": 0.92, "0.10.1.1": 0.9}
GIB_BYTES = 1 << 30


def is_vllm_0_10(engine: dict) -> bool:
    """Whether these engine settings take the 0.10.1.1 profile: every compat switch off, those
    left out counting as on (0.33's), so one reverted rule is still 0.33 with that rule changed."""
    compat = engine.get("compat", {})
    if isinstance(compat, VllmCompat):
        compat = dataclasses.asdict(compat)
    if not isinstance(compat, dict):
        return False  # EngineConfig names the field
    return not any({**dataclasses.asdict(VllmCompat()), **compat}.values())


def vllm_default_batch_limits(engine: dict, device_name: str, device_memory_bytes: float) -> dict:
    """`max_num_batched_tokens` and `max_num_seqs` as `vllm serve` sets those left open
    (`EngineArgs.get_batch_defaults`, the API-server context), for one device: 8,192 tokens and
    1,024 sequences on a GPU of 70 GiB or more that is not an A100 (H100, H200); 16,384 and 1,024
    from 160 GiB (B200, 0.33 only); 2,048 and 256 otherwise. Without chunked prefill the budget
    covers one prompt of max_model_len. Returns only the settings `engine` does not give."""
    old = is_vllm_0_10(engine)
    if device_memory_bytes >= 160 * GIB_BYTES and not old:
        tokens, seqs = 16384, 1024
    elif device_memory_bytes >= 70 * GIB_BYTES and "a100" not in device_name.lower():
        tokens, seqs = 8192, 1024
    else:
        tokens, seqs = 2048, 256
    max_model_len = engine.get("max_model_len", EngineConfig.max_model_len)
    chunked = engine.get("enable_chunked_prefill", EngineConfig.enable_chunked_prefill)
    given = [engine[name] for name in ("max_num_batched_tokens", "max_num_seqs") if name in engine]
    if not all(type(value) is int for value in (max_model_len, *given)):
        return {}  # EngineConfig names the setting that is not a whole number
    defaults = {}
    if "max_num_batched_tokens" not in engine:
        if old:  # 0.10.1.1: an unchunked budget is exactly one max_model_len prompt
            defaults["max_num_batched_tokens"] = tokens if chunked else max_model_len
        else:  # 0.33: at least one such prompt, at most what max_num_seqs full contexts need
            limit = engine.get("max_num_seqs", seqs)
            defaults["max_num_batched_tokens"] = min(limit * max_model_len, tokens if chunked else max(max_model_len, tokens))
    if "max_num_seqs" not in engine:
        # 0.10.1.1 kept the sequence limit within the token budget; 0.33 does not.
        budget = engine.get("max_num_batched_tokens", defaults.get("max_num_batched_tokens"))
        defaults["max_num_seqs"] = min(seqs, budget) if old else seqs
    return defaults


def vllm_default_async_scheduling(engine: dict) -> bool:
    """vLLM's own default for `async_scheduling` with these engine settings: 0.33 turns it on
    unless something is incompatible (`VllmConfig`: pooling models, pipeline parallelism, n-gram
    drafting on the CPU, which the V1 model runner cannot overlap); 0.10.1.1 had it off. Only the vllm-v1 policy has it at all."""
    if engine.get("policy", "vllm-v1") != "vllm-v1":
        return False
    spec = engine.get("speculative_config")
    if spec is not None and (spec.get("method") if isinstance(spec, dict) else spec.method) == "ngram":
        return False
    return not is_vllm_0_10(engine)

