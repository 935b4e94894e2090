"""The order in which an open-loop workload's requests reach the engine."""

from __future__ import annotations

from collections.abc import Sequence

from ..workload.workload import RequestTable, Workload


def arrival_order(workload: Workload) -> Sequence[int]:
    """Open loop: workload indices by arrival time, ties in workload order (a `range` when the
    workload is already in order, as synthetic workloads and loaded traces are)."""
    if workload.concurrency:
        return range(0)
    requests = workload.requests
    times = requests.arrival_time if isinstance(requests, RequestTable) else [spec.arrival_time for spec in requests]
    if all(a <= b for a, b in zip(times, times[1:])):
        return range(len(times))
    return sorted(range(len(times)), key=times.__getitem__)
