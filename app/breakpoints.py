"""Where play stops: a preemption, a finish, an admission, KV usage over a mark, a step, or a request's turn."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.engine.step_record import StepRecord

BREAKPOINT_KINDS = ("preemption", "finish", "admit", "kv_usage", "step", "request")


@dataclass(frozen=True)
class Breakpoint:
    kind: str
    value: float | str | None = None

    @classmethod
    def parse(cls, data: object) -> "Breakpoint":
        if not isinstance(data, dict) or data.get("kind") not in BREAKPOINT_KINDS:
            raise ValueError(f"a breakpoint is {{\"kind\": one of {list(BREAKPOINT_KINDS)}, ...}}")
        kind, value = data["kind"], data.get("value")
        if kind == "kv_usage" and not (isinstance(value, (int, float)) and 0 < value <= 1):
            raise ValueError("a kv_usage breakpoint needs a value in (0, 1]")
        if kind == "step" and not (isinstance(value, int) and value >= 0):
            raise ValueError("a step breakpoint needs a non-negative integer value")
        if kind == "request" and not isinstance(value, str):
            raise ValueError("a request breakpoint needs a request id value")
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
