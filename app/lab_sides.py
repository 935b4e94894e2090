"""A lab side's simulation (`serve --policy-file`) is built by the server from the exercise, not from
its session's scenario: a worker that rebuilds a run from the scenario (a step's reasons, a steps or
trace export) would replay another workload, and on the student's side another scheduler. Those
replays are refused for it, with a word on where the lab's own reasons are."""

from __future__ import annotations

from fastapi import HTTPException

_ATTRIBUTE = "lab_side"


def mark_lab_side(sim, side: str) -> None:
    setattr(sim, _ATTRIBUTE, side)


def refuse_replay(sim, what: str) -> None:
    if getattr(sim, _ATTRIBUTE, None):
        raise HTTPException(409, f"{what} are not replayed for a lab session (its run is not its scenario's); "
                                 "`servescope lab check FILE --exercise N` explains the first divergence")
