"""vLLM V1's scheduler: running requests first, then waiting ones, under one token budget.

Reproduces `vllm/v1/core/sched/scheduler.py` (0.33.0; earlier releases through `VllmCompat`) step for
step, oddities included: head-of-line blocking, preempting the newest request, no admissions
in a step that preempted.
"""

from __future__ import annotations

from .. import decision_trace as why
from ..request import Request, RequestStatus
from ..scheduler import Scheduler, SchedulerError, SchedulerOutput


class VllmV1Scheduler(Scheduler):
    name = "vllm-v1"

    def schedule(self, now: float = 0.0) -> SchedulerOutput:
        config, compat, kv = self.config, self.config.compat, self.kv_cache_manager
        trace = self.decision_trace
        by_priority = config.scheduling_order == "priority"
        output = SchedulerOutput()
        num_scheduled = output.num_scheduled_tokens
        token_budget = config.max_num_batched_tokens

        # The long-prefill cap exists so one long prompt cannot starve the others of budget;
        # with nobody else to starve, 0.33 lets it use the whole budget.
        long_prefill_threshold = config.long_prefill_token_threshold
        num_eligible = len(self.running) + len(self.waiting) + len(self.swapped)
        if compat.long_prefill_cap_lifted_when_alone and num_eligible <= 1:
            long_prefill_threshold = 0
        if trace is not None:
            trace.set_long_prefill_threshold(long_prefill_threshold)

        # 1. RUNNING requests, in list order: decodes and unfinished prefill chunks alike.
        # NOTE: running requests come first so a step never stalls the decodes already in
        # flight to make room for new prompts (the stall that chunked prefill removes).
        running = self.running
        req_index = 0
        lookahead = config.num_lookahead_tokens
        max_num_new_tokens = config.max_model_len - 1  # the last position never needs computing
        room = kv.req_to_room
        # Padded admission (0.25) looks at whether a running request continued its prefill this step.
        prefill_chunks = self.prefill_chunk_reqs
        prefill_scheduled = False
        while req_index < len(running) and token_budget > 0:
            request = running[req_index]
            if request.num_output_placeholders > 0 and self._last_token_in_flight(request):
                req_index += 1
                continue
            # Under async scheduling, placeholders count as known tokens: a decode is scheduled
            # before the previous step's token is back.
            # (num_tokens spelled out, not the property: this runs for every running request of every step.)
            num_new_tokens = asked = (request.num_prompt_tokens + request.num_output_tokens + request.num_spec_tokens
                                      + request.num_output_placeholders - request.num_computed_tokens)
            if 0 < long_prefill_threshold < num_new_tokens:
                num_new_tokens = long_prefill_threshold
            # (Comparisons, not min(): this line runs for every running request of every step.)
            if num_new_tokens > token_budget:
                num_new_tokens = token_budget
            if num_new_tokens > max_num_new_tokens - request.num_computed_tokens:
                num_new_tokens = max_num_new_tokens - request.num_computed_tokens
            if trace is not None:
                trace.running_examined(request, asked, num_new_tokens, token_budget, long_prefill_threshold)
            if num_new_tokens <= 0:
                req_index += 1
                continue

            # vLLM calls allocate_slots for every running request. Within the manager's room for this
            # request (most decode steps) it would return [] and change nothing, so this comparison
            # makes the same decisions without the call (a tenth of the replay's time).
            if request.num_computed_tokens + num_new_tokens + lookahead > room.get(request.request_id, -1):
                while (new_blocks := kv.allocate_slots(request, num_new_tokens, num_lookahead_tokens=lookahead)) is None:
                    # Out of blocks: preempt the lowest-priority running request and retry. Under
                    # FCFS that is the newest (last) one, which may be this request itself.
                    if by_priority:
                        victim = max(running, key=Request.sort_key)
                        victim_index = running.index(victim)
                        del running[victim_index]
                        unscheduled = victim.request_id in num_scheduled and compat.priority_victim_unscheduled
                        if unscheduled:
                            if trace is not None:
                                trace.running_unscheduled(victim.request_id, num_scheduled[victim.request_id])
                            token_budget += num_scheduled.pop(victim.request_id)
                            output.scheduled_spec_decode_tokens.pop(victim.request_id, None)
                        # 0.11-0.27 stepped back only past a victim it unscheduled, so an earlier victim
                        # left unscheduled (nothing to compute) made the scan skip the next request.
                        if victim_index < req_index and (unscheduled or compat.priority_victim_index_fixed):
                            req_index -= 1
                    else:
                        victim = running.pop()
                    if trace is not None:
                        trace.allocation_failed(request, num_new_tokens, victim,
                                                why.RULE_PRIORITY if by_priority else why.RULE_FCFS)
                    self._preempt(victim, output)
                    if victim is request:
                        break
                if new_blocks is None:
                    if by_priority and compat.self_preempted_scan_continues and request.status != RequestStatus.RUNNING:
                        # It was the lowest-priority request and preempted itself; the ones after
                        # it rank higher and may fit in the blocks it just freed.
                        continue
                    break
            num_scheduled[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens
            req_index += 1
            if prefill_chunks is not None and request.request_id in prefill_chunks:
                prefill_scheduled = True
            if request.num_spec_tokens:
                self._schedule_drafts(request, num_new_tokens, output)
            if trace is not None:
                trace.running_scheduled(request.request_id)
        if trace is not None and req_index < len(running):
            trace.running_stopped(why.WAIT_BUDGET if token_budget <= 0 else why.RUN_STOP_PREEMPTED_ITSELF,
                                  running[req_index].request_id, len(running) - req_index)

        # 2. Requests preempted by swapping come back before anything new is admitted.
        if not output.preempted_reqs:
            while self.swapped and token_budget > 0 and len(running) < config.max_num_seqs:
                request = self.swapped[0]
                num_new_tokens = min(request.num_tokens - request.num_computed_tokens, token_budget)
                if not self._try_swap_in(request, num_new_tokens, output):
                    break
                self.swapped.popleft()
                num_scheduled[request.request_id] = num_new_tokens
                token_budget -= num_new_tokens

        # 3. WAITING requests from the head, only if nobody was preempted: a step that had to
        # take blocks away has none to give to newcomers.
        if not output.preempted_reqs and not self.swapped:
            pad_new_decodes = prefill_chunks is not None and not prefill_scheduled
            token_budget = self._schedule_waiting(output, token_budget, long_prefill_threshold, pad_new_decodes)
        elif trace is not None and self.waiting:
            reason = why.WAIT_PREEMPTED_THIS_STEP if output.preempted_reqs else why.WAIT_SWAPPED_FIRST
            trace.waiting_stopped(reason, None, len(self.waiting), len(running))
        if not compat.priority_victim_leaves_step:
            self._check_victims_left_scheduled(output)
        return self._finish_schedule(output, now)

    @staticmethod
    def _schedule_drafts(request: Request, num_new_tokens: int, output: SchedulerOutput) -> None:
        """Speculative decoding, a request with drafts: the tokens scheduled past the known ones are
        drafts to verify (fewer than proposed when the budget or max_model_len cut the chunk)."""
        num_drafts = num_new_tokens + request.num_computed_tokens - request.num_tokens - request.num_output_placeholders
        if num_drafts > 0:
            output.scheduled_spec_decode_tokens[request.request_id] = min(num_drafts, request.num_spec_tokens)
        request.num_spec_tokens = 0  # the drafter proposes afresh after this step

    def _padding_drafts(self, num_computed_tokens: int) -> int:
        """vLLM 0.25's "Pad new decode requests": a request admitted with one token left is scheduled
        for 1 + K, K padding drafts, so the batch keeps the uniform decode size its CUDA graph was
        captured for; only if the context has room for them and the token sampled after."""
        k = self.config.speculative_config.num_speculative_tokens
        return k if num_computed_tokens + 1 + k + 1 <= self.config.max_model_len else 0

    @staticmethod
    def _last_token_in_flight(request: Request) -> bool:
        """Async scheduling, a request with placeholders: the step in flight already produces its last
        token (even if every draft were rejected), so scheduling it again would be wasted."""
        return (request.num_computed_tokens + 2 - request.num_output_placeholders
                >= request.num_prompt_tokens + request.max_tokens)

    def _check_victims_left_scheduled(self, output: SchedulerOutput) -> None:
        """vLLM 0.10.1.1 leaves a priority victim's tokens scheduled (it later resumes with a
        phantom computed token) and crashes only if its end-of-step check fails: no more
        requests scheduled than running."""
        if len(output.num_scheduled_tokens) > len(self.running):
            victims = [rid for rid in output.preempted_reqs if rid in output.num_scheduled_tokens]
            raise SchedulerError(
                f"vLLM 0.10.1.1 fails its end-of-step assertion here: priority preemption left {victims} "
                f"scheduled, so {len(output.num_scheduled_tokens)} requests are scheduled but only "
                f"{len(self.running)} are running (compat.priority_victim_leaves_step stops it, as vLLM 0.10.2 did)"
            )

    def _schedule_waiting(self, output: SchedulerOutput, token_budget: int, long_prefill_threshold: int,
                          pad_new_decodes: bool = False) -> int:
        config, compat, kv = self.config, self.config.compat, self.kv_cache_manager
        trace = self.decision_trace
        waiting = self.waiting
        skipped: list[Request] = []
        stop_reason = why.WAIT_BUDGET
        # The running requests this step scheduled (padding a lone cached prompt needs company or a hit).
        num_running_scheduled = len(output.num_scheduled_tokens)
        while waiting and token_budget > 0:
            if len(self.running) >= config.max_num_seqs:
                stop_reason = why.WAIT_MAX_NUM_SEQS
                break
            request = waiting.peek_request()
            looked_up = request.num_computed_tokens == 0
            if looked_up:
                computed_blocks, num_computed_tokens = kv.get_computed_blocks(request)
                if not compat.prefix_stats_per_admission:
                    self.record_prefix_lookup(request, num_computed_tokens)  # before 0.27: every lookup counts
            else:
                # Only vLLM 0.10's priority victim left scheduled comes back with computed tokens.
                computed_blocks, num_computed_tokens = [], request.num_computed_tokens
            num_cached_tokens = len(computed_blocks) * config.block_size

            num_new_tokens = request.num_tokens - num_computed_tokens
            num_padding_drafts = 0
            if num_new_tokens == 1 and pad_new_decodes and (num_running_scheduled or num_computed_tokens > 0):
                num_padding_drafts = self._padding_drafts(num_computed_tokens)
                if num_padding_drafts > token_budget - 1:
                    # vLLM prefers not scheduling it to scheduling it unpadded.
                    if trace is not None:
                        trace.waiting_examined(request, why.WAIT_BUDGET, 1 + num_padding_drafts, token_budget,
                                               long_prefill_threshold, computed_blocks, len(self.running),
                                               num_padding_drafts)
                    break
                num_new_tokens += num_padding_drafts
            if 0 < long_prefill_threshold < num_new_tokens:
                num_new_tokens = long_prefill_threshold
            if not config.enable_chunked_prefill and num_new_tokens > token_budget:
                # Without chunking a prompt runs whole or not at all.
                if trace is not None:
                    trace.waiting_examined(request, why.WAIT_UNCHUNKED_TOO_BIG, num_new_tokens, token_budget,
                                           long_prefill_threshold, computed_blocks, len(self.running))
                if compat.unchunked_prompt_blocks_queue:
                    stop_reason = why.WAIT_UNCHUNKED_TOO_BIG
                    break
                skipped.append(waiting.pop_request())
                continue
            num_new_tokens = min(num_new_tokens, token_budget)

            new_blocks = kv.allocate_slots(
                request,
                num_new_tokens,
                num_cached_tokens,
                computed_blocks,
                full_sequence_must_fit=compat.full_prompt_admission,
                num_lookahead_tokens=config.num_lookahead_tokens,
            )
            if new_blocks is None:
                # Head-of-line blocking: vLLM does not look past a request that does not fit.
                if trace is not None:
                    stop_reason = self._why_no_blocks(request, num_new_tokens, num_cached_tokens, computed_blocks)
                    trace.waiting_examined(request, stop_reason, num_new_tokens, token_budget,
                                           long_prefill_threshold, computed_blocks, len(self.running), num_padding_drafts)
                break
            if trace is not None:
                trace.waiting_examined(request, why.WAIT_ADMITTED, num_new_tokens, token_budget,
                                       long_prefill_threshold, computed_blocks, len(self.running), num_padding_drafts)
            waiting.pop_request()
            if looked_up and compat.prefix_stats_per_admission:
                self.record_prefix_lookup(request, num_computed_tokens)
            # vLLM reports the tokens computed at admission as cached, prefix hit or not.
            self._admit(request, num_computed_tokens, num_computed_tokens, output)
            output.num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens
            if num_padding_drafts:
                output.scheduled_spec_decode_tokens[request.request_id] = num_padding_drafts

        if trace is not None and waiting:
            blocker = waiting.peek_request().request_id if stop_reason != why.WAIT_BUDGET else None
            trace.waiting_stopped(stop_reason, blocker, len(waiting), len(self.running))
        if skipped:
            waiting.prepend_requests(skipped if compat.skipped_requests_keep_order else reversed(skipped))
        return token_budget

    def _why_no_blocks(self, request: Request, num_new_tokens: int, num_cached_tokens: int, computed_blocks) -> str:
        """Whether this step's chunk itself did not fit, or only the whole context (0.33's gate)."""
        kv = self.kv_cache_manager
        num_tokens = min(request.num_computed_tokens + num_cached_tokens + num_new_tokens + self.config.num_lookahead_tokens,
                         kv.max_model_len)
        if kv.num_blocks_to_allocate(request.request_id, num_tokens, computed_blocks) > kv.num_free_blocks:
            return why.WAIT_BLOCKS
        return why.WAIT_BLOCKS_FULL_CONTEXT
