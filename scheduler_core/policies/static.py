"""Static batching, the naive loop before continuous batching.

Form a batch from the head of the waiting queue, prefill it, then decode it until every member
has finished; only then form the next batch. A finished request's slot stays empty while the
longest member drags on, which is exactly the waste iteration-level scheduling removes.
"""

from __future__ import annotations

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
        """Admit waiting requests whole, up to max_num_seqs and the token budget (at least one)."""
        config, kv = self.config, self.kv_cache_manager
        token_budget = config.max_num_batched_tokens
        # Members swapped out of the last batch come back first.
        while self.swapped and len(self.running) < config.max_num_seqs:
            request = self.swapped[0]
            num_new_tokens = min(request.num_tokens - request.num_computed_tokens, token_budget)
            if num_new_tokens <= 0 or not self._try_swap_in(request, num_new_tokens, output):
                break
            self.swapped.popleft()
            output.num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens
        while self.waiting and len(self.running) < config.max_num_seqs:
            request = self.waiting.peek_request()
            computed_blocks, num_cached_tokens = kv.get_computed_blocks(request)
            num_new_tokens = request.num_tokens - num_cached_tokens
            if self.running and num_new_tokens > token_budget:
                break
            num_new_tokens = min(num_new_tokens, token_budget)
            if kv.allocate_slots(request, num_new_tokens, num_cached_tokens, computed_blocks) is None:
                break
            self.waiting.pop_request()
            self._admit(request, num_cached_tokens, num_cached_tokens, output)
            output.num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens

    def _schedule_batch(self, output: SchedulerOutput) -> None:
        """Every unfinished member advances: the rest of its prompt, or one decode token.

        When blocks run out the newest member is preempted; it waits for the next batch.
        """
        config, kv, running = self.config, self.kv_cache_manager, self.running
        token_budget = config.max_num_batched_tokens
        index = 0
        while index < len(running) and token_budget > 0:
            request = running[index]
            num_new_tokens = min(request.num_tokens - request.num_computed_tokens, token_budget)
            while kv.allocate_slots(request, num_new_tokens) is None:
                victim = running.pop()
                self._preempt(victim, output)
                if victim is request:
                    return
            output.num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens
            index += 1
