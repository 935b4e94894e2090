"""The student's policy inside servescope's engine: the view goes out, the batch comes back, is
checked, and is carried out with the engine's own mechanics (block allocation, preemption by
recompute, admission), so only the scheduling decision differs from the reference's."""

from __future__ import annotations

from collections.abc import Mapping

from ..engine.config import EngineConfig
from ..engine.scheduler import Scheduler, SchedulerOutput
from ..utils import plural
from .student import StudentPolicy
from .view import EngineView, engine_view


class InvalidBatch(Exception):
    """The student's batch could not run in this engine: over the budget, a request twice, a
    finished request, more blocks than are free. The message says which, in the student's terms."""


class StudentBatch:
    """What `schedule()` returned, read into tokens per request (in the order given) and victims."""

    def __init__(self, returned):
        if isinstance(returned, tuple) and len(returned) == 2:
            tokens, preempt = returned
        else:
            tokens, preempt = returned, ()
        pairs = list(tokens.items()) if isinstance(tokens, Mapping) else self._pairs(tokens)
        self.tokens: dict[str, int] = {}
        for rid, num_tokens in pairs:
            if rid in self.tokens:
                raise InvalidBatch(f"{rid!r} appears twice in the batch")
            if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
                raise InvalidBatch(f"{rid!r} is given {num_tokens!r} tokens; give each request in the batch a "
                                   "whole number of tokens, at least 1 (leave a request out to skip it)")
            self.tokens[rid] = num_tokens
        if isinstance(preempt, str) or not all(isinstance(rid, str) for rid in _iterable(preempt, "the preempted list")):
            raise InvalidBatch(f"the preempted requests must be a list of request ids, not {preempt!r}")
        self.preempt = list(preempt)
        if len(set(self.preempt)) != len(self.preempt):
            raise InvalidBatch(f"a request is preempted twice: {self.preempt}")

    @staticmethod
    def _pairs(tokens) -> list:
        pairs = list(_iterable(tokens, "schedule()'s result"))
        if not all(isinstance(pair, tuple) and len(pair) == 2 for pair in pairs):
            raise InvalidBatch("schedule() must return a dict {request_id: tokens} (or (that dict, a list of "
                               f"request ids to preempt)), not {tokens!r:.80}")
        return pairs


def _iterable(value, what: str):
    try:
        return iter(value)
    except TypeError:
        raise InvalidBatch(f"{what} is {value!r:.80}, which is not a dict or a list") from None


class LabScheduler(Scheduler):
    """A `Scheduler` whose `schedule()` asks the student, then does what the student decided."""

    name = "lab"

    def __init__(self, config: EngineConfig, student: StudentPolicy, has_token_budget: bool):
        super().__init__(config)
        self.student = student
        self.has_token_budget = has_token_budget
        self.step_index = 0
        # What this step's view showed and what the student returned (for the grader's report).
        self.last_view: EngineView | None = None
        self.last_batch: StudentBatch | None = None

    def schedule(self, now: float = 0.0) -> SchedulerOutput:
        view = self.last_view = engine_view(self, self.step_index + 1, self.has_token_budget)
        self.last_batch = None
        batch = self.last_batch = StudentBatch(self.student.schedule(view))
        self.step_index += 1
        self._check(batch, view)
        output = SchedulerOutput()
        running_ids = {request.request_id for request in self.running}
        # Victims newest first, as each goes back to the head of the waiting queue: the oldest ends first in line.
        victims = set(batch.preempt)
        for request in reversed(list(self.running)):
            if request.request_id in victims:
                self.running.remove(request)
                self._preempt(request, output)
        for rid, num_tokens in batch.tokens.items():
            if rid in running_ids:
                self._allocate(self.requests[rid], num_tokens)
                output.num_scheduled_tokens[rid] = num_tokens
        for rid, num_tokens in batch.tokens.items():
            if rid not in running_ids:
                request = self.requests[rid]
                self._allocate(request, num_tokens)
                self.waiting.remove_request(request)
                self._admit(request, 0, 0, output)
                output.num_scheduled_tokens[rid] = num_tokens
        return self._finish_schedule(output, now)

    def _allocate(self, request, num_tokens: int) -> None:
        if self.kv_cache_manager.allocate_slots(request, num_tokens) is None:
            view = self.last_view
            needed = view.blocks_needed(next(r for r in view.running + view.waiting if r.request_id == request.request_id),
                                        num_tokens)
            raise InvalidBatch(
                f"{request.request_id} needs {plural(needed, 'more KV block')} for {plural(num_tokens, 'token')} but only "
                f"{self.kv_cache_manager.num_free_blocks} are free at that point: schedule fewer requests, or preempt "
                "a running one first")

    def _check(self, batch: StudentBatch, view: EngineView) -> None:
        """Refuse a batch this engine cannot run, naming what is wrong with it."""
        running = {request.request_id: request for request in view.running}
        waiting = {request.request_id: request for request in view.waiting}
        for rid in batch.preempt:
            if rid not in running:
                where = "waiting" if rid in waiting else "not in the engine (finished, or not arrived yet)"
                raise InvalidBatch(f"you preempted {rid}, which is {where}; only running requests can be preempted")
            if rid in batch.tokens:
                raise InvalidBatch(f"{rid} is both preempted and given tokens ({batch.tokens[rid]:,}) in this step")
        for rid, num_tokens in batch.tokens.items():
            request = running.get(rid) or waiting.get(rid)
            if request is None:
                raise InvalidBatch(f"{rid!r} is neither running nor waiting (finished, or not arrived yet): "
                                   "only requests in view.running or view.waiting can be scheduled")
            if num_tokens > request.num_remaining_tokens:
                raise InvalidBatch(f"{rid} has {request.num_remaining_tokens} tokens left to compute; you gave it "
                                   f"{num_tokens}")
            if rid in waiting and not view.chunked_prefill and num_tokens != request.num_remaining_tokens:
                raise InvalidBatch(f"chunked prefill is off in this exercise: {rid}'s prompt runs whole "
                                   f"({request.num_remaining_tokens} tokens) or not at all; you gave it {num_tokens}")
        total = sum(batch.tokens.values())
        if view.token_budget is not None and total > view.token_budget:
            raise InvalidBatch(f"the batch holds {total:,} tokens, over the {view.token_budget:,}-token budget "
                               "(max_num_batched_tokens)")
        num_running = len(running) - len(batch.preempt) + sum(1 for rid in batch.tokens if rid in waiting)
        if num_running > view.max_num_seqs:
            raise InvalidBatch(f"admitting {', '.join(rid for rid in batch.tokens if rid in waiting)} makes "
                               f"{num_running} requests running, past max_num_seqs={view.max_num_seqs}")
