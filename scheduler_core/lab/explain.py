"""The first difference between the student's batch and the reference's, in words, with the reason
the reference's decision trace gives for its own choice (why a request ran, waited or was preempted)."""

from __future__ import annotations

from .exercises import Exercise
from .view import EngineView


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def names(ids: list[str]) -> str:
    ids = list(ids)
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + " and " + ids[-1]


def _chunk_word(request_id: str, tokens: int, view: EngineView) -> str:
    return "a decode" if tokens == 1 and _remaining(view, request_id) == 1 else f"a {tokens:,}-token chunk"


def _remaining(view: EngineView, request_id: str) -> int:
    return next((r.num_remaining_tokens for r in view.running + view.waiting if r.request_id == request_id), 0)


def explain(exercise: Exercise, step: int, view: EngineView, yours, reference, decisions: dict | None) -> str:
    """One paragraph: "step N: what you did; what vLLM does, and why"."""
    decisions = decisions or {}
    who = "vLLM" if exercise.has_token_budget else "static batching"
    for sentence in (_preemption(view, yours, reference, decisions, who), _running(exercise, view, yours, reference, decisions),
                     _admission(exercise, view, yours, reference, decisions, who)):
        if sentence:
            return f"step {step}: {sentence}"
    return f"step {step}: your batch differs from {who}'s"


def _preemption(view, yours, reference, decisions, who) -> str:
    mine, theirs = set(yours.preempted), set(reference.preempted)
    if mine == theirs:
        return ""
    preemptions = decisions.get("preemptions", [])
    if theirs and not mine:
        first = preemptions[0] if preemptions else None
        victims = names(list(reference.preempted))
        if first is not None:
            why = (f"{first['request']} needed {count(first['blocks_needed'], 'more KV block')} for its next "
                   f"{count(first['tokens'], 'token')} and {first['blocks_free']} were free")
        else:
            why = "the running requests' next tokens did not fit in the free blocks"
        return (f"you preempted nobody, but {why}; {who} preempts the newest running request when blocks run out "
                f"(by recompute: it frees its blocks and waits at the head of the queue), so {victims} "
                f"{'is' if len(theirs) == 1 else 'are'} preempted in this step")
    if mine and not theirs:
        return (f"you preempted {names(list(yours.preempted))}, but every running request's tokens fit in the "
                f"{view.num_free_blocks} free blocks; {who} preempts only when a running request's next tokens do not fit")
    rule = ("the one that ranks last, the largest (priority, arrival)" if view.scheduling_order == "priority"
            else "the newest (the last in view.running)")
    return (f"you preempted {names(sorted(mine))}; {who} preempts {rule} first, one at a time until the tokens fit: "
            f"{names(list(reference.preempted))}")


def _running(exercise, view, yours, reference, decisions) -> str:
    running = [request.request_id for request in view.running]
    mine, theirs = yours.tokens(), reference.tokens()
    differing = [rid for rid in running if mine.get(rid) != theirs.get(rid) and rid not in reference.preempted]
    if not differing:
        return ""
    waiting = {request.request_id for request in view.waiting}
    admitted = [rid for rid in mine if rid in waiting]
    shorted = [rid for rid in differing if mine.get(rid, 0) < theirs.get(rid, 0)]
    if admitted and shorted:
        decodes = all(theirs[rid] == 1 for rid in shorted)
        if len(admitted) == 1:
            given = f"{admitted[0]} {_chunk_word(admitted[0], mine[admitted[0]], view)}"
        else:
            given = f"{names(admitted)} {sum(mine[rid] for rid in admitted):,} tokens"
        if decodes:
            then = f"{names(shorted)} {'decodes' if len(shorted) == 1 else 'decode'} in this step"
        else:
            then = f"{names(shorted)} {'gets its' if len(shorted) == 1 else 'get their'} tokens first"
        return (f"you gave {given} before the running requests' {'decodes' if decodes else 'chunks'}; "
                f"vLLM schedules running requests first, so {then}")
    rid = differing[0]
    if rid not in mine:
        return (f"you left running {rid} out of the batch; "
                + ("every member of a static batch decodes one token a step until the batch is done"
                   if not exercise.has_token_budget else
                   f"vLLM schedules every running request, in order, while the budget lasts, so {rid} gets "
                   + count(theirs[rid], "token")))
    if rid not in theirs:
        return f"you gave running {rid} {mine[rid]:,} tokens; {_why_not_running(rid, decisions)}"
    entry = next((e for e in decisions.get("running", []) if e["request"] == rid), None)
    return f"you gave running {rid} {mine[rid]:,} tokens; vLLM gives it {theirs[rid]:,}, {_bound(entry, theirs[rid])}"


def _why_not_running(rid: str, decisions: dict) -> str:
    stop = decisions.get("running_stop")
    if stop and stop.get("reason") == "token_budget_spent":
        return "vLLM gives it none: the requests before it in the running list used the whole token budget"
    return "vLLM gives it none in this step"


def _bound(entry: dict | None, given: int) -> str:
    if entry is None:
        return "what it has left to compute"
    if entry["bound"] == "token_budget":
        return f"its {entry['asked']:,} tokens left capped by the {entry['budget_before']:,} tokens of budget left at its turn"
    if entry["bound"] == "long_prefill_token_threshold":
        return "capped by long_prefill_token_threshold"
    return "what it has left to compute" if given > 1 else "its one decode token"


WAIT_REASONS = {
    "max_num_seqs": "{running} requests are running and max_num_seqs is {max_num_seqs}",
    "token_budget_spent": "the running requests used the whole token budget",
    "preempted_this_step": "a step that preempted admits nobody (the blocks just freed are not for newcomers)",
    "prompt_exceeds_budget_unchunked": "its whole prompt does not fit in the budget left, and chunked prefill is off",
    "blocks": "not even this step's chunk fits in the {blocks_free} free blocks",
    "blocks_full_context": "its whole context needs {blocks_needed_full} blocks and {blocks_free} are free, and vLLM "
                           "admits a request only if the free blocks hold its whole context, not just this step's chunk",
}


def _admission(exercise, view, yours, reference, decisions, who) -> str:
    waiting = [request.request_id for request in view.waiting]
    mine = {rid: n for rid, n in yours.tokens().items() if rid in waiting}
    theirs = {rid: n for rid, n in reference.tokens().items() if rid in waiting}
    limits = (decisions.get("limits") or {})
    for rid in mine:
        if rid not in theirs:
            return f"you admitted {rid}, but {_why_not_admitted(exercise, rid, view, decisions, limits, theirs)}"
    missing = [rid for rid in theirs if rid not in mine]
    if missing:
        tokens = ", ".join(f"{theirs[rid]:,}" for rid in missing)
        chunked = [rid for rid in missing if theirs[rid] < _remaining(view, rid)]
        if chunked and exercise.has_token_budget:
            rid = chunked[0]
            return (f"vLLM admits {rid} in this step with a {theirs[rid]:,}-token chunk of the {_remaining(view, rid):,} "
                    "tokens it has to compute: with chunked prefill a prompt need not fit the budget whole, it takes "
                    "what is left of the budget and the rest follows in later steps")
        return (f"{who} admits {names(missing)} in this step (with {tokens} tokens): "
                f"{_why_admitted(exercise, view)}")
    for rid in theirs:
        if mine[rid] != theirs[rid]:
            entry = next((e for e in decisions.get("waiting", []) if e["request"] == rid), None)
            return f"you gave {rid} {mine[rid]:,} tokens; vLLM gives it {theirs[rid]:,}, {_bound(entry, theirs[rid])}"
    if list(mine) != list(theirs):
        return (f"you admitted {names(list(mine))} in that order; {who} admits from the head of the waiting queue, "
                f"in queue order: {names(list(theirs))}")
    return ""


def _why_not_admitted(exercise, rid, view, decisions, limits, theirs) -> str:
    if not exercise.has_token_budget:
        if view.running:
            members = [request.request_id for request in view.running]
            return (f"static batching admits only when the whole batch has finished: {names(members)} "
                    f"{'is' if len(members) == 1 else 'are'} still running")
        return f"the batch already has max_num_seqs={view.max_num_seqs} members" if len(theirs) >= view.max_num_seqs \
            else f"its prompt does not fit in the {view.num_free_blocks} free blocks"
    entry = next((e for e in decisions.get("waiting", []) if e["request"] == rid), None)
    stop = decisions.get("waiting_stop") or {}
    head_blocked = stop.get("request")
    if entry is None and head_blocked and head_blocked != rid:
        reason = stop.get("reason")
        return (f"vLLM stops at the head of the waiting queue, {head_blocked}, which cannot be admitted "
                f"({_reason(reason, stop, decisions, view)}), and never looks past it")
    if entry is None and view.waiting and view.waiting[0].request_id != rid and not theirs and not stop:
        return f"vLLM admits from the head of the waiting queue, {view.waiting[0].request_id} first"
    reason = (entry or {}).get("reason") or stop.get("reason") or ""
    return f"vLLM does not admit it in this step: {_reason(reason, entry or stop, decisions, view)}"


def _reason(reason: str, entry: dict, decisions: dict, view: EngineView) -> str:
    template = WAIT_REASONS.get(reason, "it does not fit in this step")
    values = {"running": entry.get("num_running", len(view.running)), "max_num_seqs": view.max_num_seqs,
              "blocks_free": entry.get("blocks_free", view.num_free_blocks),
              "blocks_needed_full": entry.get("blocks_needed_full", "?")}
    return template.format(**values)


def _why_admitted(exercise, view) -> str:
    if not exercise.has_token_budget:
        return "the last batch has finished, so the next batch is formed from the head of the queue, up to max_num_seqs"
    return (f"continuous batching fills a free seat at once ({len(view.running)} of max_num_seqs={view.max_num_seqs} "
            f"running), while token budget is left and its blocks fit")
