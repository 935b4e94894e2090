"""The scheduler's reasoning behind one step, as data: who asked for what, what bound it, who was
preempted by which rule, why a waiting request stayed waiting, and where freed blocks went.

Off unless a caller asks (`scheduler.enable_decision_trace()`): every hook in the policies is one
`if trace is not None` test, and the KV cache's events (kv_events.py) are off too, so headless
runs and replay keep their speed. The step loop (`Simulation.step`, `replay`) brackets each step
with `start_step()` and `end_step()`, handing the latter the step's KV events: where blocks came
from and went to. Entries are typed while the step is collected; `end_step` returns them as the
plain, JSON-ready dict the page turns into words (nothing here is prose).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields

from .kv_cache import KVCache
from .kv_events import BlockRemoved, BlocksAllocated, BlocksFreed, BlocksLeftWindow, HitBlockDropped, KVEvent

# Why a request got fewer tokens than it asked for: the limit that bound `num_new_tokens`.
BOUND_NONE = "none"
BOUND_LONG_PREFILL = "long_prefill_token_threshold"
BOUND_BUDGET = "token_budget"
BOUND_MAX_MODEL_LEN = "max_model_len"

# The rule that picked a preemption victim.
RULE_FCFS = "fcfs_last_running"  # FCFS: the last (newest) request of the running list
RULE_PRIORITY = "priority_lowest"  # priority: the largest (priority, arrival time)
RULE_SELF = "self"  # the rule picked the request that needed the blocks: it preempts itself
# The running scan ended early because a request preempted itself (nothing left to take from).
RUN_STOP_PREEMPTED_ITSELF = "preempted_itself"

# Why a waiting request was not admitted (or why the scan of the waiting queue stopped).
WAIT_ADMITTED = "admitted"
WAIT_BUDGET = "token_budget_spent"
WAIT_MAX_NUM_SEQS = "max_num_seqs"
WAIT_BLOCKS_FULL_CONTEXT = "blocks_full_context"  # 0.33's full-prompt admission gate
WAIT_BLOCKS = "blocks"  # not even this step's chunk fits in the free blocks
WAIT_UNCHUNKED_TOO_BIG = "prompt_exceeds_budget_unchunked"  # no chunking, prompt > remaining budget
WAIT_PREEMPTED_THIS_STEP = "preempted_this_step"  # a step that preempted admits nobody
WAIT_SWAPPED_FIRST = "swapped_first"  # swapped-out requests resume before new admissions


def _optional():
    """A field the page tests for by presence: left out of the JSON while it is None."""
    return field(default=None, metadata={"optional": True})


def _json(entry) -> dict:
    """An entry as the page reads it, fields in declaration order, optional ones only once set."""
    data = {}
    for f in fields(entry):
        value = getattr(entry, f.name)
        if value is not None or not f.metadata.get("optional"):
            data[f.name] = value
    return data


@dataclass(slots=True)
class StepLimits:
    """The limits this step runs under."""

    max_num_batched_tokens: int
    max_num_seqs: int
    max_model_len: int
    long_prefill_token_threshold: int
    block_size: int
    scheduling_order: str
    enable_chunked_prefill: bool
    full_prompt_admission: bool
    policy: str
    # What the V1 policy applied (0.33 lifts the threshold for a request that is alone).
    long_prefill_token_threshold_in_force: int | None = _optional()


@dataclass(slots=True)
class RunningDecision:
    """A running request's turn: what it asked for, what it will get if blocks allow, and why."""

    request: str
    asked: int
    drafts: int
    given: int
    budget_before: int
    computed_before: int
    bound: str
    scheduled: bool = False
    # Tokens a priority victim gave back after it had been scheduled this step.
    unscheduled_tokens: int | None = _optional()


@dataclass(frozen=True, slots=True)
class RunningStop:
    """Why the scan of the running list ended early: `request` is the first left out."""

    reason: str
    request: str | None
    num_not_examined: int


@dataclass(frozen=True, slots=True)
class PreemptionDecision:
    """Out of blocks for `request`: the numbers at that moment and the victim the rule chose."""

    request: str
    tokens: int
    blocks_needed: int
    blocks_held: int
    blocks_free: int
    evictable_cached: int
    victim: str
    victim_blocks: int
    victim_priority: int
    rule: str
    rule_order: str


@dataclass(frozen=True, slots=True)
class WaitingDecision:
    """A waiting request the scan looked at: admitted (with the limit that bound its chunk), or
    the reason it was not (with the block numbers, when blocks were short)."""

    request: str
    admitted: bool
    reason: str
    asked: int
    given: int
    budget_before: int
    cached_tokens: int
    num_running: int
    resumed: bool
    priority: int
    bound: str | None = _optional()
    blocks_free: int | None = _optional()
    blocks_needed_chunk: int | None = _optional()
    blocks_needed_full: int | None = _optional()
    tokens: int | None = _optional()
    evictable_cached: int | None = _optional()
    # vLLM 0.25's padded admission: the K drafts added to a one-token admission (counted in `asked`).
    padding_drafts: int | None = _optional()


@dataclass(frozen=True, slots=True)
class WaitingStop:
    """Why the scan of the waiting queue ended with requests still in it: `request` is the head it
    stopped at (head-of-line blocking: nobody behind it is looked at)."""

    reason: str
    request: str | None
    num_waiting_left: int
    num_running: int


@dataclass(frozen=True, slots=True)
class FreeDecision:
    """Where each block of a released table went (see kv_events.BlocksFreed), and why it was released."""

    request: str
    blocks: int
    to_head: list[int]
    to_tail_cached: list[int]
    to_tail: list[int]
    still_shared: list[int]
    cause: str  # "preempted", "finished" or "aborted" (its client went away: sim/aborts.py)


@dataclass(frozen=True, slots=True)
class WindowDecision:
    """Blocks a running request's sliding-window (or chunked-local) group gave back because they
    left its window (see kv_events.BlocksLeftWindow): its logical blocks `first_index` to
    `first_index + blocks - 1` in group `group` are the null block now."""

    request: str
    group: int
    first_index: int
    blocks: int
    to_head: list[int]
    to_tail_cached: list[int]
    to_tail: list[int]
    still_shared: list[int]


@dataclass(slots=True)
class StepDecisions:
    """One step's reasoning, in the order the scheduler reasons."""

    limits: StepLimits
    blocks_free_at_start: int
    running: list[RunningDecision] = field(default_factory=list)
    running_stop: RunningStop | None = None
    preemptions: list[PreemptionDecision] = field(default_factory=list)
    waiting: list[WaitingDecision] = field(default_factory=list)
    waiting_stop: WaitingStop | None = None
    frees: list[FreeDecision] = field(default_factory=list)
    # Blocks given back mid-request by window groups (several KV cache groups only).
    left_window: list[WindowDecision] = field(default_factory=list)
    # request id -> block ids: new from the free queue, prefix hits already in use by another
    # request (now shared), prefix hits taken off the free queue (revived).
    allocated: dict[str, list[int]] = field(default_factory=dict)
    newly_shared: dict[str, list[int]] = field(default_factory=dict)
    revived: dict[str, list[int]] = field(default_factory=dict)
    # Cached blocks evicted (their prefix is gone), in eviction order.
    evicted: list[int] = field(default_factory=list)
    # request id -> the cached block its prefix-cache hit gave up, and the rule that dropped it
    # (an EAGLE/MTP drafter recomputes it: eagle_hit_rule.py).
    dropped_hit_blocks: dict[str, dict] = field(default_factory=dict)

    def add_kv_events(self, events: Iterable[KVEvent], preempted: set[str], aborted: set[str]) -> None:
        for event in events:
            if isinstance(event, BlocksAllocated):
                rid, revived = event.request_id, set(event.revived)
                if event.new_blocks:
                    self.allocated.setdefault(rid, []).extend(event.new_blocks)
                for block_id in event.hit_blocks:
                    kind = self.revived if block_id in revived else self.newly_shared
                    kind.setdefault(rid, []).append(block_id)
            elif isinstance(event, BlocksFreed):
                self.frees.append(FreeDecision(
                    event.request_id, len(event.block_ids), list(event.to_head), list(event.to_tail_cached),
                    list(event.to_tail), list(event.still_shared),
                    "preempted" if event.request_id in preempted else
                    "aborted" if event.request_id in aborted else "finished"))
            elif isinstance(event, BlockRemoved):
                self.evicted.append(event.block_id)
            elif isinstance(event, BlocksLeftWindow):
                self.left_window.append(WindowDecision(
                    event.request_id, event.group_id, event.first_index, len(event.block_ids), list(event.to_head),
                    list(event.to_tail_cached), list(event.to_tail), list(event.still_shared)))
            elif isinstance(event, HitBlockDropped):
                self.dropped_hit_blocks[event.request_id] = {"block": event.block_id, "rule": event.rule}

    def to_dict(self) -> dict:
        data = {
            "limits": _json(self.limits),
            "blocks_free_at_start": self.blocks_free_at_start,
            "running": [_json(entry) for entry in self.running],
            "running_stop": _json(self.running_stop) if self.running_stop else None,
            "preemptions": [_json(entry) for entry in self.preemptions],
            "waiting": [_json(entry) for entry in self.waiting],
            "waiting_stop": _json(self.waiting_stop) if self.waiting_stop else None,
            "frees": [_json(entry) for entry in self.frees],
            "allocated": self.allocated,
            "newly_shared": self.newly_shared,
            "revived": self.revived,
            "evicted": self.evicted,
        }
        # Only where a drafter dropped a hit's block, or a window group gave blocks back: every other
        # step's record reads as before.
        if self.dropped_hit_blocks:
            data["dropped_hit_blocks"] = self.dropped_hit_blocks
        if self.left_window:
            data["left_window"] = [_json(entry) for entry in self.left_window]
        return data


class DecisionTrace:
    """Collects one step's decisions from hooks at the points where the scheduler makes them."""

    def __init__(self) -> None:
        self.last: dict | None = None
        self._step: StepDecisions | None = None
        self._kv: KVCache | None = None
        self._lookahead = 0

    def __deepcopy__(self, memo: dict) -> "DecisionTrace":
        # A snapshot of the engine keeps tracing but carries no half-built step.
        clone = DecisionTrace()
        memo[id(self)] = clone
        return clone

    # -- the step's frame ---------------------------------------------------------------------
    def start_step(self, scheduler) -> None:
        """Before `schedule()`: the limits this step runs under, and empty decision lists."""
        config = scheduler.config
        self._kv = scheduler.kv_cache_manager
        limits = StepLimits(config.max_num_batched_tokens, config.max_num_seqs, config.max_model_len,
                            config.long_prefill_token_threshold, config.block_size, config.scheduling_order,
                            config.chunks_prompts, config.compat.full_prompt_admission, config.policy)
        self._step = StepDecisions(limits, self._kv.num_free_blocks)
        # Slots past the new tokens that a drafter writes KV into: every allocation asks for them too.
        self._lookahead = config.num_lookahead_tokens

    def end_step(self, preempted: list[str], kv_events: Iterable[KVEvent] = (), aborted: Sequence[str] = ()) -> dict:
        """After the model step and its finishes, given the step's KV events (and the requests
        aborted at its start, whose frees are among them): the complete record of the step's
        reasoning, as JSON-ready data."""
        step, self._step = self._step, None
        step.add_kv_events(kv_events, set(preempted), set(aborted))
        self.last = step.to_dict()
        return self.last

    # -- hooks in the policies ----------------------------------------------------------------
    def set_long_prefill_threshold(self, threshold: int) -> None:
        """The threshold in force this step (0.33 lifts it for a request that is alone)."""
        self._step.limits.long_prefill_token_threshold_in_force = threshold

    def running_examined(self, request, asked: int, num_new_tokens: int, token_budget: int, long_prefill_threshold: int) -> None:
        """A running request's turn: what it asked for (its drafts and, under async scheduling, its
        tokens in flight too), what it will get if blocks allow, and why."""
        model_len_room = self._step.limits.max_model_len - 1 - request.num_computed_tokens
        self._step.running.append(RunningDecision(
            request.request_id, asked, request.num_spec_tokens, max(num_new_tokens, 0), token_budget,
            request.num_computed_tokens,
            self._bound(asked, num_new_tokens, token_budget, long_prefill_threshold, model_len_room)))

    def running_scheduled(self, request_id: str) -> None:
        for entry in reversed(self._step.running):
            if entry.request == request_id:
                entry.scheduled = True
                return

    def running_unscheduled(self, request_id: str, num_tokens: int) -> None:
        """A priority victim already scheduled this step gives its tokens back."""
        for entry in self._step.running:
            if entry.request == request_id and entry.scheduled:
                entry.scheduled = False
                entry.unscheduled_tokens = num_tokens

    def running_stopped(self, reason: str, request_id: str | None, num_not_examined: int) -> None:
        """Why the scan of the running list ended before its end: `request_id` is the first left out."""
        self._step.running_stop = RunningStop(reason, request_id, num_not_examined)

    def allocation_failed(self, request, num_new_tokens: int, victim, rule: str) -> None:
        """Out of blocks for `request`: the numbers at that moment and the victim the rule chose."""
        kv = self._kv
        num_tokens = min(request.num_computed_tokens + num_new_tokens + self._lookahead, kv.max_model_len)
        self._step.preemptions.append(PreemptionDecision(
            request.request_id, num_new_tokens, kv.num_blocks_to_allocate(request.request_id, num_tokens, ()),
            len(kv.get_block_ids(request.request_id)), kv.num_free_blocks, self.num_evictable_cached(kv),
            victim.request_id, len(kv.get_block_ids(victim.request_id)), victim.priority,
            RULE_SELF if victim is request else rule, rule))

    def waiting_examined(self, request, reason: str, num_new_tokens: int, token_budget: int,
                         long_prefill_threshold: int, computed_blocks, num_running: int, padding_drafts: int = 0) -> None:
        """A waiting request the scan looked at: admitted, or the reason it was not. A request padded to
        the uniform speculative size (`padding_drafts`) asks for its one token and the padding."""
        kv = self._kv
        num_cached_tokens = len(computed_blocks) * self._step.limits.block_size
        asked = request.num_tokens - request.num_computed_tokens - num_cached_tokens + padding_drafts
        admitted = reason == WAIT_ADMITTED
        shortage = {}
        if reason in (WAIT_BLOCKS, WAIT_BLOCKS_FULL_CONTEXT):
            computed = request.num_computed_tokens + num_cached_tokens
            rid = request.request_id
            shortage = {
                "blocks_free": kv.num_free_blocks,
                "blocks_needed_chunk": kv.num_blocks_to_allocate(
                    rid, min(computed + num_new_tokens + self._lookahead, kv.max_model_len), computed_blocks),
                "blocks_needed_full": kv.num_blocks_to_allocate(
                    rid, min(request.num_tokens, kv.max_model_len), computed_blocks),
                "tokens": num_new_tokens,
                "evictable_cached": self.num_evictable_cached(kv),
            }
        self._step.waiting.append(WaitingDecision(
            request.request_id, admitted, reason, asked, num_new_tokens if admitted else 0, token_budget,
            num_cached_tokens, num_running, request.num_preemptions > 0, request.priority,
            bound=self._bound(asked, num_new_tokens, token_budget, long_prefill_threshold, asked) if admitted else None,
            padding_drafts=padding_drafts or None, **shortage))

    def waiting_stopped(self, reason: str, request_id: str | None, num_waiting_left: int, num_running: int) -> None:
        """Why the scan of the waiting queue ended with requests still in it: `request_id` is the
        head it stopped at (head-of-line blocking: nobody behind it is looked at)."""
        self._step.waiting_stop = WaitingStop(reason, request_id, num_waiting_left, num_running)

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def num_evictable_cached(kv: KVCache) -> int:
        """Free blocks still holding a cached prefix (O(cached blocks); only on the traced path)."""
        pool = kv.block_pool
        if pool is None:  # the contiguous allocator caches nothing
            return 0
        ref_cnt = pool.ref_cnt
        return sum(1 for block_id in pool.cached_block_hash_to_block.block_ids() if ref_cnt[block_id] == 0)

    @staticmethod
    def _bound(asked: int, given: int, token_budget: int, long_prefill_threshold: int, model_len_room: int) -> str:
        """The first limit, in the order the scheduler applies them, that equals what was given."""
        if given >= asked:
            return BOUND_NONE
        if 0 < long_prefill_threshold < asked and given == long_prefill_threshold:
            return BOUND_LONG_PREFILL
        if given == token_budget:
            return BOUND_BUDGET
        if given == model_len_room:
            return BOUND_MAX_MODEL_LEN
        return BOUND_BUDGET


def traced_record(sim, state, step: int):
    """The record of step `step`, with its decisions, replayed from `state` (taken at or before
    that step) on a scratch copy of `sim`: the simulation is deterministic, so this is the step
    `sim` took, and `sim` itself never pays for the trace."""
    scratch = copy.copy(sim)
    scratch.restore(state)
    scratch.scheduler.enable_decision_trace()
    while scratch.step_index < step and not scratch.done:
        scratch.step()
    return scratch.step() if scratch.step_index == step and not scratch.done else None
