"""Exercise 4's typical mistake: a running request whose tokens do not fit is skipped, nobody is preempted."""


class StudentScheduler:
    def schedule(self, view):
        batch, budget, free = {}, view.token_budget, view.num_free_blocks
        for request in view.running:
            tokens = min(request.num_remaining_tokens, budget)
            if tokens == 0 or view.blocks_needed(request, tokens) > free:
                continue
            batch[request.request_id] = tokens
            budget -= tokens
            free -= view.blocks_needed(request, tokens)
        seats = view.max_num_seqs - len(view.running)
        for request in view.waiting:
            if budget == 0 or seats == 0 or view.blocks_needed(request, request.num_remaining_tokens) > free:
                break
            tokens = min(request.num_remaining_tokens, budget)
            batch[request.request_id] = tokens
            budget -= tokens
            free -= view.blocks_needed(request, tokens)
            seats -= 1
        return batch
