"""The step record: what one engine iteration decided and cost. Everything shown derives from it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .kv_events import KVEvent


@dataclass(frozen=True, slots=True)
class ScheduledChunk:
    """One request's share of a step: `num_tokens` new tokens over `num_computed_before` cached ones."""

    request_id: str
    num_tokens: int
    num_computed_before: int
    # "prefill" for prompt (or recomputed context) tokens, "decode" for one token of output.
    kind: str


@dataclass(frozen=True, slots=True)
class StepRecord:
    step: int
    clock_s_before: float
    clock_s_after: float
    step_s: float
    scheduled: list[ScheduledChunk]
    arrived: list[str]
    admitted: list[str]
    resumed: list[str]
    preempted: list[str]
    finished: list[str]
    sampled: list[str]
    # request id -> prefix-cache hit tokens, for each admission or resumption.
    cached_tokens: dict[str, int]
    swapped_out: list[tuple[str, int]]
    swapped_in: list[tuple[str, int]]
    num_blocks_allocated: int
    num_blocks_freed: int
    num_blocks_evicted: int
    num_blocks_hit: int
    # Gauges after the step.
    num_running: int
    num_waiting: int
    num_swapped: int
    num_free_blocks: int
    kv_usage: float
    # What the step time was made of (seconds per component), from the cost model.
    cost_breakdown: dict[str, float] = field(default_factory=dict)
    # The reasons behind the step's decisions, when the scheduler's decision trace is on.
    decisions: dict | None = None
    # Speculative decoding: request id -> draft tokens scheduled for verification in this step
    # (each rides on the request's decode), and request id -> drafts accepted, for the
    # verifications that completed in this step (with async scheduling, an earlier pass's drafts).
    scheduled_spec_decode_tokens: dict[str, int] = field(default_factory=dict)
    num_accepted_tokens: dict[str, int] = field(default_factory=dict)
    # What happened to the KV cache in this step, oldest first, when the simulation was asked for
    # KV events: block-table changes (which blocks each request gained, or that it released its
    # table) and blocks stored in or evicted from the prefix cache. Empty otherwise.
    kv_events: tuple[KVEvent, ...] = ()
    # Served runs: how long after the step's end its last new token reached its client (the ZMQ hop
    # back, the API server's queue, detokenizing and streaming: sim/api_server.py); 0 offline.
    front_end_s: float = 0.0
    # Requests finished from outside at the step's start, before it scheduled (their clients went
    # away: vLLM's `finish_requests(..., FINISHED_ABORTED)`), listed apart from `finished` (which
    # reached their length); vLLM's next SchedulerOutput lists both in `finished_req_ids`.
    aborted: list[str] = field(default_factory=list)

    @property
    def num_batched_tokens(self) -> int:
        return sum(chunk.num_tokens for chunk in self.scheduled)

    @property
    def num_prefill_tokens(self) -> int:
        return sum(chunk.num_tokens for chunk in self.scheduled if chunk.kind == "prefill")

    @property
    def num_decode_tokens(self) -> int:
        return sum(chunk.num_tokens for chunk in self.scheduled if chunk.kind == "decode")

    def to_dict(self) -> dict:
        return asdict(self)
