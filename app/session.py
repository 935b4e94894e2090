"""A live session: one simulation, its history for stepping back, breakpoints and playback.

Every change goes through `advance()` or `rewind()` (`seek()` is the two at once). Stepping
back restores the nearest checkpoint at or before the target and replays forward: the
simulation is deterministic, so the state shown at step K is the state it had at step K.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import deque

from scheduler_core.engine.step_record import StepRecord
from scheduler_core.scenario.scenario import Scenario

from . import wire
from .breakpoints import Breakpoint
from .checkpoints import Checkpoint, Checkpoints, MemoryBudget
from .event_log import events_of
from .frames import (
    PROTOCOL_VERSION,
    Delta,
    KVChanges,
    changed_blocks_view,
    finite,
    kv_groups_of,
    metrics_view,
    point_view,
    queues_view,
    record_view,
    request_view,
    snapshot_kv,
    tables_view,
    visible_requests,
)
from .history import ChartHistory, append_capped
from .settings import Settings
from .why import request_history

EVENT_HISTORY = 2000


class Session:
    def __init__(self, session_id: str, scenario: Scenario, settings: Settings, lesson: tuple[str, str] | None = None,
                 origin: str = "", budget: MemoryBudget | None = None, sim=None):
        self.session_id = session_id
        self.scenario = scenario
        # The URL query that recreates this run (`/?<origin>`), so links outlive the session.
        self.origin = origin
        # (lesson name, arm) when the session plays one arm of a guided scenario.
        self.lesson = lesson
        self.settings = settings
        self.control_token = secrets.token_urlsafe(18)
        self.sim = scenario.build(keep_finished=True) if sim is None else sim  # given: a served engine (app/openai)
        # Each step's record carries its KV events; the blocks and tables they touched wait here for the next delta.
        self.sim.enable_kv_events()
        # vLLM's Prometheus counters for /metrics, part of every checkpoint (so step back restores them).
        self.sim.enable_vllm_stats()
        self.kv_changes = KVChanges()
        # Told of every step taken (`stepped(record)`) and of every jump back (`rewound()`): the KV event feed.
        self.step_observers: list = []
        # Step back: simulation snapshots with the event log as it was then (the log is bounded, so
        # replaying from a checkpoint alone could not bring back events it had already dropped).
        self.checkpoints = Checkpoints(Checkpoint(self.sim.snapshot(), (), None), settings.checkpoint_interval,
                                       settings.max_checkpoints, budget or MemoryBudget.of(settings))
        self.checkpoint_due = False  # this step's checkpoint, not taken yet (`take_due_checkpoint`)
        # Chart points, thinned as the run grows; truncated on step back.
        self.history = ChartHistory(settings.max_chart_points)
        self.events: deque[dict] = deque(maxlen=EVENT_HISTORY)
        # Events since the last publish, and the counter that gives each event its id (clients
        # use the ids to merge a snapshot's recent events with the ones streamed after it).
        self.unpublished_events: list[dict] = []
        self.event_counter = 0
        # Per request, its life so far: prefill and decode runs and instants (for the inspector).
        self.timelines: dict[str, list[dict]] = {}
        self.last_record: StepRecord | None = None
        self.seq = 0
        self.playing = False
        self.steps_per_s = 20.0
        # When set, play keeps simulated time at this multiple of wall time instead (1.0: real time).
        self.time_ratio: float | None = None
        self.breakpoints: list[Breakpoint] = []
        self.last_activity = time.monotonic()
        # (sequence number, status, encoded frame): a snapshot is built once per state and status, however
        # many viewers ask for it.
        self._snapshot_cache: tuple[int, dict, bytes] | None = None

    @property
    def step(self) -> int:
        return self.sim.step_index

    @property
    def done(self) -> bool:
        return self.sim.done or self.out_of_steps

    @property
    def out_of_steps(self) -> bool:
        """The session's step budget is spent: it plays no further (step back still works)."""
        return self.sim.step_index >= self.settings.max_steps_per_session

    # -- moving through time ----------------------------------------------------------------
    def _step_once(self) -> StepRecord:
        self.take_due_checkpoint()
        record = self.sim.step()
        self.kv_changes.add(record.kv_events)
        for observer in self.step_observers:
            observer.stepped(record)
        self.history.append(point_view(record))
        for event in events_of(record, self.scenario.engine.scheduling_order):
            self.event_counter += 1
            event["id"] = self.event_counter
            self.events.append(event)
            self.unpublished_events.append(event)
        if len(self.unpublished_events) > EVENT_HISTORY:  # a long jump: viewers get the latest
            del self.unpublished_events[:-EVENT_HISTORY]
        self._extend_timelines(record)
        self.last_record = record
        self.checkpoint_due = self.sim.step_index % self.checkpoints.interval == 0
        return record

    def _extend_timelines(self, record: StepRecord) -> None:
        step, start, end = record.step, record.clock_s_before, record.clock_s_after
        for rid in record.admitted + record.resumed:
            kind = "admitted" if rid in record.admitted else "resumed"
            append_capped(self.timelines.setdefault(rid, []),
                          {"kind": kind, "step": step, "s": start, "cached": record.cached_tokens.get(rid, 0)})
        for chunk in record.scheduled:
            runs = self.timelines.setdefault(chunk.request_id, [])
            last = runs[-1] if runs else None
            # A decode run spans steps that each scheduled the same tokens (one, or one plus the
            # same drafts), so stepping back can cut it short exactly. Drafts the verification
            # rejects are rolled back, so where each drafted step started is kept step by step.
            if (last and last["kind"] == chunk.kind == "decode" and last["to_step"] == step - 1
                    and last["tokens"] == chunk.num_tokens * (step - last["step"])):
                last.update(to_step=step, to_s=end, tokens=last["tokens"] + chunk.num_tokens)
                if "from_tokens" in last:
                    last["from_tokens"].append(chunk.num_computed_before)
            else:
                run = {"kind": chunk.kind, "step": step, "to_step": step, "s": start, "to_s": end,
                       "tokens": chunk.num_tokens, "from_token": chunk.num_computed_before}
                if chunk.kind == "decode" and chunk.num_tokens > 1:
                    run["from_tokens"] = [chunk.num_computed_before]
                append_capped(runs, run)
        for kind, ids in (("preempted", record.preempted), ("finished", record.finished), ("aborted", record.aborted)):
            for rid in ids:
                append_capped(self.timelines.setdefault(rid, []), {"kind": kind, "step": step, "s": end})

    def _truncate_timelines(self, step: int, clock_s: float) -> None:
        """Forget everything from `step` on (stepping back); `clock_s` is the clock at `step`."""
        for rid in list(self.timelines):
            runs = [run for run in self.timelines[rid] if run["step"] < step]
            for run in runs:
                if run.get("to_step", -1) >= step:  # a decode run cut short: the same tokens each step
                    per_step = run["tokens"] // (run["to_step"] - run["step"] + 1)
                    run.update(to_step=step - 1, tokens=per_step * (step - run["step"]), to_s=clock_s)
                    if "from_tokens" in run:
                        del run["from_tokens"][step - run["step"]:]
            if runs:
                self.timelines[rid] = runs
            else:
                del self.timelines[rid]

    def request_detail(self, request_id: str, with_history: bool = False) -> dict | None:
        """One request as the inspector shows it, or None if it has not arrived by this step."""
        try:
            request = self.sim.request(request_id)
        except KeyError:
            return None
        times = request.token_times
        latencies = {
            "queue_s": request.first_scheduled_time - request.arrival_time if request.first_scheduled_time is not None else None,
            "ttft_s": times[0] - request.arrival_time if times else None,
            "tpot_s": (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else None,
            "e2e_s": request.finish_time - request.arrival_time if request.finish_time is not None else None,
        }
        timeline = self.timelines.get(request_id, [])
        # Tokens scheduled whose output has not come back (async scheduling); an aborted request's are dropped.
        return {"request": request_view(request), "latencies": latencies, "timeline": timeline,
                "in_flight": 0 if request.status.is_finished else request.num_output_placeholders,
                "history": request_history(timeline, self.sim) if with_history else None,
                "block_table": self.sim.block_table(request_id), "step": self.step, "clock_s": self.sim.clock_s}

    def take_due_checkpoint(self) -> None:
        """The checkpoint of this step, if one is due: before the next step at the latest. Play
        takes it in a thread (a snapshot of a big engine takes tens of milliseconds), after the
        step's frame is out, so the pages' acknowledgements are answered meanwhile."""
        if self.checkpoint_due:
            self.checkpoint_due = False
            self.checkpoints.add(Checkpoint(self.sim.snapshot(), tuple(self.events), self.last_record))

    def advance(self, num_steps: int, stop_at_breakpoints: bool = False, deadline: float | None = None,
                checkpoint_later: bool = False) -> tuple[list[StepRecord], Breakpoint | None]:
        """Up to `num_steps` steps (fewer at the end, at a breakpoint if asked, or once the
        monotonic clock passes `deadline`, after at least one step). With `checkpoint_later`, the
        steps stop at one that makes a checkpoint due, left to the caller (`take_due_checkpoint`,
        in a thread) rather than taken here on the event loop."""
        records: list[StepRecord] = []
        hit = None
        for _ in range(num_steps):
            if self.done or (records and deadline is not None and time.monotonic() >= deadline):
                break
            if checkpoint_later and self.checkpoint_due:
                break
            record = self._step_once()
            records.append(record)
            if stop_at_breakpoints:
                hit = next((bp for bp in self.breakpoints if bp.hit(record)), None)
                if hit:
                    break
        if not checkpoint_later:
            self.take_due_checkpoint()
        return records, hit

    def advance_until(self, clock_s: float, max_steps: int, deadline: float | None = None,
                      checkpoint_later: bool = False) -> tuple[list[StepRecord], Breakpoint | None]:
        """Steps until the simulated clock reaches `clock_s` (at most `max_steps`, and none once past
        `deadline` after the first), stopping at breakpoints."""
        records: list[StepRecord] = []
        while len(records) < max_steps and not self.done and self.sim.clock_s < clock_s:
            if records and deadline is not None and time.monotonic() >= deadline:
                break
            step_records, hit = self.advance(1, stop_at_breakpoints=True, checkpoint_later=checkpoint_later)
            records += step_records
            if hit:
                return records, hit
        return records, None

    def seek(self, target_step: int) -> None:
        """Go to the state after `target_step` steps, at once (a live session replays in slices)."""
        self.rewind(target_step)
        while self.sim.step_index < target_step and not self.done:
            self._step_once()
        self.take_due_checkpoint()
        # Replayed steps reach viewers as a snapshot, not as changes or events.
        self.kv_changes.take()
        self.take_events()

    def rewind(self, target_step: int) -> None:
        """Back to the last checkpoint at or before `target_step`, if behind; replaying on from it is exact."""
        target_step = max(0, target_step)
        if target_step < self.sim.step_index:
            checkpoint = self.checkpoints.at_or_before(target_step)
            self.checkpoints.truncate_after(checkpoint.step_index)
            self.sim.restore(checkpoint.state)
            self.checkpoint_due = False
            self.kv_changes.take()
            last = checkpoint.last_record
            self.history.truncate(checkpoint.step_index, point_view(last) if last else None)
            self._truncate_timelines(checkpoint.step_index, checkpoint.state.clock_s)
            self.events = deque(checkpoint.events, maxlen=EVENT_HISTORY)
            self.last_record = checkpoint.last_record
            for observer in self.step_observers:
                observer.rewound()

    def take_events(self) -> list[dict]:
        events, self.unpublished_events = self.unpublished_events, []
        return events

    # -- frames -----------------------------------------------------------------------------
    def _envelope(self, kind: str) -> dict:
        return {"v": PROTOCOL_VERSION, "type": kind, "seq": self.seq, "step": self.step,
                "clock_s": self.sim.clock_s, "done": self.done}

    def delta_frame(self, records: list[StepRecord]) -> Delta:
        """The changes of the steps just taken; advances the sequence number."""
        self.seq += 1
        sim = self.sim
        # Requests whose status changed go out whole; the others that ran only as progress.
        changed: set[str] = set()
        ran: set[str] = set()
        for record in records:
            changed.update(record.arrived, record.admitted, record.resumed, record.preempted, record.finished, record.aborted)
            changed.update(rid for rid, _ in record.swapped_out)
            ran.update(c.request_id for c in record.scheduled)
        progress = {}
        for rid in ran - changed:
            request = sim.request(rid)
            if request.token_times and request.token_times[0] > records[0].clock_s_before:
                changed.add(rid)  # its first token came in these steps: `first_token_s` is new
                continue
            progress[rid] = (request.num_computed_tokens, request.num_output_tokens)
        kv, kv_groups = sim.kv_view(), kv_groups_of(self.scenario.engine)
        changed_blocks, changed_tables = self.kv_changes.take()
        self._snapshot_cache = None
        return Delta(
            self._envelope("delta"),
            from_step=records[0].step if records else self.step,
            num_steps=len(records),
            last_record=record_view(records[-1]) if records else None,
            requests={rid: request_view(sim.request(rid)) for rid in changed},
            progress=progress,
            tables=tables_view(kv, changed_tables, kv_groups),
            blocks=changed_blocks_view(kv, changed_blocks, kv_groups),
            queues=queues_view(sim),
            points=[point_view(r) for r in records],
            metrics=metrics_view(sim) if any(r.finished or r.admitted or r.resumed for r in records) else None,  # prefix hits
            kv_groups=kv_groups,
        )

    def jump(self) -> None:
        """Mark a change that viewers get as a snapshot, not a delta (seek, long runs)."""
        self.seq += 1
        self.kv_changes.take()
        self._snapshot_cache = None

    def snapshot_frame(self) -> bytes:
        """Everything the dashboard draws, at the current step (built once per sequence number)."""
        status = self.status()
        if self._snapshot_cache and self._snapshot_cache[:2] == (self.seq, status):
            return self._snapshot_cache[2]
        sim = self.sim
        queues = queues_view(sim)
        kv = sim.kv_view()
        kv_header, kv_arrays = snapshot_kv(kv, kv_groups_of(self.scenario.engine))
        frame = self._envelope("snapshot")
        frame.update({
            "session": self.info(),
            "status": status,
            "requests": visible_requests(sim, queues),
            "queues": queues,
            **kv_header,
            "points": self.history.points(),
            "metrics": metrics_view(sim),
            "last_record": record_view(self.last_record) if self.last_record else None,
            "events": list(self.events)[-300:],
        })
        data = wire.encode(frame, kv_arrays)
        # No draining of the change lists here: they belong to the next delta, which the other
        # viewers still need whole.
        self._snapshot_cache = (self.seq, status, data)
        return data

    def status(self) -> dict:
        return {"playing": self.playing, "steps_per_s": self.steps_per_s, "time_ratio": self.time_ratio,
                "step": self.step, "done": self.done,
                "breakpoints": [b.to_dict() for b in self.breakpoints]}

    def status_frame(self, viewers: int, note: str | None = None) -> str:
        frame = self._envelope("status")
        frame.update(self.status(), viewers=viewers)
        if note:
            frame["note"] = note
        return json.dumps(frame, separators=(",", ":"))

    def info(self) -> dict:
        engine = self.scenario.engine
        return finite({
            "session_id": self.session_id,
            "scenario": self.scenario.to_dict(),
            "num_requests": self.sim.num_requests,
            "num_gpu_blocks": engine.num_gpu_blocks,
            "block_size": engine.block_size,
            "max_num_batched_tokens": engine.max_num_batched_tokens,
            "max_num_seqs": engine.max_num_seqs,
            "max_model_len": engine.max_model_len,
            "lesson": {"name": self.lesson[0], "arm": self.lesson[1]} if self.lesson else None,
            "origin": self.origin,
        })
