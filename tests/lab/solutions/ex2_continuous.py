"""Reference solution, exercise 2: continuous batching, whole prompts."""


class StudentScheduler:
    def schedule(self, view):
        batch = {request.request_id: request.num_remaining_tokens for request in view.running}
        budget = view.token_budget - sum(batch.values())
        free = view.num_free_blocks - sum(view.blocks_needed(r, batch[r.request_id]) for r in view.running)
        seats = view.max_num_seqs - len(view.running)
        for request in view.waiting:
            tokens = request.num_remaining_tokens
            if seats == 0 or tokens > budget or view.blocks_needed(request, tokens) > free:
                break
            batch[request.request_id] = tokens
            budget -= tokens
            free -= view.blocks_needed(request, tokens)
            seats -= 1
        return batch
