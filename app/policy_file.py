"""`serve --policy-file FILE [--exercise N]`: a student's scheduler (the lab's: `servescope lab new`)
shown in compare mode beside vLLM's, on one of the exercise's workloads, in lockstep.

Loading the file runs its Python, so it is named only on the command line of whoever starts the
server, and loaded once, before the server answers anything: the web only ever asks for "your
scheduler" or "vLLM's" of the exercise chosen here (`routes/lab.py`), never for a file. A public
server (`--public`) refuses the flag: its pages are for strangers, and so would be the code.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from dataclasses import dataclass

from fastapi import FastAPI

from scheduler_core.bounds import MAX_NAME_CHARS
from scheduler_core.errors import ConfigError
from scheduler_core.lab.exercises import EXERCISES, Exercise, WorkloadSpec, exercise
from scheduler_core.lab.grader import Divergence, check, simulations
from scheduler_core.lab.policy import InvalidBatch
from scheduler_core.lab.student import LabFileError, load_student
from scheduler_core.scenario.scenario import Scenario
from scheduler_core.sim.simulation import Simulation, SimulationStalled

from .lab_sides import mark_lab_side

# The student's run ends, at the latest, after this many times the reference's steps: a policy that
# never finishes (one that never preempts can leave requests waiting for blocks forever) stops there.
MAX_STEPS_PER_REFERENCE_STEP = 4


class PolicyFileError(ConfigError):
    """The student's file failed at startup: its file:line and source line, and `serve` exits 2 (as for
    any bad setting of the command line)."""

    def __init__(self, error: LabFileError):
        source = f"\n    {error.source_line}" if error.source_line else ""
        super().__init__(error.where, error.message + source)


class HaltingSimulation(Simulation):
    """The student's run, ended before the step its scheduler cannot take (a batch the engine refuses,
    or nothing left it can schedule), found at startup: a session never steps into the error."""

    halt_at: int | None = None

    @property
    def done(self) -> bool:
        return super().done or (self.halt_at is not None and self.step_index >= self.halt_at)


@dataclass(frozen=True)
class LabPolicy:
    """The student's scheduler as the server shows it: its exercise, the workload shown (the first
    that diverges, else the first), the first divergence there, and each side's length in steps."""

    exercise: Exercise
    student_cls: type
    file_name: str
    workload: WorkloadSpec
    divergence: Divergence | None
    num_steps: dict
    halt_at: int | None
    # Why the student's side stops at `halt_at`, as the page says it.
    halt_reason: str = ""

    def simulation(self, side: str) -> Simulation:
        # Both made together, as `lab check` makes them: only the scheduler differs.
        reference, yours = simulations(self.exercise, self.workload.build(), self.student_cls)
        if side == "yours":
            yours.__class__ = HaltingSimulation  # adds a property only: the same object, which can now end early
            yours.halt_at = self.halt_at
        sim = yours if side == "yours" else reference
        mark_lab_side(sim, side)
        return sim

    def scenario(self, side: str) -> Scenario:
        """What the session reports of itself: the exercise's engine settings under a name saying whose side it is."""
        who = f"your scheduler ({self.file_name})" if side == "yours" else self.exercise.reference_name
        ex = self.exercise
        return Scenario(name=f"lab {ex.number} · {who}"[:MAX_NAME_CHARS], engine=ex.engine_config(),
                        description=f"exercise {ex.number}, {ex.title}: workload {self.workload.describe()}")

    def page_context(self) -> dict:
        d = self.divergence
        return {"exercise": self.exercise.number, "title": self.exercise.title, "file": self.file_name,
                "workload": self.workload.name, "reference": self.exercise.reference_name,
                "steps": max(self.num_steps.values()), "step": d.step if d else None, "words": d.message if d else "",
                "halt_at": self.halt_at, "halt_reason": self.halt_reason}


def _keep_module(cls: type) -> None:
    """Put the student's module back in `sys.modules` for the server's life: a session's checkpoints
    pickle its scheduler, and pickle finds the student's class (and anything else of the file) by module."""
    module = types.ModuleType(cls.__module__)
    module.__dict__.update(cls.schedule.__globals__)
    sys.modules[cls.__module__] = module


def _student_steps(policy: LabPolicy, max_steps: int) -> tuple[int, int | None, str]:
    """The student's run alone to its end: (steps, the step it stops at or None, why)."""
    sim = policy.simulation("yours")
    while not sim.done:
        if sim.step_index >= max_steps:
            return sim.step_index, sim.step_index, (f"it has not finished after {max_steps:,} steps "
                                                    f"({MAX_STEPS_PER_REFERENCE_STEP} times the reference's)")
        try:
            sim.step()
        except InvalidBatch:
            return sim.step_index, sim.step_index, "its next batch is one the engine cannot run"
        except SimulationStalled:
            return sim.step_index, sim.step_index, "nothing it schedules can run, and no request is left to arrive"
    return sim.step_index, None, ""


def load_policy(path: str, number: int) -> LabPolicy:
    """The student's file, checked as `lab check --exercise N` checks it (PolicyFileError if it fails)."""
    ex = exercise(number)
    try:
        cls = load_student(path)
        _keep_module(cls)
        result = check(ex, cls)
        d = result.divergence
        spec = next(spec for spec in ex.workloads if d is None or spec.name == d.workload)
        reference_steps = simulations(ex, spec.build(), cls)[0].run()
        policy = LabPolicy(ex, cls, cls.lab_source_path.name, spec, d, {"vllm": reference_steps}, None)
        steps, halt_at, why = _student_steps(policy, MAX_STEPS_PER_REFERENCE_STEP * reference_steps)
    except LabFileError as e:
        raise PolicyFileError(e) from None
    return dataclasses.replace(policy, num_steps={"vllm": reference_steps, "yours": steps}, halt_at=halt_at, halt_reason=why)


def add_policy_file_flags(serve) -> None:
    numbers = [ex.number for ex in EXERCISES]
    serve.add_argument("--policy-file", metavar="FILE", default=None,
                       help="your lab scheduler (`servescope lab new`), shown beside vLLM's at /lab; runs the file's "
                            "Python, so never with --public")
    serve.add_argument("--exercise", type=int, choices=numbers, default=None, metavar="N",
                       help=f"with --policy-file: the exercise whose settings and workload it runs on, "
                            f"{numbers[0]}-{numbers[-1]} (default 1)")


def policy_from_args(args, public: bool) -> LabPolicy | None:
    """The policy `serve` was given, or None; ConfigError for flags that do not go together (`public`:
    the server is a public one, by --public or by its environment)."""
    if args.policy_file is None:
        if args.exercise is not None:
            raise ConfigError("--exercise", "needs --policy-file FILE (the scheduler to run on it)")
        return None
    if public:
        raise ConfigError("--policy-file", "refused with --public: loading the file runs its Python code, and a "
                                           "public server's pages are for anyone; show it on a local server")
    return load_policy(args.policy_file, args.exercise or 1)


def attach_policy(app: FastAPI, policy: LabPolicy, base_url: str = "") -> FastAPI:
    """The lab's page and its sessions, on this app only: a server started without the flag has neither."""
    from .routes import lab

    app.state.lab_policy = policy
    app.include_router(lab.router)
    if base_url:
        print(f"servescope: your scheduler beside vLLM's: {base_url}/lab?exercise={policy.exercise.number}", flush=True)
    return app
