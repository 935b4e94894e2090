"""The lab's exercises, in order, each one rule more than the last, with the engine settings and the
small workloads each is graded on (fixed seeds: every run of `lab check` sees the same requests)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..engine.config import EngineConfig
from ..workload.workload import RequestSpec, Workload, unique_prompt


@dataclass(frozen=True)
class WorkloadSpec:
    """`num_requests` requests drawn from `seed`: prompt and output lengths uniform in their ranges,
    each arriving at a step drawn from 0 to `last_arrival_step` (the engine's step, not seconds, so
    arrivals do not depend on the cost model)."""

    name: str
    seed: int
    num_requests: int
    prompt_len: tuple[int, int]
    output_len: tuple[int, int]
    last_arrival_step: int
    # Priorities drawn from 0..max_priority (0: every request at priority 0).
    max_priority: int = 0

    def describe(self) -> str:
        # An arrival at step index k waits from step k + 1 on, as the dashboard numbers steps.
        last = self.last_arrival_step + 1
        arrivals = "all waiting at step 1" if last == 1 else f"arriving at steps 1-{last}"
        priorities = f", priorities 0-{self.max_priority}" if self.max_priority else ""
        return (f"`{self.name}`: {self.num_requests} requests, prompts of {self.prompt_len[0]}-{self.prompt_len[1]} "
                f"tokens, {self.output_len[0]}-{self.output_len[1]} output tokens, {arrivals}{priorities} (seed {self.seed})")

    def build(self) -> Workload:
        rng = random.Random(self.seed)
        specs = []
        for i in range(self.num_requests):
            arrival = rng.randint(0, self.last_arrival_step)
            prompt_len = rng.randint(*self.prompt_len)
            output_len = rng.randint(*self.output_len)
            priority = rng.randint(0, self.max_priority) if self.max_priority else 0
            specs.append(RequestSpec(f"req-{i}", arrival, unique_prompt(i, prompt_len), output_len, priority))
        specs.sort(key=lambda spec: spec.arrival_time)
        return Workload(specs, description=self.name, arrivals_by_step=True)


@dataclass(frozen=True)
class Exercise:
    number: int
    name: str
    title: str
    # What the student's policy has to do, as the README and `lab check` state it.
    rules: str
    # EngineConfig fields; prefix caching is off in every exercise.
    settings: dict
    workloads: tuple[WorkloadSpec, ...]
    # Whether a step's tokens are bounded (static batching has no per-step budget).
    has_token_budget: bool = True
    optional: bool = False
    reference_name: str = "vLLM V1's scheduler"

    def engine_config(self) -> EngineConfig:
        return EngineConfig(enable_prefix_caching=False, **self.settings)


SMALL = dict(block_size=16, max_model_len=2048)

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        1, "static", "Static batching",
        "When nothing is running, form a batch: admit waiting requests from the head of the queue, up to "
        "max_num_seqs, each with its whole prompt. Then every member decodes one token a step until the last "
        "one finishes; only then form the next batch. There is no token budget.",
        dict(SMALL, policy="static", max_num_seqs=4, num_gpu_blocks=512),
        (WorkloadSpec("burst", 101, 9, (16, 200), (4, 40), 0),
         WorkloadSpec("trickle", 102, 10, (16, 200), (4, 40), 60)),
        has_token_budget=False, reference_name="servescope's static policy",
    ),
    Exercise(
        2, "continuous", "Continuous batching",
        "Every step: each running request decodes one token; then admit waiting requests from the head of the "
        "queue, with their whole prompt, while fewer than max_num_seqs are running. A finished request's seat "
        "is filled at the next step, not when the whole batch is done. Prompts are not chunked.",
        dict(SMALL, max_num_seqs=4, num_gpu_blocks=512, max_num_batched_tokens=2048, enable_chunked_prefill=False),
        (WorkloadSpec("burst", 201, 9, (16, 200), (4, 40), 0),
         WorkloadSpec("trickle", 202, 12, (16, 200), (4, 40), 80)),
    ),
    Exercise(
        3, "chunked-prefill", "A token budget with chunked prefill",
        "Every step has a token budget. Running requests come first, in order: each gets what it has left to "
        "compute (1 for a decode, the rest of its prompt for a prefill), capped by the budget that is left. "
        "Then admit waiting requests from the head while budget and seats remain: each gets its prompt, "
        "capped by the budget left (a chunk; the rest follows in later steps).",
        dict(SMALL, max_num_seqs=8, num_gpu_blocks=1024, max_num_batched_tokens=256, enable_chunked_prefill=True),
        (WorkloadSpec("long-prompts", 301, 8, (100, 700), (8, 40), 10),
         WorkloadSpec("mixed", 302, 14, (16, 500), (4, 60), 60)),
    ),
    Exercise(
        4, "preemption", "Preemption when blocks run out",
        "As exercise 3, but the KV cache is small. When a running request's tokens need more blocks than are "
        "free, preempt the newest running request (the last in view.running) and try again; if the newest is "
        "the request itself, preempt it and schedule no more running requests this step. Preemption is by "
        "recompute: the victim goes back to the head of the waiting queue and starts again from token 0. A step "
        "that preempted admits nobody. Admit a waiting request only if the free blocks hold its whole context "
        "(view.blocks_needed(request, request.num_remaining_tokens)); stop at the first one that does not fit: "
        "nobody behind it is admitted (head-of-line blocking, as in vLLM).",
        dict(SMALL, max_num_seqs=8, num_gpu_blocks=40, max_num_batched_tokens=256, enable_chunked_prefill=True),
        (WorkloadSpec("tight", 401, 8, (40, 200), (40, 160), 10),
         WorkloadSpec("squeeze", 402, 12, (40, 160), (20, 200), 40),
         # Prompts of up to 30 blocks in a pool of 39: a chunk may fit where the whole context does not.
         WorkloadSpec("long-prompts", 407, 10, (40, 480), (20, 120), 40)),
    ),
    Exercise(
        5, "priority", "Priority (optional)",
        "As exercise 4, but the waiting queue is ordered by priority (lower value first, then arrival: the "
        "view lists it in that order) and the preemption victim is the running request that ranks last: the "
        "largest (priority, arrival_index). A victim already given tokens earlier in this step loses them "
        "(they return to the budget). A request that is its own victim does not end the scan: the running "
        "requests after it rank higher and may fit in the blocks it gave back.",
        dict(SMALL, max_num_seqs=8, num_gpu_blocks=40, max_num_batched_tokens=256, enable_chunked_prefill=True,
             scheduling_order="priority"),
        (WorkloadSpec("urgent-late", 501, 10, (40, 160), (30, 160), 40, max_priority=2),),
        optional=True,
    ),
)


def exercise(number: int) -> Exercise:
    return EXERCISES[number - 1]
