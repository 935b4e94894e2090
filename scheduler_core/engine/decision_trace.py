"""The scheduler's reasoning behind one step, as data: who asked for what, what bound it, who was
preempted by which rule, why a waiting request stayed waiting, and where freed blocks went.

Off unless a caller asks (`scheduler.enable_decision_trace()`): every hook in the policies and the
KV cache is one `if trace is not None` test, so headless runs and replay keep their speed. The
step loop (`Simulation.step`, `replay`) brackets each step with `start_step()` and `end_step()`;
the latter returns a plain, JSON-ready dict that the page turns into words (nothing here is prose).
"""

from __future__ import annotations

import copy

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


class DecisionTrace:
    """Collects one step's decisions from hooks at the points where the scheduler makes them."""

    def __init__(self) -> None:
        self.last: dict | None = None
        self._step: dict | None = None
        self._kv = None

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
        self._step = {
            "limits": {
                "max_num_batched_tokens": config.max_num_batched_tokens,
                "max_num_seqs": config.max_num_seqs,
                "max_model_len": config.max_model_len,
                "long_prefill_token_threshold": config.long_prefill_token_threshold,
                "block_size": config.block_size,
                "scheduling_order": config.scheduling_order,
                "enable_chunked_prefill": config.chunks_prompts,
                "full_prompt_admission": config.compat.full_prompt_admission,
                "policy": config.policy,
            },
            "blocks_free_at_start": self._kv.num_free_blocks,
            "running": [],
            "running_stop": None,
            "preemptions": [],
            "waiting": [],
            "waiting_stop": None,
            "frees": [],
            "allocated": {},
            "newly_shared": {},
            "revived": {},
            "evicted": [],
        }

    def end_step(self, preempted: list[str]) -> dict:
        """After the model step and its finishes: the complete record of the step's reasoning."""
        step, self._step = self._step, None
        preempted_ids = set(preempted)
        for free in step["frees"]:
            free["cause"] = "preempted" if free["request"] in preempted_ids else "finished"
        self.last = step
        return step

    # -- hooks in the policies ----------------------------------------------------------------
    def set_long_prefill_threshold(self, threshold: int) -> None:
        """The threshold in force this step (0.33 lifts it for a request that is alone)."""
        self._step["limits"]["long_prefill_token_threshold_in_force"] = threshold

    def running_examined(self, request, asked: int, num_new_tokens: int, token_budget: int, long_prefill_threshold: int) -> None:
        """A running request's turn: what it asked for (its drafts and, under async scheduling, its
        tokens in flight too), what it will get if blocks allow, and why."""
        self._step["running"].append({
            "request": request.request_id,
            "asked": asked,
            "drafts": request.num_spec_tokens,
            "given": max(num_new_tokens, 0),
            "budget_before": token_budget,
            "computed_before": request.num_computed_tokens,
            "bound": self._bound(asked, num_new_tokens, token_budget, long_prefill_threshold,
                                 self._step["limits"]["max_model_len"] - 1 - request.num_computed_tokens),
            "scheduled": False,
        })

    def running_scheduled(self, request_id: str) -> None:
        for entry in reversed(self._step["running"]):
            if entry["request"] == request_id:
                entry["scheduled"] = True
                return

    def running_unscheduled(self, request_id: str, num_tokens: int) -> None:
        """A priority victim already scheduled this step gives its tokens back."""
        for entry in self._step["running"]:
            if entry["request"] == request_id and entry["scheduled"]:
                entry["scheduled"] = False
                entry["unscheduled_tokens"] = num_tokens

    def running_stopped(self, reason: str, request_id: str | None, num_not_examined: int) -> None:
        """Why the scan of the running list ended before its end: `request_id` is the first left out."""
        self._step["running_stop"] = {"reason": reason, "request": request_id, "num_not_examined": num_not_examined}

    def allocation_failed(self, request, num_new_tokens: int, victim, rule: str) -> None:
        """Out of blocks for `request`: the numbers at that moment and the victim the rule chose."""
        kv = self._kv
        num_tokens = min(request.num_computed_tokens + num_new_tokens, kv.max_model_len)
        self._step["preemptions"].append({
            "request": request.request_id,
            "tokens": num_new_tokens,
            "blocks_needed": kv.num_blocks_to_allocate(request.request_id, num_tokens, ()),
            "blocks_held": len(kv.get_block_ids(request.request_id)),
            "blocks_free": kv.num_free_blocks,
            "evictable_cached": self.num_evictable_cached(kv),
            "victim": victim.request_id,
            "victim_blocks": len(kv.get_block_ids(victim.request_id)),
            "victim_priority": victim.priority,
            "rule": RULE_SELF if victim is request else rule,
            "rule_order": rule,
        })

    def waiting_examined(self, request, reason: str, num_new_tokens: int, token_budget: int,
                         long_prefill_threshold: int, computed_blocks, num_running: int) -> None:
        """A waiting request the scan looked at: admitted, or the reason it was not."""
        kv = self._kv
        num_cached_tokens = len(computed_blocks) * self._step["limits"]["block_size"]
        asked = request.num_tokens - request.num_computed_tokens - num_cached_tokens
        entry = {
            "request": request.request_id,
            "admitted": reason == WAIT_ADMITTED,
            "reason": reason,
            "asked": asked,
            "given": num_new_tokens if reason == WAIT_ADMITTED else 0,
            "budget_before": token_budget,
            "cached_tokens": num_cached_tokens,
            "num_running": num_running,
            "resumed": request.num_preemptions > 0,
            "priority": request.priority,
        }
        if reason == WAIT_ADMITTED:
            entry["bound"] = self._bound(asked, num_new_tokens, token_budget, long_prefill_threshold, asked)
        if reason in (WAIT_BLOCKS, WAIT_BLOCKS_FULL_CONTEXT):
            computed = request.num_computed_tokens + num_cached_tokens
            rid = request.request_id
            entry["blocks_free"] = kv.num_free_blocks
            entry["blocks_needed_chunk"] = kv.num_blocks_to_allocate(
                rid, min(computed + num_new_tokens, kv.max_model_len), computed_blocks)
            entry["blocks_needed_full"] = kv.num_blocks_to_allocate(
                rid, min(request.num_tokens, kv.max_model_len), computed_blocks)
            entry["tokens"] = num_new_tokens
            entry["evictable_cached"] = self.num_evictable_cached(kv)
        self._step["waiting"].append(entry)

    def waiting_stopped(self, reason: str, request_id: str | None, num_waiting_left: int, num_running: int) -> None:
        """Why the scan of the waiting queue ended with requests still in it: `request_id` is the
        head it stopped at (head-of-line blocking: nobody behind it is looked at)."""
        self._step["waiting_stop"] = {"reason": reason, "request": request_id, "num_waiting_left": num_waiting_left,
                                      "num_running": num_running}

    # -- hooks in the KV cache ----------------------------------------------------------------
    def blocks_allocated(self, request_id: str, new_computed_blocks, new_blocks: list[int], ref_cnt: list[int]) -> None:
        """New blocks from the free queue's head, and prefix hits: a hit whose ref count is now 1
        came off the free queue (revived); above 1 it is newly shared."""
        step = self._step
        if step is None:
            return
        if new_blocks:
            step["allocated"].setdefault(request_id, []).extend(new_blocks)
        for block_id in new_computed_blocks:
            kind = "revived" if ref_cnt[block_id] == 1 else "newly_shared"
            step[kind].setdefault(request_id, []).append(block_id)

    def block_evicted(self, block_id: int) -> None:
        if self._step is not None:
            self._step["evicted"].append(block_id)

    def blocks_freed(self, request_id: str, blocks: list[int], pool) -> None:
        """Where each block of a released table went: still used by another request, the free
        queue's head (no hash: reused first), or its tail keeping a cached prefix (LRU)."""
        if self._step is None:
            return
        head, cached, tail, shared = [], [], [], []
        for block_id in blocks:
            if pool.ref_cnt[block_id] > 0:
                shared.append(block_id)
            elif pool.block_hash[block_id] is not None:
                cached.append(block_id)
            elif pool.unhashed_blocks_reused_first:
                head.append(block_id)
            else:
                tail.append(block_id)
        self._step["frees"].append({"request": request_id, "blocks": len(blocks), "to_head": head,
                                    "to_tail_cached": cached, "to_tail": tail, "still_shared": shared})

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def num_evictable_cached(kv) -> int:
        """Free blocks still holding a cached prefix (O(cached blocks); only on the traced path)."""
        pool = getattr(kv, "block_pool", None)
        if pool is None:
            return 0
        ref_cnt = pool.ref_cnt
        return sum(1 for holders in pool.cached_block_hash_to_block.values() for b in holders if ref_cnt[b] == 0)

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
