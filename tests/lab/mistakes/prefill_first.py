"""Exercise 3's typical mistake: new prompts before the running requests' decodes."""


class StudentScheduler:
    def schedule(self, view):
        batch, budget = {}, view.token_budget
        seats = view.max_num_seqs - len(view.running)
        for request in list(view.waiting)[:seats]:
            tokens = min(request.num_remaining_tokens, budget)
            if tokens == 0:
                break
            batch[request.request_id] = tokens
            budget -= tokens
        for request in view.running:
            if budget == 0:
                break
            batch[request.request_id] = min(request.num_remaining_tokens, budget)
            budget -= batch[request.request_id]
        return batch
