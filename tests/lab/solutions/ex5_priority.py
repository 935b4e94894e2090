"""Reference solution, exercise 5: priority order and the lowest-ranked victim."""


def rank(request):
    return (request.priority, request.arrival_index)


class StudentScheduler:
    def schedule(self, view):
        batch, budget, free = {}, view.token_budget, view.num_free_blocks
        running = list(view.running)
        preempted = []
        index = 0
        while index < len(running) and budget > 0:
            request = running[index]
            tokens = min(request.num_remaining_tokens, budget)
            while view.blocks_needed(request, tokens) > free:
                victim = max(running, key=rank)
                victim_index = running.index(victim)
                running.remove(victim)
                preempted.append(victim.request_id)
                free += victim.num_blocks
                if victim.request_id in batch:
                    # Its tokens this step go back to the budget, and the blocks they needed back to the pool.
                    given = batch.pop(victim.request_id)
                    budget += given
                    free += view.blocks_needed(victim, given)
                if victim_index < index:
                    index -= 1
                if victim is request:
                    break
            if request.request_id in preempted:
                continue  # the ones after it rank higher and may fit now
            batch[request.request_id] = tokens
            budget -= tokens
            free -= view.blocks_needed(request, tokens)
            index += 1
        if not preempted:
            seats = view.max_num_seqs - len(running)
            for request in view.waiting:
                if budget == 0 or seats == 0:
                    break
                if view.blocks_needed(request, request.num_remaining_tokens) > free:
                    break
                tokens = min(request.num_remaining_tokens, budget)
                batch[request.request_id] = tokens
                budget -= tokens
                free -= view.blocks_needed(request, tokens)
                seats -= 1
        return batch, preempted
