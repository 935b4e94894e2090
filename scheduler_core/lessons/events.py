"""The moments a lesson's story is told at: the first step where something happens in a run.

`StoryEvents` watches an arm's step records and keeps, for each kind of moment (the first prefill
chunk, the first preemption, the first prefix-cache hit, the queue draining, ...), the step it
happened at and the facts a caption quotes (which request, how many tokens, how full the pool was).
`event_holds` checks a recorded moment against a step record, so a test can confirm that what a
caption says is on the screen is in the step shown.

Steps are counted the way the dashboard counts them: "step N" is the state after N engine
iterations, so the record of iteration k (0-based) is shown at step k + 1.
"""

from __future__ import annotations

from ..engine.eagle_hit_rule import eagle_hit_rule
from ..engine.kv_events import BlocksLeftWindow, HitBlockDropped
from ..engine.step_record import StepRecord
from ..utils import cdiv

# Kinds of moment a beat can be bound to, in no particular order.
EVENT_KINDS = (
    "first_admit", "first_chunk", "mixed_chunk", "next_chunk", "budget_full", "batch_full", "peak_running", "first_finish",
    "seat_left_empty", "seats_empty", "refill", "kv_high", "first_preemption", "repeat_preemption", "first_resume", "first_swap",
    "first_hit", "first_eviction", "first_urgent", "first_priority_victim", "queue_drained",
    "first_draft", "first_rejection", "first_full_accept",
    "scheduled_ahead", "missed_batch", "last_token_in_flight", "late_release", "first_window_release",
    "first_hit_block_dropped",
)
KV_HIGH = 0.9
BUSY_DECODES = 8  # a "budget_full" step: this many decodes at least, and prompt chunks filling the rest


class StoryEvents:
    """First occurrences of story moments in one run; feed it every record in order."""

    def __init__(self, sim):
        self.sim = sim
        self.config = sim.config
        self.found: dict[str, dict] = {}
        self._chunked: str | None = None  # the request of the first partial prefill chunk
        self._preempted: dict[str, int] = {}
        self._finished_any = False
        self._waited = False
        self._drained_at: dict | None = None
        self._peak: dict | None = None
        self._last_in_flight: str | None = None  # async: the first request whose last token was in flight
        self._previous: StepRecord | None = None
        # To see a sliding-window group give blocks back (BlocksLeftWindow), or a drafter take the
        # last block of a prefix-cache hit (HitBlockDropped).
        if sim.config.is_hybrid or eagle_hit_rule(sim.config).drops_last_block:
            sim.enable_kv_events()

    def _first(self, kind: str, record: StepRecord, **facts) -> None:
        if kind not in self.found:
            self.found[kind] = self._facts(record, **facts)

    def _facts(self, record: StepRecord, **facts) -> dict:
        # The step's totals, as the batch panel's header and the events log show them, for the
        # questions "Check yourself" asks about the moment (check_yourself.py).
        return {"step": record.step + 1, "running": record.num_running, "waiting": record.num_waiting,
                "kv": round(record.kv_usage * 100, 1), "free_blocks": record.num_free_blocks,
                "clock": round(record.clock_s_after, 3), "batched_tokens": record.num_batched_tokens,
                "num_admitted": len(record.admitted), "num_resumed": len(record.resumed),
                "num_preempted": len(record.preempted), "num_finished": len(record.finished), **facts}

    def observe(self, record: StepRecord) -> None:
        sim, config = self.sim, self.config
        prefill = [c for c in record.scheduled if c.kind == "prefill"]
        decodes = sum(1 for c in record.scheduled if c.kind == "decode")
        chunks = {c.request_id: c for c in record.scheduled}
        for rid in record.admitted:
            held = chunks[rid].num_computed_before + chunks[rid].num_tokens if rid in chunks else 0
            self._first("first_admit", record, request=rid, prompt=sim.request(rid).num_prompt_tokens,
                        hit=record.cached_tokens.get(rid, 0), blocks=cdiv(held, config.block_size),
                        table=len(sim.block_table(rid)))  # what the grid shows it holding: all it reserved
        for chunk in prefill:
            prompt = sim.request(chunk.request_id).num_prompt_tokens
            partial = chunk.num_computed_before + chunk.num_tokens < prompt
            facts = {"request": chunk.request_id, "tokens": chunk.num_tokens, "prompt": prompt, "decodes": decodes,
                     "rest": prompt - chunk.num_tokens - chunk.num_computed_before}
            if partial:
                self._first("first_chunk", record, **facts)
            if partial and decodes and self._chunked is None:
                self._chunked = chunk.request_id  # its next chunk is the "next_chunk" moment
                self._first("mixed_chunk", record, **facts)
            elif chunk.request_id == self._chunked and record.step + 1 > self.found["mixed_chunk"]["step"]:
                self._first("next_chunk", record, request=chunk.request_id, tokens=chunk.num_tokens,
                            start=chunk.num_computed_before, prompt=prompt, decodes=decodes)
        if prefill and decodes >= BUSY_DECODES and record.num_batched_tokens == config.max_num_batched_tokens:
            self._first("budget_full", record, request=prefill[0].request_id, tokens=prefill[0].num_tokens, decodes=decodes,
                        budget=config.max_num_batched_tokens)
        if record.num_running >= config.max_num_seqs:
            self._first("batch_full", record, seats=config.max_num_seqs)
        if self._peak is None or record.num_running > self._peak["running"]:
            self._peak = self._facts(record, used_blocks=self._used_blocks(record))
        for rid in record.finished:
            request = sim.request(rid)
            self._first("first_finish", record, request=rid, output=request.num_output_tokens,
                        blocks=cdiv(request.num_prompt_tokens + request.num_output_tokens, config.block_size))
        if record.finished and record.num_running and record.num_waiting and not (record.admitted or record.resumed):
            self._first("seat_left_empty", record, request=record.finished[0],
                        output=sim.request(record.finished[0]).num_output_tokens)
        if self._finished_any and record.num_waiting and record.num_running < config.max_num_seqs \
                and not (record.admitted or record.resumed):
            self._first("seats_empty", record, empty=config.max_num_seqs - record.num_running)
        if "seats_empty" in self.found and record.admitted:
            self._first("refill", record, request=record.admitted[0], admitted=len(record.admitted))
        self._finished_any = self._finished_any or bool(record.finished)
        if record.kv_usage >= KV_HIGH:
            self._first("kv_high", record)
        for rid in record.preempted:
            request = sim.request(rid)
            swapped = dict(record.swapped_out).get(rid)
            self._preempted[rid] = self._preempted.get(rid, 0) + 1
            facts = {"request": rid, "priority": request.priority, "swapped": swapped or 0,
                     "fate": f"its {swapped} blocks go to CPU memory" if swapped else "its blocks are freed; it will recompute"}
            self._first("first_preemption", record, **facts)
            if self._preempted[rid] == 2:
                self._first("repeat_preemption", record, times=2, **facts)
            urgent = [c.request_id for c in record.scheduled if sim.request(c.request_id).priority < request.priority]
            if urgent:
                self._first("first_priority_victim", record, urgent=urgent[0], **facts)
        for rid in record.resumed:
            self._first("first_resume", record, request=rid, tokens=sim.request(rid).num_prompt_tokens)
        for rid, blocks in record.swapped_out:
            self._first("first_swap", record, request=rid, blocks=blocks)
        for rid, hit in record.cached_tokens.items():
            if hit:
                self._first("first_hit", record, request=rid, tokens=hit, blocks=hit // config.block_size,
                            prompt=sim.request(rid).num_prompt_tokens)
        if record.num_blocks_evicted:
            self._first("first_eviction", record, blocks=record.num_blocks_evicted)
        if "first_window_release" not in self.found:
            # A running request's sliding-window (or local-chunk) group gave blocks back mid-request;
            # `every`: what it would hold if every group kept a block per block_size tokens.
            left = next((e for e in record.kv_events if isinstance(e, BlocksLeftWindow)), None)
            if left is not None:
                request = sim.request(left.request_id)
                self._first("first_window_release", record, request=left.request_id, blocks=len(left.block_ids),
                            group=left.group_id, computed=request.num_computed_tokens,
                            prompt=request.num_prompt_tokens, held=len(sim.block_table(left.request_id)),
                            every=len(config.kv_cache_group_specs) * cdiv(request.num_computed_tokens, config.block_size))
        if "first_hit_block_dropped" not in self.found:
            self._observe_dropped_hit(record)
        for rid in record.admitted:
            if sim.request(rid).priority == 0 and record.num_waiting and config.scheduling_order == "priority":
                self._first("first_urgent", record, request=rid)
        # Speculative decoding, in the synchronous loop, where a step verifies the drafts it schedules.
        # A rejection and a full acceptance are told after the first drafts (one beat per step).
        for rid, drafts in record.scheduled_spec_decode_tokens.items():
            accepted = record.num_accepted_tokens.get(rid, 0)
            facts = {"request": rid, "drafts": drafts, "tokens": 1 + drafts, "accepted": accepted,
                     "rejected": drafts - accepted, "gained": accepted + 1}
            if "first_draft" in self.found and self.found["first_draft"]["step"] < record.step + 1:
                self._first("first_rejection" if accepted < drafts else "first_full_accept", record, **facts)
            self._first("first_draft", record, **facts)
        if sim.engine_loop is not None:
            self._observe_async(record)
        # The queue drains for good: the last step at which the waiting queue goes from some to none.
        if record.num_waiting:
            self._waited = True
        elif self._waited:
            self._waited = False
            self._drained_at = self._facts(record)

    def _observe_async(self, record: StepRecord) -> None:
        """Async scheduling's moments: a pass schedules the next batch before the one in flight is
        back, so a request's first decode counts on a token not yet sampled, and a request whose
        last token is in flight sits out one more schedule, holding its blocks, before it finishes."""
        sim = self.sim
        scheduled = dict.fromkeys(c.request_id for c in record.scheduled)  # in batch order
        decodes = [c for c in record.scheduled if c.kind == "decode"] if "scheduled_ahead" not in self.found else []
        for chunk in decodes:
            request = sim.request(chunk.request_id)
            # A first decode whose token from the prompt came back only after this pass scheduled it.
            if chunk.num_computed_before == request.num_prompt_tokens \
                    and request.token_times and request.token_times[0] > record.clock_s_before:
                self._first("scheduled_ahead", record, request=chunk.request_id, prompt=request.num_prompt_tokens,
                            ahead_ms=round((request.token_times[0] - record.clock_s_before) * 1e3, 1))
        previous, self._previous = self._previous, record
        if previous is not None and previous.scheduled and record.admitted:
            # The previous pass chose its batch, which started on the GPU only when the one before it
            # came back (this pass's start): a request arriving in between waits a batch more.
            rid = record.admitted[0]
            request = sim.request(rid)
            started = max(record.clock_s_before, previous.clock_s_before + sim.host_time.seconds(len(previous.scheduled)))
            if previous.clock_s_before < request.arrival_time < started:
                self._first("missed_batch", record, request=rid, prompt=request.num_prompt_tokens,
                            chosen_ms=round((request.arrival_time - previous.clock_s_before) * 1e3, 1),
                            started_ms=round((started - request.arrival_time) * 1e3, 1))
        if self._last_in_flight is None:
            for rid in scheduled:
                request = sim.request(rid)
                if rid not in record.finished and 0 < request.num_output_placeholders \
                        and request.num_output_tokens + request.num_output_placeholders >= request.max_tokens:
                    self._last_in_flight = rid
                    self._first("last_token_in_flight", record, request=rid, output=request.max_tokens,
                                back=request.num_output_tokens, blocks=len(sim.block_table(rid)))
                    break
        elif self._last_in_flight in record.finished and self._last_in_flight not in scheduled:
            self._first("late_release", record, request=self._last_in_flight,
                        blocks=self.found["last_token_in_flight"]["blocks"])

    def _observe_dropped_hit(self, record: StepRecord) -> None:
        """An admitted request whose prefix-cache hit lost its last matched block to an EAGLE/MTP
        drafter: the block stays cached, and the request computes its tokens again in a block of its
        own (`fresh`, at the place in its table where the cached one would have been)."""
        bs = self.config.block_size
        dropped = {e.request_id: e for e in record.kv_events if isinstance(e, HitBlockDropped)}
        for rid in record.admitted:
            if rid in dropped:
                kept = record.cached_tokens.get(rid, 0) // bs
                self._first("first_hit_block_dropped", record, request=rid, block=dropped[rid].block_id,
                            rule=dropped[rid].rule, fresh=self.sim.block_table(rid)[kept], kept=kept, matched=kept + 1,
                            tokens=kept * bs, matched_tokens=(kept + 1) * bs, recomputed=bs,
                            prompt=self.sim.request(rid).num_prompt_tokens)
                return

    def _used_blocks(self, record: StepRecord) -> int:
        return self.sim.config.num_gpu_blocks - 1 - record.num_free_blocks

    def finish(self, last: StepRecord | None) -> dict[str, dict]:
        """All moments found; `end` is the last step."""
        if self._peak is not None:
            self.found["peak_running"] = self._peak
        if self._drained_at is not None:
            self.found["queue_drained"] = self._drained_at
        if last is not None:
            self.found["end"] = self._facts(last)
        return self.found


def event_holds(kind: str, facts: dict, record: dict) -> bool:
    """Whether the step record shown (a dict as the dashboard receives it: `record_view`) carries
    the moment: the request named was preempted, chunked, hit the cache, ... in that very step."""
    rid = facts.get("request")
    scheduled = {c[0]: c for c in record["scheduled"]}
    if record["step"] + 1 != facts["step"]:
        return False
    if kind in ("first_chunk", "mixed_chunk", "next_chunk"):
        return rid in scheduled and scheduled[rid][3] == "prefill" and scheduled[rid][1] == facts["tokens"]
    if kind == "budget_full":
        decodes = sum(1 for c in record["scheduled"] if c[3] == "decode")
        return sum(c[1] for c in record["scheduled"]) == facts["budget"] and decodes == facts["decodes"] >= BUSY_DECODES
    if kind in ("first_preemption", "repeat_preemption", "first_priority_victim"):
        return rid in record["preempted"] and (kind != "first_priority_victim" or facts["urgent"] in scheduled)
    if kind == "first_swap":
        return any(r == rid for r, _ in record["swapped_out"])
    if kind == "first_hit":
        return record["cached_tokens"].get(rid, 0) == facts["tokens"] > 0
    if kind == "first_eviction":
        return record["blocks_evicted"] > 0
    if kind == "first_finish":
        return rid in record["finished"]
    if kind == "seat_left_empty":
        return rid in record["finished"] and record["running"] > 0 and record["waiting"] > 0 and not record["admitted"]
    if kind in ("first_admit", "refill"):
        return rid in record["admitted"]
    if kind == "first_urgent":
        return rid in record["admitted"] and record["waiting"] > 0
    if kind == "first_resume":
        return rid in record["resumed"]
    if kind in ("batch_full", "peak_running"):
        return record["running"] == facts["running"]
    if kind == "seats_empty":
        return record["waiting"] > 0 and not record["admitted"] and record["running"] == facts["running"]
    if kind == "kv_high":
        return record["kv_usage"] >= KV_HIGH
    if kind == "queue_drained":
        return record["waiting"] == 0
    if kind in ("first_draft", "first_rejection", "first_full_accept"):
        drafts = record["scheduled_spec_decode_tokens"].get(rid)
        return (drafts == facts["drafts"] and scheduled[rid][1] == 1 + drafts
                and record["num_accepted_tokens"].get(rid) == facts["accepted"])
    if kind == "scheduled_ahead":
        return rid in scheduled and scheduled[rid][3] == "decode" and scheduled[rid][2] == facts["prompt"]
    if kind == "missed_batch":
        return rid in record["admitted"] and rid in scheduled and scheduled[rid][3] == "prefill"
    if kind == "last_token_in_flight":
        return rid in scheduled and scheduled[rid][3] == "decode" and rid not in record["finished"]
    if kind == "first_window_release":
        return rid in scheduled and rid not in record["finished"] and record["blocks_freed"] >= facts["blocks"]
    if kind == "first_hit_block_dropped":
        return rid in record["admitted"] and record["cached_tokens"].get(rid, 0) == facts["tokens"]
    if kind == "late_release":
        return rid in record["finished"] and rid not in scheduled and record["blocks_freed"] >= facts["blocks"]
    return kind in ("opening", "end")
