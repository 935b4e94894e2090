"""vLLM V0's default scheduler: prefill-first continuous batching.

If any waiting prompt fits, the step is all prefills (whole prompts); decodes run only in steps
with no prefill. Requests still join and leave between steps (continuous batching), but a long
prompt stalls every running decode for a whole step: the latency spike chunked prefill removes.
With `num_scheduler_steps` > 1 a decode batch runs that many passes per scheduler call (multi_step.py).
"""

from __future__ import annotations

from ..decision_trace import RULE_FCFS
from ..multi_step import MultiStepWindow
from ..request import Request
from ..scheduler import Scheduler, SchedulerError, SchedulerOutput

# V0 kept 1% of the blocks free when admitting, so running requests had room to grow.
WATERMARK = 0.01


def watermark_blocks(num_gpu_blocks: int) -> int:
    return int(WATERMARK * num_gpu_blocks)


class VllmV0Scheduler(Scheduler):
    name = "vllm-v0"

    def __init__(self, config):
        super().__init__(config)
        self.watermark_blocks = watermark_blocks(config.num_gpu_blocks)
        self.multi_step = MultiStepWindow(config.num_scheduler_steps)

    def schedule(self, now: float = 0.0) -> SchedulerOutput:
        output = SchedulerOutput()
        window = self.multi_step.next_pass(self.requests)
        if window is not None:
            self._continue_window(window, output)
            return self._finish_schedule(output, now)
        if not self.swapped:
            self._schedule_prefills(output)
        if not output.num_scheduled_tokens:
            self._schedule_decodes(output)
            if not output.preempted_reqs:
                self._schedule_swapped(output)
            self.multi_step.open(list(output.num_scheduled_tokens))
        return self._finish_schedule(output, now)

    def _continue_window(self, window: list[Request], output: SchedulerOutput) -> None:
        """A multi-step window's later pass: the scheduler does not run; each request of the batch
        decodes one more token into the slots its window reserved."""
        output.is_first_multi_step = False
        for request in window:
            if self.kv_cache_manager.allocate_slots(request, 1) is None:
                raise SchedulerError(f"request {request.request_id}: a multi-step pass without its reserved slot")
            output.num_scheduled_tokens[request.request_id] = 1

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
        # Multi-step: slots for the window's every pass now, as V0's `_append_slots` takes them.
        lookahead = self.multi_step.num_lookahead_slots
        index = 0
        while index < len(running) and token_budget > 0:
            request = running[index]
            while kv.allocate_slots(request, 1, num_lookahead_tokens=lookahead) is None:
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
            if not self._try_swap_in(request, 1 + self.multi_step.num_lookahead_slots, output):
                break
            self.swapped.popleft()
            output.num_scheduled_tokens[request.request_id] = 1
