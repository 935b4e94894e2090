"""vLLM releases 0.10 to 0.33: which behaviour each one has, from one table.

Every row of `RELEASE_CHANGES` is one behaviour vLLM changed, the first release that has it, and
where it is in that release's source (file: function), read in the released wheels. A release has
every change of its own and earlier releases, so `--vllm-version 0.19.1` is the table cut at 0.19.1:
the scheduler's rule switches (`VllmCompat`), the defaults `vllm serve` fills in, the flags it no
longer takes and the opt-in flags servescope does not model. To add a behaviour, add a row (and, for
a switch, its `VllmCompat` field of the same name); a `NOT_MODELLED` row becomes a `SWITCH` row
when its field lands. `docs/vllm-versions.md` is written from this table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..bounds import setting
from ..errors import ConfigError

# Every release on PyPI from 0.10.0 to 0.33.0 (`pip index versions vllm`), oldest first.
VLLM_RELEASES = (
    "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1",
    "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1",
    "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1",
    "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)
LATEST = "0.33.0"

# What a row is: a scheduler rule (a `VllmCompat` switch), a default `vllm serve` fills in, a flag the
# release no longer takes, an opt-in flag servescope does not model (refused by name where the release
# has it), a change in what vLLM's startup profiling counts (timing/profile_run.py), or a behaviour no
# switch models yet.
SWITCH = "switch"
DEFAULT = "default"
REMOVED = "removed flag"
NOT_MODELLED_FLAG = "flag not modelled"
NOT_MODELLED = "not modelled"
MEMORY_PROFILE = "memory profile"


@dataclass(frozen=True)
class ReleaseChange:
    """One behaviour vLLM changed: `name` (a switch, a default, or a flag as `vllm serve` spells it),
    the first `release` that has it, `where` in that release's source, and `what` it does."""

    name: str
    release: str
    where: str
    what: str
    kind: str = SWITCH
    # A switch that `vllm serve` exposes: its flag (and `--no-` form), read from a `--vllm` line.
    flag: str = ""


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


RELEASE_CHANGES = (
    # -- the scheduler's rules, one `VllmCompat` switch each (all off: 0.10.0-0.10.1.1) -------------
    ReleaseChange("usage_excludes_null_block", "0.10.2", "vllm/v1/core/block_pool.py: BlockPool.get_usage",
                  "KV usage is 1 - free / (num_gpu_blocks - 1): the reserved null block is not capacity"),
    ReleaseChange("priority_victim_leaves_step", "0.10.2", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "a scheduled priority victim leaves the step's scheduled requests (its tokens stay counted), so "
                  "the end-of-step assertion that 0.10.1.1 failed holds"),
    ReleaseChange("priority_victim_unscheduled", "0.11.1", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "a scheduled priority victim's tokens go back to the budget and the running scan steps back past it"),
    ReleaseChange("prompt_leaves_room_for_output", "0.11.1",
                  "vllm/v1/engine/processor.py: Processor._validate_model_input",
                  "a prompt of exactly max_model_len tokens is refused: no room for an output token"),
    ReleaseChange("prefix_stats_exclude_preempted", "0.11.1", "vllm/v1/metrics/stats.py: PrefixCacheStats.record",
                  "a preempted request's re-admission is counted apart (preempted_queries), not in the hit rate"),
    ReleaseChange("unchunked_prompt_blocks_queue", "0.12.0", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "without chunked prefill, a prompt larger than the remaining budget stops the waiting scan"),
    ReleaseChange("skipped_requests_keep_order", "0.14.0",
                  "vllm/v1/core/sched/request_queue.py: FCFSRequestQueue.prepend_requests",
                  "requests skipped in one waiting scan go back to the head in their original order"),
    ReleaseChange("full_prompt_admission", "0.19.0",
                  "vllm/config/scheduler.py: SchedulerConfig.scheduler_reserve_full_isl (default True)",
                  "a waiting request is admitted only if the free blocks cover its whole context, not its first chunk",
                  flag="--scheduler-reserve-full-isl"),
    ReleaseChange("padded_spec_admission", "0.25.0", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "a new request with one token left is padded to 1 + K under speculative decoding"),
    ReleaseChange("prefix_stats_per_admission", "0.27.0",
                  "vllm/v1/core/kv_cache_manager.py: KVCacheManager.record_prefix_cache_stats",
                  "prefix-cache stats counted once per admission, not per lookup"),
    ReleaseChange("unhashed_blocks_reused_first", "0.28.0", "vllm/v1/core/block_pool.py: BlockPool.free_blocks",
                  "freed blocks without a prefix hash go to the front of the free queue (reused first)"),
    ReleaseChange("priority_victim_index_fixed", "0.28.0", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "the running scan steps back past any priority victim ahead of it, scheduled or not (before, an "
                  "unscheduled one made the scan skip the request after it)"),
    ReleaseChange("eagle_block_drop_opt_out", "0.30.0", "vllm/config/speculative.py: SpeculativeConfig",
                  "speculative_config.disable_eagle_block_drop opts out of the EAGLE/MTP last-block drop of a "
                  "prefix hit (FullAttentionManager.find_longest_cache_hit; unconditional in every earlier release)"),
    ReleaseChange("long_prefill_cap_lifted_when_alone", "0.31.0", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "long_prefill_token_threshold is lifted when at most one request is running or waiting"),
    ReleaseChange("self_preempted_scan_continues", "0.33.0", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "a priority request that preempted itself lets the higher-priority running requests after it try"),
    ReleaseChange("lookahead_block_hashes", "0.33.0", "vllm/config/vllm.py: VllmConfig.num_hash_lookahead_tokens",
                  "with EAGLE/MTP, blocks are hashed with lookahead tokens instead of the last-block drop, "
                  "except with a KV connector"),
    # -- the defaults `vllm serve` fills in ---------------------------------------------------------
    ReleaseChange("batch_defaults_bounded_by_context", "0.11.1",
                  "vllm/engine/arg_utils.py: EngineArgs._set_default_args",
                  "without chunked prefill the default budget is max(max_model_len, the GPU's default), not "
                  "max_model_len; a default budget is at most max_num_seqs x max_model_len", DEFAULT),
    ReleaseChange("async_scheduling_by_default", "0.14.0", "vllm/config/vllm.py: VllmConfig.__post_init__",
                  "async_scheduling left unset is on unless something is incompatible; EAGLE/MTP drafts keep it, "
                  "other drafters (n-gram) turn it off", DEFAULT),
    ReleaseChange("gpu_memory_utilization_0_92", "0.20.0", "vllm/config/cache.py: CacheConfig.gpu_memory_utilization",
                  "gpu_memory_utilization defaults to 0.92 (0.9 before)", DEFAULT),
    ReleaseChange("batch_defaults_16k_from_160_gib", "0.28.0", "vllm/engine/arg_utils.py: EngineArgs.get_batch_defaults",
                  "on a GPU of 160 GiB or more the API server defaults to 16,384 tokens and 1,024 sequences", DEFAULT),
    ReleaseChange("ngram_async_under_model_runner_v2", "0.33.0", "vllm/config/vllm.py: VllmConfig.__post_init__",
                  "n-gram drafts keep async scheduling on: only the V1 model runner turns it off, and Model Runner V2 "
                  "is the default for every model it supports (VllmConfig.use_v2_model_runner, since 0.29.0)", DEFAULT),
    # -- flags vLLM stopped taking ------------------------------------------------------------------
    ReleaseChange("--preemption-mode", "0.11.0", "vllm/engine/arg_utils.py: EngineArgs.add_cli_args",
                  "V0's swap preemption is gone with the V0 engine", REMOVED),
    ReleaseChange("--swap-space", "0.18.0", "vllm/engine/arg_utils.py: EngineArgs.add_cli_args; vllm/config/cache.py",
                  "CPU swap space (CacheConfig.swap_space) is gone", REMOVED),
    # -- opt-in flags servescope does not model -----------------------------------------------------
    ReleaseChange("--enable-lora", "0.10.0", "vllm/engine/arg_utils.py: EngineArgs.add_cli_args (LoRAConfig)",
                  "LoRA adapters (and --max-loras, the adapters one step may use)", NOT_MODELLED_FLAG),
    ReleaseChange("--max-loras", "0.10.0", "vllm/config/lora.py: LoRAConfig.max_loras",
                  "the LoRA adapters one step may use", NOT_MODELLED_FLAG),
    ReleaseChange("--watermark", "0.24.0", "vllm/config/scheduler.py: SchedulerConfig.watermark",
                  "a share of the KV blocks kept free when admitting waiting requests", NOT_MODELLED_FLAG),
    ReleaseChange("--prefill-schedule-interval", "0.24.0", "vllm/config/scheduler.py: SchedulerConfig",
                  "prefills scheduled only every N steps", NOT_MODELLED_FLAG),
    ReleaseChange("--max-num-queued-reqs", "0.29.0", "vllm/config/scheduler.py: SchedulerConfig.max_num_queued_reqs",
                  "a bound on waiting requests", NOT_MODELLED_FLAG),
    ReleaseChange("--max-num-active-seqs", "0.31.0", "vllm/config/scheduler.py: SchedulerConfig.max_num_active_seqs",
                  "admission into RUNNING bounded apart from max_num_seqs", NOT_MODELLED_FLAG),
    ReleaseChange("--long-prefill-token-threshold-adaptive", "0.31.0",
                  "vllm/config/scheduler.py: SchedulerConfig.long_prefill_token_threshold_adaptive",
                  "the long-prefill cap floored at a fair share of the budget", NOT_MODELLED_FLAG),
    ReleaseChange("num_speculative_tokens_per_batch_size", "0.24.0",
                  "vllm/config/speculative.py: SpeculativeConfig.num_speculative_tokens_per_batch_size",
                  "dynamic K: the number of draft tokens chosen by batch size (a speculative_config key)",
                  NOT_MODELLED_FLAG),
    # -- what the startup memory profile counts (timing/profile_run.py) ----------------------------
    ReleaseChange("cudagraph_memory_in_kv_budget", "0.20.0",
                  "vllm/envs.py: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (default 1 from 0.20.0); "
                  "vllm/v1/worker/gpu_worker.py: Worker.determine_available_memory",
                  "the profiled CUDA-graph estimate is taken out of the KV cache's memory; before, graphs were "
                  "captured after the KV cache was sized, outside the gpu_memory_utilization budget", MEMORY_PROFILE),
    ReleaseChange("sampler_warmup_model_runner_v2", "0.29.0",
                  "vllm/v1/worker/gpu/model_runner.py: GPUModelRunner._dummy_sampler_run",
                  "Model Runner V2 (the default) profiles one sampling of the model-dtype logits without top-k/top-p "
                  "(about 2 bytes per logit); the V1 runner's warm-up sorted fp32 logits for top_k = vocab - 1 and "
                  "top_p 0.9 (about 38)", MEMORY_PROFILE),
    ReleaseChange("sampler_warmup_params_profiled", "0.33.0",
                  "vllm/v1/worker/gpu/model_runner.py: GPUModelRunner._dummy_sampler_run; vllm/sampling_params.py: "
                  "SamplingParams.for_sampler_warmup",
                  "a second profiled pass with the warm-up's sampling params (top-k, top-p, penalties, logprobs): an "
                  "fp32 copy of the logits and FlashInfer's top-k-masked logits and probabilities (about 14 bytes per "
                  "logit)", MEMORY_PROFILE),
    # -- behaviours no switch models yet ------------------------------------------------------------
    ReleaseChange("cache_salt", "0.10.0", "vllm/v1/core/kv_cache_utils.py: generate_block_hash_extra_keys",
                  "a request's cache_salt (OpenAI API field) enters its first block's hash, so only requests with "
                  "the same salt share a prefix; servescope's workloads carry no salt", NOT_MODELLED),
    ReleaseChange("draft_slots_in_budget", "0.28.0", "vllm/v1/core/sched/scheduler.py: Scheduler.schedule",
                  "draft slots are counted in the token budget (draft_slots): none for n-gram, EAGLE and MTP, "
                  "servescope's drafters; a draft model's one slot is not modelled", NOT_MODELLED),
)
CHANGES_BY_NAME = {change.name: change for change in RELEASE_CHANGES}


@dataclass(frozen=True)
class VllmCompat:
    """The scheduler rules that changed between vLLM 0.10 and 0.33, one named switch each; True is
    the later behaviour. `RELEASE_CHANGES` says which release has each; each can be flipped on its
    own to see what that one change does (`../shared/data/vllm_oracle/README.md` proves the
    0.10.1.1 and 0.33.0 profiles against vLLM)."""

    # R1: stops chunked prefill from admitting work it cannot finish.
    full_prompt_admission: bool = setting(True, "admit only if free blocks cover the whole context")
    # R2: nobody to starve when the request is alone.
    long_prefill_cap_lifted_when_alone: bool = setting(True, "lift the long-prefill cap for a lone request")
    # R3: strict head of line; 0.10 skipped the prompt and tried the requests behind it.
    unchunked_prompt_blocks_queue: bool = setting(True, "without chunking, a too-big prompt stops the scan")
    # R4: 0.10 put skipped requests back reversed.
    skipped_requests_keep_order: bool = setting(True, "skipped requests return in their original order")
    # R5: uncached blocks reused first, so cached blocks live longer; 0.10 appended all to the tail.
    unhashed_blocks_reused_first: bool = setting(True, "freed uncached blocks are reused first")
    # R6, one switch per release that changed priority preemption of a request already scheduled
    # this step: 0.10.1.1 crashed; 0.10.2 stopped the crash; 0.11.1 returned the victim's tokens;
    # 0.28 fixed the scan index; 0.33 lets a self-preempted request's successors still try.
    priority_victim_leaves_step: bool = setting(True, "a scheduled priority victim no longer fails the step's check")
    priority_victim_unscheduled: bool = setting(True, "a scheduled priority victim's tokens return to the budget")
    priority_victim_index_fixed: bool = setting(True, "the running scan steps back past any earlier victim")
    self_preempted_scan_continues: bool = setting(True, "a self-preempted request lets later ones try")
    # R7: the reserved null block is not capacity.
    usage_excludes_null_block: bool = setting(True, "KV usage excludes the null block")
    # R8: a prompt of max_model_len leaves no room for an output token (chunked, 0.10 stalled one short for ever).
    prompt_leaves_room_for_output: bool = setting(True, "a prompt of max_model_len tokens is refused")
    # R9: every decode in the batch has the uniform speculative size ("Pad new decode requests").
    padded_spec_admission: bool = setting(True, "with drafts, a 1-token admission is padded to 1 + K")
    # R10: before it EAGLE's last-block drop was unconditional (eagle_hit_rule.py).
    eagle_block_drop_opt_out: bool = setting(True, "disable_eagle_block_drop is honoured")
    # R11: a hit needs no drop when a block's hash covers the token after it; a KV connector keeps
    # the legacy hashes and the drop.
    lookahead_block_hashes: bool = setting(True, "EAGLE hashes blocks with the next token instead of dropping")
    # R12: vLLM counts re-admissions apart (preempted_queries/hits).
    prefix_stats_exclude_preempted: bool = setting(True, "re-admissions of preempted requests leave the hit rate")
    # R13: before, every lookup counted, also those whose allocation then failed.
    prefix_stats_per_admission: bool = setting(True, "the hit rate counts admissions, not lookups")

    @classmethod
    def for_version(cls, version: str) -> "VllmCompat":
        return VllmRelease.for_version(version).compat


@dataclass(frozen=True)
class VllmRelease:
    """One vLLM release: the changes of `RELEASE_CHANGES` it has."""

    version: str

    @classmethod
    def for_version(cls, version: object) -> "VllmRelease":
        if version not in VLLM_RELEASES:
            raise ConfigError("vllm_version", f"unknown vLLM version {str(version)[:40]!r}; expected one of: "
                                              f"{', '.join(VLLM_RELEASES)}")
        return cls(version)

    def has(self, name: str) -> bool:
        return release_key(self.version) >= release_key(CHANGES_BY_NAME[name].release)

    @property
    def compat(self) -> VllmCompat:
        return VllmCompat(**{f.name: self.has(f.name) for f in fields(VllmCompat)})

    @property
    def gpu_memory_utilization(self) -> float:
        return 0.92 if self.has("gpu_memory_utilization_0_92") else 0.9

    def switch_of_flag(self, flag: str) -> tuple[str, bool] | None:
        """The `VllmCompat` switch a `vllm serve` flag sets and to what (`--no-X` sets it off), or None."""
        negated = flag.startswith("--no-")
        name = "--" + flag[5:] if negated else flag
        for change in RELEASE_CHANGES:
            if change.flag and change.flag == name:
                if not self.has(change.name):
                    raise ConfigError(flag, f"unrecognized arguments: {flag} (vLLM {self.version} has no such flag; "
                                            f"it came in {change.release})")
                return change.name, not negated
        return None

    def flag_refusal(self, flag: str) -> str | None:
        """Why this release's `vllm serve` refuses a flag servescope knows of, or None: a removed flag in
        argparse's words; an opt-in flag servescope does not model, by name; one the release lacks, as unknown."""
        change = CHANGES_BY_NAME.get(flag)
        if change is None or change.kind not in (REMOVED, NOT_MODELLED_FLAG):
            return None
        if change.kind == REMOVED:
            if not self.has(flag):
                return None
            return f"unrecognized arguments: {flag} (vLLM {self.version}: {change.what}, since {change.release})"
        if not self.has(flag):
            return f"unrecognized arguments: {flag} (vLLM {self.version} has no such flag; it came in {change.release})"
        return f"not modelled by servescope: {change.what} (vLLM {change.release}, {change.where})"


VLLM_PROFILES = {version: VllmRelease(version).compat for version in VLLM_RELEASES}
