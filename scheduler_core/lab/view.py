"""What a student's `schedule()` is shown: a snapshot of the engine, made of frozen values only.

The view holds copies (ints, strings, tuples), never the engine's `Request` objects or its KV cache,
so nothing a student does to it can change the engine's state: the only way to act is to return
a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.request import Request
from ..engine.scheduler import Scheduler
from ..utils import cdiv


@dataclass(frozen=True, slots=True)
class RequestView:
    """One request as the scheduler sees it."""

    request_id: str
    num_prompt_tokens: int
    num_output_tokens: int
    max_tokens: int
    # Tokens whose KV is in the cache; 0 again after a preemption (recompute).
    num_computed_tokens: int
    # KV blocks it holds now.
    num_blocks: int
    priority: int
    # Order of arrival (0 for the first request of the workload).
    arrival_index: int
    num_preemptions: int

    @property
    def num_tokens(self) -> int:
        """Prompt plus output so far: the context once everything is computed."""
        return self.num_prompt_tokens + self.num_output_tokens

    @property
    def num_remaining_tokens(self) -> int:
        """Tokens still to compute before the model can sample again: 1 for a decode, more for a
        prompt (or a preempted request's whole context, recomputed)."""
        return self.num_tokens - self.num_computed_tokens


@dataclass(frozen=True, slots=True)
class EngineView:
    """The engine at the start of one step; `step` numbers it as the dashboard does (the first step is step 1)."""

    step: int
    # Running requests in the engine's order, oldest admission first (the last is the newest).
    running: tuple[RequestView, ...]
    # Waiting requests in queue order: the head first (a preempted request goes back to the head).
    waiting: tuple[RequestView, ...]
    num_free_blocks: int
    block_size: int
    # Most tokens one step may schedule in all; None where the exercise has no budget (static batching).
    token_budget: int | None
    max_num_seqs: int
    # Whether a prompt may be split over several steps.
    chunked_prefill: bool
    # "fcfs", or "priority" (lower value first, then earlier arrival).
    scheduling_order: str

    def blocks_needed(self, request: RequestView, num_new_tokens: int) -> int:
        """How many more blocks `request` needs to hold `num_new_tokens` more tokens."""
        return max(0, cdiv(request.num_computed_tokens + num_new_tokens, self.block_size) - request.num_blocks)


def request_view(request: Request, scheduler: Scheduler) -> RequestView:
    return RequestView(
        request.request_id, request.num_prompt_tokens, request.num_output_tokens, request.max_tokens,
        request.num_computed_tokens, len(scheduler.kv_cache_manager.get_block_ids(request.request_id)),
        request.priority, request.arrival_index, request.num_preemptions,
    )


def engine_view(scheduler: Scheduler, step: int, has_token_budget: bool) -> EngineView:
    config = scheduler.config
    return EngineView(
        step,
        tuple(request_view(request, scheduler) for request in scheduler.running),
        tuple(request_view(request, scheduler) for request in scheduler.waiting),
        scheduler.kv_cache_manager.num_free_blocks,
        config.block_size,
        config.max_num_batched_tokens if has_token_budget else None,
        config.max_num_seqs,
        config.enable_chunked_prefill,
        config.scheduling_order,
    )
