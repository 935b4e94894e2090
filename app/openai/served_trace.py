"""The operator's `--trace` file: a served session's requests as JSONL rows (workload/traces.py's
format), replayable headless step for step.

A row is whole only once its request has finished or been aborted, since an abort's time is part
of it (`abort_time`). Rows are written in arrival order, each as soon as it and every row before
it are whole, so the file is always a prefix of the run; those still open at shutdown are written
then, without an abort (the session stops there, so a replay may go on past it).
"""

from __future__ import annotations

from typing import TextIO

from scheduler_core.sim.live_source import LiveRequestSource


class ServedTrace:
    def __init__(self, file: TextIO, source: LiveRequestSource):
        self.file = file
        self.source = source
        self.num_written = 0
        self.settled: set[int] = set()  # indices of requests finished or aborted, not yet written

    def settle(self, request_id: str) -> None:
        """`request_id` has finished or been aborted: its row, and any it held back, can be written."""
        self.settled.add(int(request_id.removeprefix("req-")))
        while self.num_written in self.settled:
            self.settled.discard(self.num_written)
            self._write(self.num_written)
        self.file.flush()

    def close(self) -> None:
        for index in range(self.num_written, len(self.source.requests)):
            self._write(index)
        self.file.close()

    def _write(self, index: int) -> None:
        self.file.write(self.source.trace_line(self.source.requests[index]) + "\n")
        self.num_written = index + 1
