"""vLLM V0's default scheduler: prefill-first continuous batching.

If any waiting prompt fits, the step is all prefills (whole prompts); decodes run only in steps
with no prefill. Requests still join and leave between steps (continuous batching), but a long
prompt stalls every running decode for a whole step: the latency spike chunked prefill removes.
"""

from __future__ import annotations

from ..decision_trace import RULE_FCFS
from ..scheduler import Scheduler, SchedulerOutput

# V0 kept 1% of the blocks free when admitting, so running requests had room to grow.
WATERMARK = 0.01


def watermark_blocks(num_gpu_blocks: int) -> int:
    return int(WATERMARK * num_gpu_blocks)


class VllmV0Scheduler(Scheduler):
    name = "vllm-v0"

    def __init__(self, config):
        super().__init__(config)
        self.watermark_blocks = watermark_blocks(config.num_gpu_blocks)

    def schedule(self, now: float = 0.0) -> SchedulerOutput:
        output = SchedulerOutput()
        if not self.swapped:
            self._schedule_prefills(output)
        if not output.num_scheduled_tokens:
            self._schedule_decodes(output)
            if not output.preempted_reqs:
                self._schedule_swapped(output)
        return self._finish_schedule(output, now)

    def _schedule_prefills(self, output: SchedulerOutput) -> None:
        config, kv = self.config, self.kv_cache_manager
        token_budget = config.max_num_batched_tokens
        while self.waiting and len(self.running) < config.max_num_seqs:
            request = self.waiting.peek_request()
            computed_blocks, num_cached_tokens = kv.get_computed_blocks(request)
            num_new_tokens = request.num_tokens - num_cached_tokens
            if num_new_tokens > token_budget:
                break
            # Admit only what fits whole, above the watermark.
            needed = kv.num_blocks_to_allocate(request.request_id, request.num_tokens, computed_blocks)
            if kv.num_free_blocks - self.watermark_blocks < needed:
                break
            kv.allocate_slots(request, num_new_tokens, num_cached_tokens, computed_blocks)
            self.waiting.pop_request()
            self.record_prefix_lookup(request, num_cached_tokens)
            self._admit(request, num_cached_tokens, num_cached_tokens, output)
            output.num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens

    def _schedule_decodes(self, output: SchedulerOutput) -> None:
        """One token for every running request, preempting the newest when blocks run out."""
        kv, running = self.kv_cache_manager, self.running
        token_budget = self.config.max_num_batched_tokens
        index = 0
        while index < len(running) and token_budget > 0:
            request = running[index]
            while kv.allocate_slots(request, 1) is None:
                victim = running.pop()
                if self.decision_trace is not None:
                    self.decision_trace.allocation_failed(request, 1, victim, RULE_FCFS)
                self._preempt(victim, output)
                if victim is request:
                    break
            else:
                output.num_scheduled_tokens[request.request_id] = 1
                token_budget -= 1
                index += 1
                continue
            break

    def _schedule_swapped(self, output: SchedulerOutput) -> None:
        while self.swapped and len(self.running) < self.config.max_num_seqs:
            request = self.swapped[0]
            if not self._try_swap_in(request, 1, output):
                break
            self.swapped.popleft()
            output.num_scheduled_tokens[request.request_id] = 1
