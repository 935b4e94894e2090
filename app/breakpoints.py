"""Where play stops: a preemption, a finish, an admission, KV usage over a mark, a step, or a request's turn.

`parse_breakpoints` is the one way a breakpoint set comes in: its shape and bounds, and then the run
it is for, so a breakpoint that could never stop this run (a step already behind, a request id the
workload does not have, a request already finished) is refused with the field at fault instead of
being kept, and B running to the end in silence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scheduler_core.engine.step_record import StepRecord
from scheduler_core.workload.workload import RequestTable

BREAKPOINT_KINDS = ("preemption", "finish", "admit", "kv_usage", "step", "request")
MAX_BREAKPOINTS = 32
# Request ids are short everywhere (a synthetic workload's `req-00012`, a trace's own): a longer
# value is no id, and is not echoed back whole in the refusal.
MAX_REQUEST_ID_CHARS = 100
# A synthetic workload's ids (RequestTable): `req-` and the request's index, five digits or more.
SYNTHETIC_ID = re.compile(r"req-(\d{5,})")


class BreakpointError(ValueError):
    """A breakpoint refused; `field` names the part at fault (`breakpoints[1].value`)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Breakpoint:
    kind: str
    value: float | str | None = None

    @classmethod
    def parse(cls, data: object, field: str = "breakpoint") -> "Breakpoint":
        """A breakpoint's shape and bounds, whatever the run."""
        if not isinstance(data, dict) or data.get("kind") not in BREAKPOINT_KINDS:
            raise BreakpointError(f"{field}.kind", f"a breakpoint is {{\"kind\": one of {list(BREAKPOINT_KINDS)}, ...}}")
        kind, value = data["kind"], data.get("value")
        at = f"{field}.value"
        if kind == "kv_usage" and not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1):
            raise BreakpointError(at, "a kv_usage breakpoint needs a value in (0, 1]")
        if kind == "step" and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise BreakpointError(at, "a step breakpoint needs a non-negative integer value")
        if kind == "request" and not (isinstance(value, str) and 0 < len(value) <= MAX_REQUEST_ID_CHARS):
            raise BreakpointError(at, f"a request breakpoint needs a request id of at most {MAX_REQUEST_ID_CHARS} characters")
        return cls(kind, value)

    def hit(self, record: StepRecord) -> bool:
        if self.kind == "preemption":
            return bool(record.preempted)
        if self.kind == "finish":
            return bool(record.finished)
        if self.kind == "admit":
            return bool(record.admitted or record.resumed)
        if self.kind == "kv_usage":
            return record.kv_usage >= self.value
        if self.kind == "step":
            return record.step + 1 == self.value
        rid = self.value
        return any(c.request_id == rid for c in record.scheduled) or rid in record.preempted or rid in record.finished

    def to_dict(self) -> dict:
        return {"kind": self.kind, "value": self.value}


def parse_breakpoints(items: object, session) -> list[Breakpoint]:
    """A `breakpoints` command's list, checked against `session` (app.session.Session: its step, its
    step budget, its simulation's workload). BreakpointError names the first breakpoint at fault."""
    if not isinstance(items, list) or len(items) > MAX_BREAKPOINTS:
        raise BreakpointError("breakpoints", f"breakpoints must be a list of at most {MAX_BREAKPOINTS} breakpoints")
    breakpoints = []
    for index, item in enumerate(items):
        field = f"breakpoints[{index}]"
        breakpoint = Breakpoint.parse(item, field)
        if breakpoint.kind == "step":
            check_step(breakpoint.value, session, f"{field}.value")
        if breakpoint.kind == "request":
            check_request(breakpoint.value, session.sim, f"{field}.value")
        breakpoints.append(breakpoint)
    return breakpoints


def check_step(value: int, session, field: str) -> None:
    """A step breakpoint at K stops as the run reaches step K: K must lie ahead, within the session's budget."""
    if value < session.step:
        raise BreakpointError(field, f"step {value} is already behind: the run is at step {session.step}")
    if value == session.step:
        raise BreakpointError(field, f"the run is at step {value} now: a step breakpoint stops at a later step")
    last = session.settings.max_steps_per_session
    if value > last:
        raise BreakpointError(field, f"step {value} is past this session's last step, {last}")


def check_request(request_id: str, sim, field: str) -> None:
    """A request breakpoint names a request of this run that has not finished: one that has arrived,
    or one of the workload's still to come (a served engine's come from its clients: any may)."""
    try:
        request = sim.request(request_id)
    except KeyError:  # not arrived
        requests = sim.workload.requests
        if not getattr(sim, "serving", False) and not in_workload(requests, request_id):
            ids = f"its ids run {requests[0].request_id} to {requests[-1].request_id}" if requests else "it has no requests"
            message = f"no request '{request_id}' in this workload: {ids} ({len(requests)} requests)"
            raise BreakpointError(field, message) from None
        return
    if request.status.is_finished:
        raise BreakpointError(field, f"{request_id} has already finished: it is not scheduled again")


def in_workload(requests, request_id: str) -> bool:
    if isinstance(requests, RequestTable):  # its ids are its indices: no need to make every request
        match = SYNTHETIC_ID.fullmatch(request_id)
        return bool(match) and int(match[1]) < len(requests) and request_id == f"req-{int(match[1]):05d}"
    return any(spec.request_id == request_id for spec in requests)
