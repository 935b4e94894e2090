"""Loading the student's file and calling its `schedule()`, with a time budget per step.

Loading a file runs it: `lab check` executes the student's Python as any autograder does, so a file
is only ever named on the command line of whoever runs the check (never by a web request). What
goes wrong inside it is reported as the student's file and line, never as servescope's traceback.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from .view import EngineView

# The class the starter file defines; the grader makes one per workload.
CLASS_NAME = "StudentScheduler"
# Seconds one `schedule()` call may take: the lab's workloads need microseconds, so only a loop hits it.
STEP_TIME_BUDGET_S = 2.0
# Seconds all of a workload's `schedule()` calls may take together (a slow policy, not a stuck one).
WORKLOAD_TIME_BUDGET_S = 30.0
MODULE_NAME = "servescope_lab_student"


class LabFileError(Exception):
    """The student's file could not be loaded or its code failed: `where` is file:line."""

    def __init__(self, where: str, message: str, source_line: str = ""):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message
        self.source_line = source_line


class _StepTimeout(BaseException):
    """Raised inside the student's code when a step's time budget runs out (BaseException, so a
    student's `except Exception` cannot swallow it)."""


def _student_frame(error: BaseException, path: Path) -> tuple[str, str]:
    """The innermost frame of the traceback that is in the student's file: (file:line, source)."""
    where, line = str(path), ""
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename).resolve() == path:
            where, line = f"{path}:{frame.lineno}", (frame.line or "").strip()
    return where, line


def load_student(path: str) -> type:
    """The `StudentScheduler` class of the file at `path`."""
    file = Path(path).resolve()
    if not file.is_file():
        raise LabFileError(path, "no such file" if not file.exists() else "not a file")
    spec = importlib.util.spec_from_file_location(MODULE_NAME, file)
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as an import would be (a @dataclass in it looks its module up).
    sys.modules[MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise LabFileError(f"{path}:{e.lineno}", f"SyntaxError: {e.msg}", (e.text or "").strip()) from None
    except (Exception, SystemExit) as e:  # the student's module-level code failed (or called exit())
        where, line = _student_frame(e, file)
        raise LabFileError(where, f"{type(e).__name__} while loading the file: {e}", line) from None
    finally:
        sys.modules.pop(MODULE_NAME, None)
    cls = getattr(module, CLASS_NAME, None)
    if not isinstance(cls, type) or not callable(getattr(cls, "schedule", None)):
        raise LabFileError(path, f"defines no class {CLASS_NAME} with a schedule(self, view) method "
                                 "(`servescope lab new DIR` writes one to start from)")
    cls.lab_source_path = file
    return cls


class StudentPolicy:
    """One instance of the student's class, called once a step within the time budget."""

    def __init__(self, cls: type, time_budget_s: float | None = None):
        self.path: Path = cls.lab_source_path
        self.time_budget_s = STEP_TIME_BUDGET_S if time_budget_s is None else time_budget_s
        self.time_left_s = WORKLOAD_TIME_BUDGET_S
        try:
            self.instance = cls()
        except (Exception, SystemExit) as e:
            where, line = _student_frame(e, self.path)
            raise LabFileError(where, f"{type(e).__name__} in {CLASS_NAME}(): {e}", line) from None

    def schedule(self, view: EngineView):
        if self.time_left_s <= 0:
            raise LabFileError(str(self.path), f"schedule() took more than {WORKLOAD_TIME_BUDGET_S:g} s in all on one "
                                               f"workload, by step {view.step}: the lab's workloads need milliseconds")
        start = time.monotonic()
        try:
            with _time_budget(min(self.time_budget_s, self.time_left_s)):
                return self.instance.schedule(view)
        except _StepTimeout as e:
            where, line = _student_frame(e, self.path)
            raise LabFileError(where, f"schedule() ran past its time budget of {self.time_budget_s:g} s at step "
                                      f"{view.step} (a loop that never ends?)", line) from None
        except dataclasses.FrozenInstanceError as e:
            where, line = _student_frame(e, self.path)
            raise LabFileError(where, f"schedule() tried to change the view at step {view.step} ({e}): the view is "
                                      "read-only; say what should happen by returning the batch", line) from None
        except (Exception, SystemExit) as e:
            where, line = _student_frame(e, self.path)
            raise LabFileError(where, f"{type(e).__name__} in schedule() at step {view.step}: {e}", line) from None
        finally:
            self.time_left_s -= time.monotonic() - start


class _time_budget:
    """An alarm that interrupts the student's code after `seconds` (on the main thread, where
    signals are delivered; elsewhere a trace function checks the clock on every line)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            self._previous = signal.signal(signal.SIGALRM, self._expired)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self._mode = "signal"
        else:
            deadline = time.monotonic() + self.seconds

            def tracer(frame, event, arg):
                if time.monotonic() > deadline:
                    raise _StepTimeout()
                return tracer
            self._previous = sys.gettrace()
            sys.settrace(tracer)
            self._mode = "trace"
        return self

    def __exit__(self, *exc):
        if self._mode == "signal":
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
        else:
            sys.settrace(self._previous)
        return False

    @staticmethod
    def _expired(signum, frame):
        raise _StepTimeout()
