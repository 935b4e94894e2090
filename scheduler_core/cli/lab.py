"""`servescope lab new DIR` and `servescope lab check FILE`: the lab's starter and its grader.

`lab check` runs the student's file (named only here, on the command line of whoever checks it) and
exits 0 when it passed, 1 when it diverged from the reference, 2 when the file is broken.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..lab.exercises import EXERCISES, exercise
from ..lab.grader import Batch, CheckResult, check
from ..lab.starter import write_starter
from ..lab.student import LabFileError, load_student

EXIT_PASSED, EXIT_DIVERGED, EXIT_BROKEN = 0, 1, 2


def cmd_lab_new(args: argparse.Namespace) -> int:
    for path in write_starter(args.dir):
        print(f"wrote {path}")
    print(f"next: edit {args.dir}/my_scheduler.py, then servescope lab check {args.dir}/my_scheduler.py --exercise 1")
    return EXIT_PASSED


def side_by_side(yours: Batch | None, reference: Batch, step: int) -> list[str]:
    """The two batches in two columns, a row per request either one scheduled."""
    mine = {chunk.request: chunk for chunk in yours.chunks} if yours else {}
    theirs = {chunk.request: chunk for chunk in reference.chunks}
    rows = list(theirs) + [rid for rid in mine if rid not in theirs]

    def cell(chunk) -> str:
        return f"{chunk.tokens:,} {chunk.kind}" if chunk else "-"

    lines = [f"  {'step ' + str(step):<12} {'yours':<22} vLLM" if reference else ""]
    lines += [f"  {rid:<12} {cell(mine.get(rid)):<22} {cell(theirs.get(rid))}" for rid in rows]
    if yours is None:
        lines.append("  (your schedule() returned no batch that could be read)")
    victims_yours = ", ".join(yours.preempted) if yours and yours.preempted else "-"
    lines.append(f"  {'preempted':<12} {victims_yours:<22} {', '.join(reference.preempted) or '-'}")
    return lines


def report(result: CheckResult) -> str:
    ex = result.exercise
    head = f"exercise {ex.number}, {ex.title}"
    if result.passed:
        done = ", ".join(f"{w.name} ({w.num_requests} requests, {w.num_steps} steps)" for w in result.workloads)
        return f"{head}: passed: the same decisions as {ex.reference_name} at every step of {done}"
    d = result.divergence
    what = "diverged" if d.kind == "diverged" else "returned a batch the engine cannot run"
    lines = [f"{head}: {what} on workload {d.workload}", d.message, ""]
    return "\n".join(lines + side_by_side(d.yours, d.reference, d.step))


def cmd_lab_check(args: argparse.Namespace) -> int:
    ex = exercise(args.exercise)
    try:
        result = check(ex, load_student(args.file))
    except LabFileError as e:
        if args.json:
            print(json.dumps({"exercise": ex.number, "name": ex.name, "passed": False,
                              "error": {"where": e.where, "message": e.message, "source_line": e.source_line}}, indent=2))
        else:
            print(f"servescope lab: {e.where}: {e.message}", file=sys.stderr)
            if e.source_line:
                print(f"    {e.source_line}", file=sys.stderr)
        return EXIT_BROKEN
    print(json.dumps(result.to_dict(), indent=2) if args.json else report(result))
    return EXIT_PASSED if result.passed else EXIT_DIVERGED


def add_lab_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("lab", help="write a scheduler of your own and check it against vLLM's")
    actions = p.add_subparsers(dest="lab_command", required=True)
    new = actions.add_parser("new", help="write the starter: a scheduler file to edit and a README of the exercises")
    new.add_argument("dir", help="a new or empty directory")
    new.set_defaults(func=cmd_lab_new)
    numbers = [ex.number for ex in EXERCISES]
    chk = actions.add_parser("check", help="run your scheduler beside vLLM's on an exercise's workloads "
                                           "(runs the file's Python code, as any autograder does)")
    chk.add_argument("file", help="your scheduler file (it defines class StudentScheduler)")
    chk.add_argument("--exercise", type=int, choices=numbers, default=1, metavar="N",
                     help=f"which exercise, {numbers[0]}-{numbers[-1]} (default 1); "
                          + "; ".join(f"{ex.number}: {ex.name}" for ex in EXERCISES))
    chk.add_argument("--json", action="store_true", help="print the result as JSON (for an autograder)")
    chk.set_defaults(func=cmd_lab_check)
    return p
