"""What every scheduling policy shares: the queues, preemption, and the step's postprocessing.

A policy subclasses `Scheduler` and writes only `schedule()`: which requests run this step and
with how many tokens. Everything after that (advancing counters, sampling, finishing, freeing)
is the same for all policies, as it is in vLLM where the model runner does not care who chose.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field

from .config import EngineConfig
from .contiguous import ContiguousKVCacheManager
from .decision_trace import DecisionTrace
from .eagle_hit_rule import eagle_hit_rule
from .finish_requests import ExternalFinish
from .hybrid_kv_cache_manager import HybridKVCacheManager
from .kv_cache import KVCache
from .kv_cache_manager import KVCacheManager, SwapSpace
from .prefix_cache_stats import PrefixCacheStats
from .request import Request, RequestStatus
from .request_queue import create_request_queue
from .spec_decode import AcceptanceModel, SpecDecodeStats


class SchedulerError(RuntimeError):
    """The real engine would fail here too (for example vLLM 0.10.1.1's priority-preemption assertion)."""


@dataclass
class SchedulerOutput:
    """Everything one `schedule()` call decided, in the order it decided it (vLLM's `SchedulerOutput`)."""

    # request id -> tokens this step, running requests first, then admissions.
    num_scheduled_tokens: dict[str, int] = field(default_factory=dict)
    # request id -> tokens already in its KV cache before this step (its attention context).
    num_computed_before: dict[str, int] = field(default_factory=dict)
    scheduled_new_reqs: list[str] = field(default_factory=list)
    scheduled_resumed_reqs: list[str] = field(default_factory=list)
    # request id -> prefix-cache hit tokens, for every admission or resumption.
    num_cached_tokens: dict[str, int] = field(default_factory=dict)
    preempted_reqs: list[str] = field(default_factory=list)
    # (request id, blocks) moved to / from CPU swap space this step.
    swapped_out: list[tuple[str, int]] = field(default_factory=list)
    swapped_in: list[tuple[str, int]] = field(default_factory=list)
    num_free_blocks_after_schedule: int = 0
    # Requests whose scheduled chunk reaches the end of their tokens: the model samples for them.
    sampling_reqs: list[str] = field(default_factory=list)
    # request id -> draft tokens verified in this step (speculative decoding).
    scheduled_spec_decode_tokens: dict[str, int] = field(default_factory=dict)
    # False for a multi-step window's later passes (multi_step.py): no scheduler call, so no host work.
    is_first_multi_step: bool = True

    @property
    def total_num_scheduled_tokens(self) -> int:
        return sum(self.num_scheduled_tokens.values())


@dataclass
class UpdateResult:
    """What the model's step produced: who got a token and who finished."""

    sampled: list[str]
    finished: list[Request]
    # request id -> drafts accepted, for each request that had drafts verified.
    num_accepted: dict[str, int] = field(default_factory=dict)


def make_kv_cache_manager(config: EngineConfig) -> KVCache:
    if config.kv_allocator == "contiguous":
        return ContiguousKVCacheManager(config.num_gpu_blocks, config.block_size, config.max_model_len)
    if config.is_hybrid:
        return HybridKVCacheManager(
            config.kv_cache_group_specs, config.num_gpu_blocks, config.block_size, config.max_model_len,
            config.enable_prefix_caching, config.max_in_flight_tokens,
            unhashed_blocks_reused_first=config.compat.unhashed_blocks_reused_first,
            usage_excludes_null_block=config.compat.usage_excludes_null_block,
        )
    return KVCacheManager(
        config.num_gpu_blocks,
        config.block_size,
        config.max_model_len,
        config.enable_prefix_caching,
        unhashed_blocks_reused_first=config.compat.unhashed_blocks_reused_first,
        usage_excludes_null_block=config.compat.usage_excludes_null_block,
        eagle_rule=eagle_hit_rule(config),
    )


class Scheduler(ExternalFinish):
    """The queues and the KV cache, and the parts of a step every policy shares (and, from
    `ExternalFinish`, vLLM's `finish_requests` for requests aborted between steps)."""

    name = "base"

    def __init__(self, config: EngineConfig):
        self.config = config
        self.kv_cache_manager: KVCache = make_kv_cache_manager(config)
        self.requests: dict[str, Request] = {}
        self.waiting = create_request_queue(config.scheduling_order)
        self.running: list[Request] = []
        # Requests preempted by swapping, oldest first; they resume before new admissions.
        self.swapped: deque[Request] = deque()
        self.swap_space = SwapSpace(config.num_cpu_blocks)
        self.num_finished = 0
        # Requests finished since the last schedule(): vLLM's engine loop schedules once more to
        # report them (`has_requests`), which the async batch queue makes visible.
        self.has_finished_requests = False
        spec = config.speculative_config
        self.acceptance = AcceptanceModel(spec) if spec else None
        self.spec_stats = SpecDecodeStats()
        self.prefix_cache_stats = PrefixCacheStats(config.compat.prefix_stats_exclude_preempted)
        # vLLM's `Request.is_prefill_chunk` as of the last schedule, kept only where padded admission
        # reads it (drafts on, 0.25+): the requests whose last chunk stopped short of their end.
        self.prefill_chunk_reqs: set[str] | None = set() if spec and config.compat.padded_spec_admission else None
        # The reasons behind each step, for whoever asks "why?" (None: not recorded, no cost).
        self.decision_trace: DecisionTrace | None = None
        # Whether each request keeps the time of every output token (`token_times`: TTFT and
        # inter-token latency). The replay reports no latencies and turns it off: an append per token.
        self.keep_token_times = True

    def enable_decision_trace(self, trace: DecisionTrace | None = None) -> DecisionTrace:
        """Record the reasons behind every decision from now on (see `decision_trace.py`); where
        blocks came from and went to, the trace reads from the KV events of each step."""
        trace = trace or DecisionTrace()
        self.decision_trace = trace
        self.kv_cache_manager.enable_events()
        return trace

    # -- intake -----------------------------------------------------------------------------
    def add_request(self, request: Request) -> None:
        if request.request_id in self.requests:
            raise ValueError(f"duplicate request id {request.request_id!r}")
        if request.num_prompt_tokens > self.config.max_model_len:
            raise ValueError(
                f"request {request.request_id!r}: prompt of {request.num_prompt_tokens} tokens exceeds "
                f"max_model_len={self.config.max_model_len}"
            )
        self.requests[request.request_id] = request
        self.waiting.add_request(request)

    def schedule(self, now: float = 0.0) -> SchedulerOutput:
        """Decide this step's batch; `now` stamps first-scheduled times."""
        raise NotImplementedError

    # -- shared mechanics -------------------------------------------------------------------
    def _preempt(self, request: Request, output: SchedulerOutput) -> None:
        """Take a running request's KV away: swap it to CPU if configured and room allows,
        else free it and recompute later (vLLM V1 always recomputes)."""
        kv = self.kv_cache_manager
        num_blocks = len(kv.get_block_ids(request.request_id))
        request.num_preemptions += 1
        output.preempted_reqs.append(request.request_id)
        if self.config.preemption_mode == "swap" and num_blocks and self.swap_space.can_swap_out(num_blocks):
            kv.free(request)
            self.swap_space.swap_out(request.request_id, num_blocks)
            request.status = RequestStatus.SWAPPED
            self.swapped.append(request)
            output.swapped_out.append((request.request_id, num_blocks))
            return
        kv.free(request)
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens = 0
        # Async scheduling: what is still in flight belongs to the discarded computation.
        request.num_stale_output_tokens = request.num_in_flight_tokens
        request.num_output_placeholders = 0
        request.num_spec_tokens = 0
        # Back to the head of the waiting queue: it was admitted before everything waiting.
        self.waiting.prepend_request(request)

    def _try_swap_in(self, request: Request, num_new_tokens: int, output: SchedulerOutput) -> bool:
        """Bring a swapped request's KV back from CPU and schedule its next tokens, if blocks allow."""
        if self.kv_cache_manager.allocate_slots(request, num_new_tokens) is None:
            return False
        num_blocks = self.swap_space.swap_in(request.request_id)
        output.swapped_in.append((request.request_id, num_blocks))
        request.status = RequestStatus.RUNNING
        self.running.append(request)
        output.scheduled_resumed_reqs.append(request.request_id)
        return True

    def record_prefix_lookup(self, request: Request, num_hits: int) -> None:
        """One prefix-cache lookup into the hit rate (where vLLM counts it: see prefix_cache_stats.py)."""
        if self.kv_cache_manager.enable_caching:
            self.prefix_cache_stats.record(request.num_tokens, num_hits, request.num_preemptions > 0)

    def _admit(self, request: Request, num_computed_tokens: int, num_cached_tokens: int, output: SchedulerOutput) -> None:
        """Move the head of the waiting queue into the running batch."""
        rid = request.request_id
        if request.status == RequestStatus.WAITING:
            output.scheduled_new_reqs.append(rid)
            request.num_cached_tokens = num_cached_tokens
        else:
            output.scheduled_resumed_reqs.append(rid)
        output.num_cached_tokens[rid] = num_cached_tokens
        request.status = RequestStatus.RUNNING
        request.num_computed_tokens = num_computed_tokens
        self.running.append(request)

    def _finish_schedule(self, output: SchedulerOutput, now: float) -> SchedulerOutput:
        """Advance each scheduled request's computed tokens before the model runs, as vLLM does,
        so the next schedule() already sees this step's chunk as done."""
        if self.config.async_scheduling:
            self._advance_with_placeholders(output)
        else:
            requests = self.requests
            num_computed_before, sampling_reqs = output.num_computed_before, output.sampling_reqs
            for rid, num_tokens in output.num_scheduled_tokens.items():
                request = requests[rid]
                num_computed_before[rid] = num_computed = request.num_computed_tokens
                request.num_computed_tokens = num_computed = num_computed + num_tokens
                # A chunk that reaches the end of the request's tokens: the model samples for it.
                if num_computed >= request.num_prompt_tokens + request.num_output_tokens:
                    sampling_reqs.append(rid)
        if self.prefill_chunk_reqs is not None:
            sampling = set(output.sampling_reqs)
            for rid in output.num_scheduled_tokens:
                if rid in sampling:
                    self.prefill_chunk_reqs.discard(rid)
                else:
                    self.prefill_chunk_reqs.add(rid)
        # Only an admission from the waiting queue is a first schedule: a resumed request ran before.
        requests = self.requests
        for rid in output.scheduled_new_reqs:
            requests[rid].first_scheduled_time = now
        output.num_free_blocks_after_schedule = self.kv_cache_manager.num_free_blocks
        self.has_finished_requests = False
        return output

    def _advance_with_placeholders(self, output: SchedulerOutput) -> None:
        """`_finish_schedule` under a batch queue: the tokens scheduled are in flight until their
        update, and a sampled token counts as known (a placeholder) for the next schedule()."""
        requests = self.requests
        num_computed_before, sampling_reqs = output.num_computed_before, output.sampling_reqs
        spec = self.config.speculative_config
        for rid, num_tokens in output.num_scheduled_tokens.items():
            request = requests[rid]
            num_computed_before[rid] = num_computed = request.num_computed_tokens
            request.num_computed_tokens = num_computed = num_computed + num_tokens
            request.num_in_flight_tokens += num_tokens
            if num_computed >= request.num_prompt_tokens + request.num_output_tokens + request.num_output_placeholders:
                sampling_reqs.append(rid)
                # The next schedule() may already count on this token and the drafts being
                # verified (vLLM's AsyncScheduler); the next drafts are placeholders too.
                request.num_output_placeholders += 1 + output.scheduled_spec_decode_tokens.get(rid, 0)
                if spec:
                    request.num_spec_tokens = spec.num_speculative_tokens

    def update_from_output(self, output: SchedulerOutput, now: float) -> UpdateResult:
        """After the model step: each request the model sampled for gets its token; one that
        reaches `max_tokens` or `max_model_len` finishes and frees its blocks.

        Under async scheduling the batch may be a step old: its token replaces a placeholder, and
        a request preempted since then still receives its (stale) token, which may finish it.
        """
        if self.config.async_scheduling or self.acceptance is not None:
            result = self._update_placeholders_and_drafts(output, now)
        else:
            result = self._update_one_token_each(output, now)
        if result.finished:
            self._finish_requests(result.finished, now)
        if self.acceptance and not self.config.async_scheduling:
            # The drafter proposes the next drafts for every request that just sampled.
            for rid in result.sampled:
                if rid in self.requests:
                    self.requests[rid].num_spec_tokens = self.config.speculative_config.num_speculative_tokens
        return result

    def _update_one_token_each(self, output: SchedulerOutput, now: float) -> UpdateResult:
        """The common case, no batch queue and no drafts: the batch is this step's own, so every
        request sampled for is still here, and gets exactly one token."""
        requests = self.requests
        max_model_len = self.config.max_model_len
        keep_token_times = self.keep_token_times
        stopped: list[Request] = []
        # Prefill chunks that have not reached the end of the prompt sample nothing.
        for rid in output.sampling_reqs:
            request = requests[rid]
            request.num_output_tokens = num_output_tokens = request.num_output_tokens + 1
            if keep_token_times:
                request.token_times.append(now)
            # vLLM's finish reason "length"; the simulated model never samples EOS.
            if num_output_tokens >= request.max_tokens or request.num_prompt_tokens + num_output_tokens >= max_model_len:
                stopped.append(request)
        return UpdateResult(list(output.sampling_reqs), stopped)

    def _update_placeholders_and_drafts(self, output: SchedulerOutput, now: float) -> UpdateResult:
        """Async scheduling or speculative decoding: tokens replace placeholders, drafts are verified
        and may add several tokens, and a stale batch's tokens leave the reset counters alone."""
        sampled: list[str] = []
        stopped: list[Request] = []
        max_model_len = self.config.max_model_len
        requests = self.requests
        kv = self.kv_cache_manager
        stale = self._settle_in_flight(output) if self.config.async_scheduling else ()
        drafts = output.scheduled_spec_decode_tokens
        # Blocks become cacheable here only once placeholders or drafts resolve into known tokens.
        cache_known_blocks = kv.enable_caching
        num_accepted: dict[str, int] = {}
        for rid in output.sampling_reqs:
            request = requests.get(rid)
            if request is None:
                continue  # finished by an earlier batch's update
            is_stale = rid in stale
            had_placeholders = request.num_output_placeholders > 0
            sampled.append(rid)
            if rid in drafts:
                num_new_tokens = 1 + self._verify_drafts(output, request, is_stale, num_accepted)
                is_stopped = self._append_tokens(request, num_new_tokens, now, is_stale)
            else:
                num_new_tokens = 1
                request.num_output_tokens += 1
                if self.keep_token_times:
                    request.token_times.append(now)
                is_stopped = (request.num_output_tokens >= request.max_tokens
                              or request.num_prompt_tokens + request.num_output_tokens >= max_model_len)
            if had_placeholders and not is_stale:
                request.num_output_placeholders -= num_new_tokens
            if cache_known_blocks and not is_stale and request.status == RequestStatus.RUNNING \
                    and (had_placeholders or self.acceptance):
                # Full blocks of tokens now known can enter the prefix cache.
                kv.cache_blocks(request, request.num_computed_tokens - request.num_in_flight_tokens)
            if is_stopped:
                stopped.append(request)
        return UpdateResult(sampled, stopped, num_accepted)

    def _finish_requests(self, finished: list[Request], now: float) -> None:
        """Requests that reached their length leave: their blocks are freed and the scheduler
        forgets them (like vLLM's; whoever needs them keeps them)."""
        kv, requests, running = self.kv_cache_manager, self.requests, self.running
        for request in finished:
            if request.status == RequestStatus.RUNNING:
                running.remove(request)
            else:
                self.waiting.remove_request(request)
            request.status = RequestStatus.FINISHED_LENGTH_CAPPED
            request.finish_time = now
        for request in finished:
            kv.free(request)
            del requests[request.request_id]
        self.num_finished += len(finished)
        self.has_finished_requests = True

    def _settle_in_flight(self, output: SchedulerOutput) -> set[str]:
        """Async scheduling: the batch's tokens are no longer in flight. Returns the requests whose
        tokens belong to a computation discarded by a preemption since (stale: they must not touch
        the reset counters)."""
        stale = set()
        for rid, num_tokens in output.num_scheduled_tokens.items():
            request = self.requests.get(rid)
            if request is None:
                continue
            request.num_in_flight_tokens -= num_tokens
            if request.num_stale_output_tokens > 0:
                stale.add(rid)
                request.num_stale_output_tokens -= num_tokens
        return stale

    def _append_tokens(self, request: Request, num_new_tokens: int, now: float, stale: bool) -> bool:
        """The sampled token and the accepted drafts join the output, up to `max_tokens` or
        `max_model_len` (the sampled token at least); reaching either finishes the request (vLLM's
        finish reason "length"; the simulated model never samples EOS). Tokens past it are
        dropped, and were never computed. Returns whether it finished."""
        room = min(request.max_tokens - request.num_output_tokens, self.config.max_model_len - request.num_tokens)
        stopped = room <= num_new_tokens
        num_appended = max(room, 1) if stopped else num_new_tokens
        request.num_output_tokens += num_appended
        if self.keep_token_times:
            request.token_times.extend(array("d", [now]) * num_appended)
        if stopped and not stale:
            request.num_computed_tokens -= num_new_tokens - num_appended
        return stopped

    def _verify_drafts(self, output: SchedulerOutput, request: Request, stale: bool, num_accepted: dict) -> int:
        """The target model checks the request's drafts: rejected ones are rolled back (they were
        counted as computed; their KV slots stay allocated and are overwritten). Returns how many
        were accepted."""
        num_drafts = output.scheduled_spec_decode_tokens.get(request.request_id, 0)
        if not num_drafts:
            return 0
        accepted = self.acceptance.num_accepted(request.request_id, num_drafts)
        num_accepted[request.request_id] = accepted
        if not stale:
            num_rejected = num_drafts - accepted
            if request.num_computed_tokens > 0:
                request.num_computed_tokens -= num_rejected
            if request.num_output_placeholders > 0:
                request.num_output_placeholders -= num_rejected
        self.spec_stats.observe(num_drafts, accepted)
        return accepted

    # -- read-only gauges -------------------------------------------------------------------
    @property
    def num_unfinished(self) -> int:
        return len(self.running) + len(self.waiting) + len(self.swapped)

    def has_unfinished_requests(self) -> bool:
        return self.num_unfinished > 0
