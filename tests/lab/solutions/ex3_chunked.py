"""Reference solution, exercise 3: a token budget with chunked prefill, decodes first."""


class StudentScheduler:
    def schedule(self, view):
        batch, budget, free = {}, view.token_budget, view.num_free_blocks
        for request in view.running:
            if budget == 0:
                break
            tokens = min(request.num_remaining_tokens, budget)
            batch[request.request_id] = tokens
            budget -= tokens
            free -= view.blocks_needed(request, tokens)
        seats = view.max_num_seqs - len(view.running)
        for request in view.waiting:
            if budget == 0 or seats == 0:
                break
            tokens = min(request.num_remaining_tokens, budget)
            if view.blocks_needed(request, request.num_remaining_tokens) > free:
                break
            batch[request.request_id] = tokens
            budget -= tokens
            free -= view.blocks_needed(request, tokens)
            seats -= 1
        return batch
