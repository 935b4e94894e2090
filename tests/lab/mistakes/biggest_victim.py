"""Exercise 4's mistake: the victim is the running request holding the most blocks, not the newest."""


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
                victim = max(running[index:], key=lambda r: r.num_blocks)
                running.remove(victim)
                preempted.append(victim.request_id)
                free += victim.num_blocks
                if victim is request:
                    break
            if request.request_id in preempted:
                break
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
