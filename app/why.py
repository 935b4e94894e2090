"""""Why?" for a session: the decision trace of any past step, and a request's history step by step.

The live simulation runs without the trace. When a viewer asks about a step, the step is replayed
with the trace on from the nearest checkpoint (the run is deterministic, so it is the same step).
Under the byte budget a checkpoint can be hundreds of steps before the step asked about, seconds
of CPU on a large engine: so the replay runs in a worker process (`app.workers`, one at a time,
within `why_timeout_s`), never on the server's event loop or under its GIL. The server hands it
the checkpoint as it is (its frozen bytes) and the scenario, from which the worker builds the
same workload. Answers are kept, as the JSON bytes sent, in one cache of the server's bounded in
bytes (a step's reasons never change: stepping back and forth replays the same run).
"""

from __future__ import annotations

from collections import OrderedDict

from fastapi import Request

from scheduler_core.sim.simulation import Simulation

from .lab_sides import refuse_replay
from .rate_limits import limit
from .why_replay import checkpoint_payload
from .workers import worker_output

# All sessions' answers together: a large engine's step can free or allocate thousands of blocks.
MAX_CACHED_BYTES = 32 * 2**20
# One answer, as the worker writes it (a step of the largest engine is well under 1 MiB).
MAX_ANSWER_BYTES = 8 * 2**20
# A decode run of a request's history is expanded to one row per step up to this many rows.
MAX_HISTORY_ROWS = 20_000


class ReasonsCache:
    """Answers by (session, step), the least recently asked dropped first, within `max_bytes`."""

    def __init__(self, max_bytes: int = MAX_CACHED_BYTES):
        self.max_bytes = max_bytes
        self.num_bytes = 0
        self._answers: OrderedDict[tuple[str, int], bytes] = OrderedDict()

    def get(self, key: tuple[str, int]) -> bytes | None:
        if key in self._answers:
            self._answers.move_to_end(key)
            return self._answers[key]
        return None

    def put(self, key: tuple[str, int], answer: bytes) -> None:
        if key in self._answers or len(answer) > self.max_bytes:
            return
        self._answers[key] = answer
        self.num_bytes += len(answer)
        while self.num_bytes > self.max_bytes:
            self.num_bytes -= len(self._answers.popitem(last=False)[1])


async def step_reasons(request: Request, live, step: int) -> bytes | None:
    """The answer for a step already taken ({"step", "record", "decisions"} as JSON), or None if
    it was not. Uncached: 429 when the replay slot is taken or past the rate limits, 503 past the
    replay's budget."""
    app = request.app.state
    session = live.session
    key = (session.session_id, step)
    if (answer := app.reasons.get(key)) is not None:
        return answer
    if not 0 <= step < session.step:
        return None
    refuse_replay(session.sim, "a step's reasons")
    app.why_workers.check()  # busy: refused before a rate token is taken
    limit(request, "why")
    # No lock needed: checkpoints at or before a step taken are immutable and stay valid whatever
    # the session does meanwhile (play, a long command, a step back past them replays the same run).
    payload = checkpoint_payload(session.sim, session.checkpoints.at_or_before(step))
    job = {"kind": "why", "scenario": session.scenario.to_dict(), "step": step}
    answer = await worker_output(request, job, app.why_workers, app.settings.why_timeout_s, MAX_ANSWER_BYTES,
                                 "replays of a step's reasons", payload)
    app.reasons.put(key, answer)
    return answer


def request_history(timeline: list[dict], sim: Simulation) -> list[list]:
    """One row per step the request ran: [step, tokens scheduled, tokens computed before, blocks
    its tables held after scheduling, "prefill" or "decode"], expanded from the timeline's runs (a
    decode run schedules the same tokens each step: one, or one plus its drafts). A sliding window
    gives back blocks for the tokens already processed: under async scheduling, those of the step
    before are still in flight when the next one is scheduled."""
    rows: list[list] = []
    kv, async_scheduling = sim.kv_view(), sim.config.async_scheduling

    def add(step: int, tokens: int, before: int, kind: str) -> None:
        in_flight = rows[-1][1] if async_scheduling and rows and rows[-1][0] == step - 1 else 0
        rows.append([step, tokens, before, kv.num_blocks_holding(before + tokens, max(0, before - in_flight)), kind])

    for run in timeline:
        if run["kind"] == "prefill":
            add(run["step"], run["tokens"], run["from_token"], "prefill")
        elif run["kind"] == "decode":
            num_steps = run["to_step"] - run["step"] + 1
            per_step = run["tokens"] // num_steps
            starts = run.get("from_tokens") or range(run["from_token"], run["from_token"] + num_steps)
            for offset, before in enumerate(starts):
                add(run["step"] + offset, per_step, before, "decode")
        if len(rows) >= MAX_HISTORY_ROWS:
            return rows[-MAX_HISTORY_ROWS:]
    return rows
