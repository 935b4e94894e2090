"""A policy that raises: the grader names this file and line."""


class StudentScheduler:
    def schedule(self, view):
        batch = {}
        for request in view.running:
            batch[request.request_id] = 1
        return batch[view.waiting[0].request_id]
