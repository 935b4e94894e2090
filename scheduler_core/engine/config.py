"""Engine configuration: vLLM's scheduler and cache settings, validated with the field at fault.

Names follow vLLM's `SchedulerConfig` / `CacheConfig` so a reader can move between the two.
`VllmCompat` holds the behaviour switches that differ between vLLM releases (`releases.py` says
which release has each): 0.33.0 is the default; 0.10.1.1 is the same scheduler with every switch off.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields

from ..bounds import MAX_BLOCKS, MAX_TOKENS_PER_CONTEXT, Bound, bounds_of, check_all, check_text, setting, settings_of
from ..errors import ConfigError
from .eagle_hit_rule import NO_EAGLE, eagle_hit_rule
from .kv_cache_groups import (
    FULL_ATTENTION_ONLY,
    MAX_KV_CACHE_GROUPS_CHARS,
    KVCacheGroupSpec,
    parse_kv_cache_groups,
    spell_kv_cache_groups,
)
from .multi_step import MAX_NUM_SCHEDULER_STEPS, check_multi_step
from .releases import LATEST, VLLM_PROFILES, VllmCompat, VllmRelease
from .spec_decode import EAGLE_METHODS, SpeculativeConfig
from .vllm_block_hash import PREFIX_CACHING_HASH_ALGOS

__all__ = ["VLLM_PROFILES", "VllmCompat", "VllmRelease"]  # re-exported: where callers have always found them

POLICIES = ("vllm-v1", "vllm-v0", "static", "naive")
SCHEDULING_ORDERS = ("fcfs", "priority")
PREEMPTION_MODES = ("recompute", "swap")
KV_ALLOCATORS = ("paged", "contiguous")


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
    policy: str = setting("vllm-v1", "scheduling policy: vLLM V1's, V0's prefill-first one, static batches, or "
                                     "naive (static batches over contiguous KV without CUDA graphs)",
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
    # vLLM V0's `num_scheduler_steps` (0.5.5-0.10.0): one scheduler call, then this many decode passes
    # back to back (multi_step.py). V1 never had it.
    num_scheduler_steps: int = setting(1, "decode passes per scheduler call: V0's multi-step scheduling (vllm-v0 only)",
                                       bound=Bound(1, MAX_NUM_SCHEDULER_STEPS), flag="--num-scheduler-steps")
    # vLLM's `speculative_config` (None: no drafts).
    speculative_config: SpeculativeConfig | None = setting(
        None, 'speculative decoding as vLLM spells it, e.g. \'{"method": "eagle", "num_speculative_tokens": 3}\', '
              'plus servescope\'s "acceptance_rate" (per position) and "acceptance_seed" (unset: none)',
        flag="--speculative-config")
    # Whether a KV connector is configured (vLLM's `--kv-transfer-config`, e.g. for offloading or
    # disaggregated prefill): vLLM 0.33 then keeps EAGLE's legacy block hashes and its last-block drop.
    kv_connector: bool = setting(False, "a KV connector is configured (vLLM's --kv-transfer-config)",
                                 flag="--kv-connector", vllm_flag=False)
    # vLLM's `CacheConfig.prefix_caching_hash_algo`: the hash vLLM keys its prefix cache by. The engine
    # decides with its own (equal prefixes, equal hashes, whichever function); this one is computed only
    # for the KV events a router reads, so their block hashes are vLLM's (engine/vllm_block_hash.py).
    prefix_caching_hash_algo: str = setting("sha256", "block hash of the KV events: sha256 (vLLM's default) or sha256_cbor",
                                            choices=PREFIX_CACHING_HASH_ALGOS, flag="--prefix-caching-hash-algo")
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
        if self.is_hybrid and eagle_hit_rule(self) != NO_EAGLE:
            raise ConfigError("speculative_config", "EAGLE/MTP drafts with prefix caching are modelled for one KV cache "
                                                    "group only; turn prefix caching off or use a dense model")
        for name in ENGINE_SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, f"must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.compat, VllmCompat):
            raise ConfigError("compat", f"must be a table of vLLM behaviour switches, got {self.compat!r}")
        for name, allowed in ENGINE_CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(name, f"unknown value {getattr(self, name)!r}; expected one of {list(allowed)}")
        if self.num_scheduler_steps > 1:
            check_multi_step(self)
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError(
                "max_num_batched_tokens", f"must be >= max_num_seqs ({self.max_num_seqs}): every running request needs a token"
            )
        if self.preemption_mode == "swap" and self.num_cpu_blocks == 0:
            raise ConfigError("num_cpu_blocks", "swap preemption needs CPU swap space (num_cpu_blocks > 0)")
        if self.policy == "naive" and (self.kv_allocator != "contiguous" or self.enable_prefix_caching):
            raise ConfigError("kv_allocator", "the naive loop reserves contiguous KV and shares none of it: it needs "
                                              "kv_allocator contiguous and prefix caching off")
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
    def num_lookahead_tokens(self) -> int:
        """Slots past a request's new tokens that its drafter writes KV into, asked for by every
        allocation (vLLM's `VllmConfig.num_lookahead_tokens`; 0 without a drafter that has them)."""
        return self.speculative_config.num_lookahead_tokens if self.speculative_config else 0

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
        if not self.kv_connector:
            del data["kv_connector"]
        if self.num_scheduler_steps == 1:
            del data["num_scheduler_steps"]  # as above: the single step every engine but V0's multi-step takes
        if self.prefix_caching_hash_algo == "sha256":
            del data["prefix_caching_hash_algo"]  # vLLM's default
        spec = data["speculative_config"]
        for name in ("disable_eagle_block_drop", "disable_lookahead_block_hashes"):
            if spec is not None and not spec[name]:
                del spec[name]  # as above: vLLM's defaults are left out
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


GIB_BYTES = 1 << 30


def implied_release(engine: dict) -> VllmRelease:
    """The release whose defaults apply to engine settings that name none: 0.10.1.1 when every compat
    switch is off (those left out counting as on), so one reverted rule is still 0.33 with that rule
    changed; else the latest."""
    compat = engine.get("compat", {})
    if isinstance(compat, VllmCompat):
        compat = dataclasses.asdict(compat)
    if not isinstance(compat, dict):
        return VllmRelease(LATEST)  # EngineConfig names the field
    return VllmRelease("0.10.1.1" if not any({**dataclasses.asdict(VllmCompat()), **compat}.values()) else LATEST)


def vllm_default_batch_limits(engine: dict, device_name: str, device_memory_bytes: float,
                              release: VllmRelease | None = None) -> dict:
    """`max_num_batched_tokens` and `max_num_seqs` as `vllm serve` sets those left open
    (`EngineArgs.get_batch_defaults`, the API-server context), for one device and release: 8,192
    tokens and 1,024 sequences on a GPU of 70 GiB or more that is not an A100 (H100, H200); 16,384
    and 1,024 from 160 GiB (B200) since 0.28; 2,048 and 256 otherwise. Without chunked prefill the
    budget covers one prompt of max_model_len; a defaulted max_num_seqs is at most the budget (every
    release). Returns only the settings `engine` does not give."""
    release = release or implied_release(engine)
    if device_memory_bytes >= 160 * GIB_BYTES and release.has("batch_defaults_16k_from_160_gib"):
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
        if release.has("batch_defaults_bounded_by_context"):
            # At least one max_model_len prompt, at most what max_num_seqs full contexts need.
            limit = engine.get("max_num_seqs", seqs)
            defaults["max_num_batched_tokens"] = min(limit * max_model_len, tokens if chunked else max(max_model_len, tokens))
        else:  # an unchunked budget is exactly one max_model_len prompt
            defaults["max_num_batched_tokens"] = tokens if chunked else max_model_len
    if "max_num_seqs" not in engine:
        defaults["max_num_seqs"] = min(seqs, engine.get("max_num_batched_tokens", defaults.get("max_num_batched_tokens")))
    return defaults


def vllm_default_async_scheduling(engine: dict, release: VllmRelease | None = None) -> bool:
    """vLLM's own default for `async_scheduling` with these engine settings: on since 0.14 unless
    something is incompatible (`VllmConfig`: pooling models, pipeline parallelism, drafters other
    than EAGLE/MTP, until 0.33 ran n-gram drafts asynchronously under Model Runner V2); off before.
    Only the vllm-v1 policy has it at all."""
    release = release or implied_release(engine)
    if engine.get("policy", "vllm-v1") != "vllm-v1" or not release.has("async_scheduling_by_default"):
        return False
    spec = engine.get("speculative_config")
    if spec is not None and (spec.get("method") if isinstance(spec, dict) else spec.method) not in EAGLE_METHODS:
        return release.has("ngram_async_under_model_runner_v2")  # n-gram, or a draft model
    return True
