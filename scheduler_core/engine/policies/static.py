"""Static batching, the naive loop before continuous batching.

Form a batch of up to `max_num_seqs` requests from the head of the waiting queue, prefill all
their prompts in one step, then decode the batch until every member has finished; only then
form the next batch. There is no per-step token budget: the batch is the unit of work. A
finished request's slot stays empty while the longest member drags on, which is exactly the
waste iteration-level scheduling removes.
"""

from __future__ import annotations

from ..decision_trace import RULE_FCFS
from ..scheduler import Scheduler, SchedulerOutput


class StaticScheduler(Scheduler):
    name = "static"

    def schedule(self, now: float = 0.0) -> SchedulerOutput:
        output = SchedulerOutput()
        if not self.running:
            self._form_batch(output)
        else:
            self._schedule_batch(output)
        return self._finish_schedule(output, now)

    def _form_batch(self, output: SchedulerOutput) -> None:
        """Admit whole requests while the batch has seats and their prompts fit in free blocks."""
        config, kv = self.config, self.kv_cache_manager
        # Members swapped out of the last batch come back first.
        while self.swapped and len(self.running) < config.max_num_seqs:
            request = self.swapped[0]
            if not self._try_swap_in(request, request.num_tokens - request.num_computed_tokens, output):
                break
            self.swapped.popleft()
            output.num_scheduled_tokens[request.request_id] = request.num_tokens - request.num_computed_tokens
        while self.waiting and len(self.running) < config.max_num_seqs:
            request = self.waiting.peek_request()
            computed_blocks, num_cached_tokens = kv.get_computed_blocks(request)
            num_new_tokens = request.num_tokens - num_cached_tokens
            if kv.allocate_slots(request, num_new_tokens, num_cached_tokens, computed_blocks) is None:
                break
            self.waiting.pop_request()
            self.record_prefix_lookup(request, num_cached_tokens)
            self._admit(request, num_cached_tokens, num_cached_tokens, output)
            output.num_scheduled_tokens[request.request_id] = num_new_tokens

    def _schedule_batch(self, output: SchedulerOutput) -> None:
        """Every unfinished member advances one token; when blocks run out the newest member is
        preempted and waits for a later batch."""
        kv, running = self.kv_cache_manager, self.running
        index = 0
        while index < len(running):
            request = running[index]
            num_new_tokens = request.num_tokens - request.num_computed_tokens
            while kv.allocate_slots(request, num_new_tokens) is None:
                victim = running.pop()
                if self.decision_trace is not None:
                    self.decision_trace.allocation_failed(request, num_new_tokens, victim, RULE_FCFS)
                self._preempt(victim, output)
                if victim is request:
                    return
            output.num_scheduled_tokens[request.request_id] = num_new_tokens
            index += 1
