"""`lab check`'s engine room: the student's policy and the reference run the same workload in
lockstep, and the first step whose batches differ is the result."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.step_record import StepRecord
from ..sim.simulation import Simulation, SimulationStalled
from ..timing.cost_model import CostModel
from ..timing.presets import GPUS, MODELS
from ..workload.workload import Workload
from .exercises import Exercise, WorkloadSpec
from .explain import explain
from .policy import InvalidBatch, LabScheduler
from .student import StudentPolicy
from .view import EngineView


@dataclass(frozen=True)
class Chunk:
    """One request's share of a step, as the report shows it."""

    request: str
    tokens: int
    kind: str  # "prefill" or "decode"


@dataclass(frozen=True)
class Batch:
    """One step's decision: the chunks (running requests first, then admissions) and the victims."""

    chunks: tuple[Chunk, ...]
    preempted: tuple[str, ...]

    def tokens(self) -> dict[str, int]:
        return {chunk.request: chunk.tokens for chunk in self.chunks}

    def to_dict(self) -> dict:
        return {"scheduled": [{"request": c.request, "tokens": c.tokens, "kind": c.kind} for c in self.chunks],
                "preempted": list(self.preempted)}


@dataclass
class Divergence:
    """Where the student's policy parted from the reference: at `step` (numbered as the dashboard
    numbers steps: the first is step 1), `kind` "diverged" (a different, valid batch) or "invalid"
    (a batch the engine could not run)."""

    workload: str
    step: int
    kind: str
    message: str
    yours: Batch | None
    reference: Batch

    def to_dict(self) -> dict:
        return {"workload": self.workload, "step": self.step, "kind": self.kind, "message": self.message,
                "yours": self.yours.to_dict() if self.yours else None, "reference": self.reference.to_dict()}


@dataclass
class WorkloadResult:
    name: str
    num_requests: int
    num_steps: int
    divergence: Divergence | None = None

    @property
    def passed(self) -> bool:
        return self.divergence is None


@dataclass
class CheckResult:
    exercise: Exercise
    workloads: list[WorkloadResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.workloads)

    @property
    def divergence(self) -> Divergence | None:
        return next((result.divergence for result in self.workloads if result.divergence), None)

    def to_dict(self) -> dict:
        ex = self.exercise
        return {"exercise": ex.number, "name": ex.name, "passed": self.passed,
                "workloads": [{"name": w.name, "requests": w.num_requests, "steps": w.num_steps, "passed": w.passed}
                              for w in self.workloads],
                "divergence": self.divergence.to_dict() if self.divergence else None}


def _record_batch(record: StepRecord) -> Batch:
    return Batch(tuple(Chunk(c.request_id, c.num_tokens, c.kind) for c in record.scheduled), tuple(record.preempted))


def _view_batch(view: EngineView, tokens: dict[str, int], preempted: list[str]) -> Batch:
    """The student's batch, read against the view it was decided on (also when it could not run)."""
    requests = {request.request_id: request for request in view.running + view.waiting}
    chunks = []
    for rid, num_tokens in tokens.items():
        request = requests.get(rid)
        decode = request is not None and num_tokens == request.num_remaining_tokens == 1 \
            and request.num_computed_tokens >= request.num_prompt_tokens
        chunks.append(Chunk(str(rid), num_tokens, "decode" if decode else "prefill"))
    return Batch(tuple(chunks), tuple(preempted))


def _admissions(batch: Batch, view: EngineView) -> list[str]:
    waiting = {request.request_id for request in view.waiting}
    return [chunk.request for chunk in batch.chunks if chunk.request in waiting]


def same_decision(yours: Batch, reference: Batch, view: EngineView) -> bool:
    """The same tokens for the same requests, the same victims, admissions in the same order."""
    return (yours.tokens() == reference.tokens() and set(yours.preempted) == set(reference.preempted)
            and _admissions(yours, view) == _admissions(reference, view))


def simulations(exercise: Exercise, workload: Workload, student_cls: type) -> tuple[Simulation, Simulation]:
    """The reference's simulation (its decision trace on) and the student's, on the same workload, engine
    settings and cost model; the student's differs only in its scheduler."""
    config = exercise.engine_config()
    # The student's schedule() sees the engine between steps: no batch queue (async scheduling) in between.
    assert not config.async_scheduling
    cost_model = CostModel(MODELS["llama-3.1-8b"], GPUS["h200"])
    reference = Simulation(config, workload, cost_model)
    reference.scheduler.enable_decision_trace()
    yours = Simulation(config, workload, cost_model)
    # Swapped before the first step, when the scheduler still holds nothing.
    yours.scheduler = LabScheduler(config, StudentPolicy(student_cls), exercise.has_token_budget)
    return reference, yours


def check_workload(exercise: Exercise, spec: WorkloadSpec, student_cls: type) -> WorkloadResult:
    workload = spec.build()
    reference, yours = simulations(exercise, workload, student_cls)
    lab = yours.scheduler
    result = WorkloadResult(spec.name, len(workload.requests), 0)
    while not reference.done:
        step = reference.step_index + 1  # the step about to run, numbered as the dashboard numbers it
        ref_record = reference.step()
        ref_batch = _record_batch(ref_record)
        result.num_steps = step
        try:
            your_batch = _record_batch(yours.step()) if not yours.done else Batch((), ())
        except InvalidBatch as e:
            result.divergence = Divergence(spec.name, step, "invalid", f"step {step}: {e}", _student_batch(lab), ref_batch)
            return result
        except SimulationStalled:
            your_batch = _student_batch(lab)
        if not same_decision(your_batch, ref_batch, lab.last_view):
            message = explain(exercise, step, lab.last_view, your_batch, ref_batch, ref_record.decisions)
            result.divergence = Divergence(spec.name, step, "diverged", message, your_batch, ref_batch)
            return result
    return result


def _student_batch(lab: LabScheduler) -> Batch | None:
    batch = lab.last_batch
    return _view_batch(lab.last_view, batch.tokens, batch.preempt) if batch is not None else None


def check(exercise: Exercise, student_cls: type) -> CheckResult:
    """Every workload of the exercise, stopping at the first that diverges."""
    result = CheckResult(exercise)
    for spec in exercise.workloads:
        result.workloads.append(check_workload(exercise, spec, student_cls))
        if not result.workloads[-1].passed:
            break
    return result
