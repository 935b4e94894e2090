"""Exercise 2's typical mistake: every waiting request is admitted, seats or not."""


class StudentScheduler:
    def schedule(self, view):
        batch = {request.request_id: request.num_remaining_tokens for request in view.running}
        for request in view.waiting:
            batch[request.request_id] = request.num_remaining_tokens
        return batch
