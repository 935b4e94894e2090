"""Running a sweep's points: one after another or in local processes (`app.ray_sweep` runs them as
Ray tasks: Ray is an optional extra, and this package is the standard library only).

Each point is an independent, deterministic simulation, so where it runs changes nothing in its
row. Rows stream to the results file as points finish (CSV, or JSON Lines for `.jsonl`/`.json`);
an interrupted sweep resumes by skipping the points the file already holds, and a finished
sweep's file is rewritten in grid order, so the same sweep gives the same file however it ran.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from ..errors import ConfigError
from ..files import MAX_TRACE_BYTES, parse_json, read_text
from .grid import Sweep, SweepPoint, build_run, num_gpus

# The metrics a row keeps (dotted into the report); wall-clock time is left out so rows repeat.
METRIC_COLUMNS = [
    "num_requests", "simulated_s", "requests_per_s", "output_tokens_per_s", "goodput_requests_per_s",
    "slo_attainment", "ttft_s.mean", "ttft_s.p50", "ttft_s.p90", "ttft_s.p99", "tpot_s.mean", "tpot_s.p50",
    "tpot_s.p90", "tpot_s.p99", "itl_s.p99", "e2e_s.mean", "e2e_s.p99", "queue_s.p99", "preemptions",
    "kv_usage_mean", "prefix_cache_hit_rate",
]


def run_point(point: SweepPoint, name: str) -> dict:
    """Run one point to the end; its row (point index, swept values, GPUs, metrics)."""
    from ..cluster import fleet_report

    run = build_run(point.data, name)
    if hasattr(run, "replicas"):
        fleet = run.build()
        fleet.run()
        report = fleet_report(fleet)
    else:
        sim = run.build(keep_finished=False)
        sim.run()
        report = sim.metrics.report()
    row = {"point": point.index, **point.values, "num_gpus": num_gpus(run)}
    for column in METRIC_COLUMNS:
        value = report
        for part in column.split("."):
            value = value[part]
        row[column] = None if isinstance(value, float) and not math.isfinite(value) else value
    return row


def run_point_of(args: tuple[SweepPoint, str]) -> dict:
    """`run_point` on one (point, sweep name) pair: the task a pool of workers is handed."""
    return run_point(*args)


# -- where points run -------------------------------------------------------------------------
def run_serial(points: list[SweepPoint], name: str) -> Iterator[dict]:
    for point in points:
        yield run_point(point, name)


def run_processes(points: list[SweepPoint], name: str, workers: int | None = None) -> Iterator[dict]:
    """One local process per core (or `workers`); rows come back as points finish."""
    workers = workers or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=min(workers, len(points))) as pool:
        futures = [pool.submit(run_point_of, (point, name)) for point in points]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


# -- the results file ---------------------------------------------------------------------------
class ResultsFile:
    """Rows of one sweep, streamed as they come; CSV or JSON Lines by the file's suffix."""

    def __init__(self, path: str | Path, columns: list[str]):
        self.path = Path(path)
        self.columns = columns
        self.json_lines = self.path.suffix in (".jsonl", ".json")

    def read(self) -> list[dict]:
        """The complete rows already in the file (a line cut short by an interruption is dropped)."""
        if not self.path.exists():
            return []
        text = read_text(self.path, MAX_TRACE_BYTES)  # a regular file of bounded size: never a FIFO
        if not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
        if self.json_lines:
            rows = [parse_json(line, str(self.path), line=number)
                    for number, line in enumerate(text.splitlines(), 1) if line.strip()]
            for row in rows:
                if not isinstance(row, dict) or list(row) != self.columns:
                    raise ConfigError("--out", f"{self.path} holds the results of another sweep")
            return rows
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        if header is None:
            return []
        if header != self.columns:
            raise ConfigError("--out", f"{self.path} holds the results of another sweep")
        return [dict(zip(header, values)) for values in reader]

    def _format(self, row: dict) -> str:
        if self.json_lines:
            return json.dumps(row) + "\n"
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow(["" if row[c] is None else row[c] for c in self.columns])
        return out.getvalue()

    def start(self, rows: list[dict]) -> None:
        """Rewrite the file with `rows` (the complete ones), ready to append."""
        header = "" if self.json_lines else ",".join(self.columns) + "\n"
        self._write_atomically(header + "".join(self._format(r) for r in rows))

    def append(self, row: dict) -> None:
        with self.path.open("a") as out:
            out.write(self._format(row))
            out.flush()

    def finish(self, rows: list[dict]) -> None:
        """The whole sweep in grid order."""
        self.start(sorted(rows, key=lambda r: int(r["point"])))

    def _write_atomically(self, text: str) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(text)
        temporary.replace(self.path)


def row_key(row: dict, keys: list[str]) -> str:
    """A row's swept values as canonical JSON, read back from either file format."""
    values = {}
    for key in keys:
        value = row[key]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass  # a bare word such as a GPU name
        values[key] = value
    return json.dumps(values, sort_keys=True)


class Progress:
    """A one-line progress bar on stderr: points done, points/s, time left."""

    def __init__(self, total: int, already: int, show: bool):
        self.total, self.done, self.show = total, already, show
        self.start = time.perf_counter()
        self.ran = 0

    def tick(self) -> None:
        self.done += 1
        self.ran += 1
        if not self.show:
            return
        elapsed = time.perf_counter() - self.start
        rate = self.ran / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate else math.inf
        bar = "#" * int(30 * self.done / self.total)
        print(f"\r  [{bar:<30}] {self.done}/{self.total} points, {rate:.2f} points/s, {left:.0f} s left",
              end="" if self.done < self.total else "\n", file=sys.stderr, flush=True)


def run_sweep(sweep: Sweep, out: str | Path, executor: Callable[[list[SweepPoint], str], Iterable[dict]] = run_processes,
              show_progress: bool = False) -> list[dict]:
    """Run every point the results file does not hold yet, appending rows as they finish; returns
    every row in grid order (the file holds the same)."""
    columns = ["point", *sweep.keys, "num_gpus", *METRIC_COLUMNS]
    results = ResultsFile(out, columns)
    points = sweep.points()
    by_key = {point.key: point for point in points}
    # Rows of points still in the grid, renumbered in case the grid changed around them.
    done = [{**row, "point": by_key[row_key(row, sweep.keys)].index} for row in results.read()
            if row_key(row, sweep.keys) in by_key]
    finished_keys = {row_key(row, sweep.keys) for row in done}
    results.start(done)
    todo = [point for point in points if point.key not in finished_keys]
    progress = Progress(len(points), len(done), show_progress)
    rows = list(done)
    if todo:
        for row in executor(todo, sweep.name):
            results.append(row)
            rows.append(row)
            progress.tick()
    results.finish(rows)
    return ResultsFile(out, columns).read()
