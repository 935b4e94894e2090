""""Why?" for a session: the decision trace of any past step, and a request's history step by step.

The live simulation runs without the trace. When a viewer asks about a step, the step is replayed
with the trace on from the nearest checkpoint, on a scratch copy (the run is deterministic, so it
is the same step); the last few answers are kept, since the page asks about the current step often.
"""

from __future__ import annotations

import asyncio
import copy
from collections import OrderedDict

from scheduler_core.engine.decision_trace import traced_record
from scheduler_core.engine.kv_cache import KVCacheView

from .frames import finite, record_view

MAX_CACHED_STEPS = 8
# A decode run of a request's history is expanded to one row per step up to this many rows.
MAX_HISTORY_ROWS = 20_000


class StepReasons:
    """The reasons behind past steps of one session, computed on demand and cached (a step's
    reasons never change: stepping back and forth replays the same run)."""

    def __init__(self) -> None:
        self._cache: OrderedDict[int, dict] = OrderedDict()

    def cached(self, step: int) -> dict | None:
        """The answer for `step` if it was computed already (no work), else None."""
        if step in self._cache:
            self._cache.move_to_end(step)
            return self._cache[step]
        return None

    async def of_step(self, live, step: int) -> dict | None:
        """{"step", "record", "decisions"} for a step already taken, or None if it was not."""
        if (answer := self.cached(step)) is not None:
            return answer
        async with live.lock:
            session = live.session
            if not 0 <= step < session.step:
                return None
            checkpoint = session.checkpoints.at_or_before(step)
            sim = copy.copy(session.sim)
        # Outside the lock: the checkpoint is immutable and the scratch copy shares nothing mutable.
        record = await asyncio.to_thread(traced_record, sim, checkpoint.state, step)
        if record is None:
            return None
        answer = finite({"step": step, "record": record_view(record), "decisions": record.decisions})
        self._cache[step] = answer
        if len(self._cache) > MAX_CACHED_STEPS:
            self._cache.popitem(last=False)
        return answer


def request_history(timeline: list[dict], kv: KVCacheView) -> list[list]:
    """One row per step the request ran: [step, tokens scheduled, tokens computed before, blocks
    held after scheduling, "prefill" or "decode"], expanded from the timeline's runs (a decode run
    schedules the same tokens each step: one, or one plus its drafts)."""
    rows: list[list] = []
    for run in timeline:
        if run["kind"] == "prefill":
            before = run["from_token"]
            rows.append([run["step"], run["tokens"], before, kv.num_blocks_holding(before + run["tokens"]), "prefill"])
        elif run["kind"] == "decode":
            num_steps = run["to_step"] - run["step"] + 1
            per_step = run["tokens"] // num_steps
            starts = run.get("from_tokens") or range(run["from_token"], run["from_token"] + num_steps)
            for offset, before in enumerate(starts):
                rows.append([run["step"] + offset, per_step, before, kv.num_blocks_holding(before + per_step), "decode"])
        if len(rows) >= MAX_HISTORY_ROWS:
            return rows[-MAX_HISTORY_ROWS:]
    return rows
