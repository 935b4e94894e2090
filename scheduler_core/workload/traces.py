"""Reading request traces: CSV (the Azure LLM trace's columns, or `arrived_at,num_prefill_tokens,
num_decode_tokens`) and JSONL. A bad row is an error naming its line and column."""

from __future__ import annotations

import csv
import math
from array import array
from datetime import datetime
from pathlib import Path

from ..errors import ConfigError, shown
from ..files import MAX_TRACE_BYTES, parse_json, text_lines
from .workload import WORKLOAD_BOUNDS, RequestSpec, Workload, unique_prompt

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
SIMPLE_COLUMNS = ("arrived_at", "num_prefill_tokens", "num_decode_tokens")
# The most rows a trace may have (as many as a run may have requests).
MAX_TRACE_ROWS = WORKLOAD_BOUNDS["num_requests"].high


def _timestamp_s(value: str) -> float:
    """Seconds: a plain number, or an ISO date-time (the Azure trace has 7 fractional digits)."""
    try:
        seconds = float(value)
    except ValueError:
        head, dot, fraction = value.strip().partition(".")
        text = head + (dot + fraction[:6] if dot else "")
        return datetime.fromisoformat(text).timestamp()
    if not math.isfinite(seconds):
        raise ValueError("not a finite time")
    return seconds


def _positive_int(value, where: str) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ConfigError(where, f"not a whole number of tokens: {shown(value)}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(where, f"not an integer: {shown(value)}") from None
    if number <= 0:
        raise ConfigError(where, f"must be a positive number of tokens, got {number}")
    return number


def read_csv_trace(path: Path) -> list[tuple[float, int, int]]:
    lines = text_lines(path, MAX_TRACE_BYTES)
    reader = csv.DictReader(text for _, text in lines)
    try:
        columns = tuple(name.strip() for name in (reader.fieldnames or ()))
    except csv.Error as e:
        raise ConfigError(f"{path}:1", f"not a CSV header ({e})") from None
    if all(c in columns for c in AZURE_COLUMNS):
        time_col, prompt_col, output_col = AZURE_COLUMNS
    elif all(c in columns for c in SIMPLE_COLUMNS):
        time_col, prompt_col, output_col = SIMPLE_COLUMNS
    else:
        expected = f"{','.join(AZURE_COLUMNS)} or {','.join(SIMPLE_COLUMNS)}"
        raise ConfigError(f"{path}:1", f"expected columns {expected}, got {','.join(columns)[:200]}")
    rows = []
    try:
        for raw_row in reader:
            line = reader.line_num
            row = {(key or "").strip(): value for key, value in raw_row.items()}
            try:
                arrival = _timestamp_s(row[time_col])
            except (TypeError, ValueError, OverflowError, OSError):
                raise ConfigError(f"{path}:{line}:{time_col}", f"not a time: {row[time_col]!r:.80}") from None
            prompt = _positive_int(row[prompt_col], f"{path}:{line}:{prompt_col}")
            output = _positive_int(row[output_col], f"{path}:{line}:{output_col}")
            rows.append((arrival, prompt, output))
            check_row_count(path, len(rows))
    except csv.Error as e:
        raise ConfigError(f"{path}:{reader.line_num}", f"not a CSV row ({e})") from None
    return rows


def read_jsonl_trace(path: Path) -> list[tuple[float, int | array, int, float | None]]:
    """One object per line with `arrival_time` (s) or `arrived_at`, `prompt_len` or `num_prefill_tokens`
    (or the prompt itself, `prompt_token_ids`), and `output_len` or `num_decode_tokens` (or `max_tokens`);
    optionally `abort_time` (s, on the arrivals' clock): when the request's client went away."""
    rows = []
    for line_no, line in text_lines(path, MAX_TRACE_BYTES):
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        obj = parse_json(line, str(path), line=line_no)
        if not isinstance(obj, dict):
            raise ConfigError(where, "each line must be a JSON object")
        arrival = obj.get("arrival_time", obj.get("arrived_at"))
        if isinstance(arrival, bool) or not isinstance(arrival, (int, float)) or not math.isfinite(arrival) or arrival < 0:
            raise ConfigError(f"{where}:arrival_time", f"must be a non-negative number of seconds, got {arrival!r:.80}")
        output = _positive_int(obj.get("output_len", obj.get("num_decode_tokens", obj.get("max_tokens"))), f"{where}:output_len")
        abort_time = obj.get("abort_time")
        if abort_time is not None and (isinstance(abort_time, bool) or not isinstance(abort_time, (int, float))
                                       or not math.isfinite(abort_time) or abort_time < arrival):
            raise ConfigError(f"{where}:abort_time",
                              f"must be a number of seconds, not before arrival_time, got {abort_time!r:.80}")
        abort_time = None if abort_time is None else float(abort_time)
        if isinstance(obj.get("prompt_token_ids"), list):
            # The prompt itself (a served session's trace): replayed, it hits the prefix cache as it did.
            rows.append((float(arrival), token_ids(obj["prompt_token_ids"], f"{where}:prompt_token_ids"), output, abort_time))
        else:
            prompt = obj.get("prompt_len", obj.get("num_prefill_tokens"))
            rows.append((float(arrival), _positive_int(prompt, f"{where}:prompt_len"), output, abort_time))
        check_row_count(path, len(rows))
    return rows


def token_ids(values: list, where: str) -> array:
    """A row's prompt token ids: at least one, each a non-negative 32-bit integer."""
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 for v in values):
        raise ConfigError(where, "must be a non-empty list of token ids (integers from 0 to 2**31 - 1)")
    return array("i", values)


def check_row_count(path: Path, num_rows: int) -> None:
    if num_rows > MAX_TRACE_ROWS:
        raise ConfigError(str(path), f"more than {MAX_TRACE_ROWS} requests; cut the trace")


def load_trace_workload(path: str | Path, max_model_len: int, num_requests: int = 0) -> Workload:
    """Requests from a trace file, arrival times shifted so the first arrives at 0; prompts longer
    than max_model_len - 1 are clipped (reported in the description)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError("workload", f"trace file {path} does not exist")
    rows = read_jsonl_trace(path) if path.suffix in (".jsonl", ".ndjson") else read_csv_trace(path)
    if not rows:
        raise ConfigError(str(path), "the trace has no requests")
    rows.sort(key=lambda row: row[0])
    if num_requests:
        rows = rows[:num_requests]
    start = rows[0][0]
    clipped = 0
    requests = []
    for index, (arrival, prompt, output, *abort) in enumerate(rows):
        length = prompt if isinstance(prompt, int) else len(prompt)
        if length > max_model_len - 1:
            length, clipped = max_model_len - 1, clipped + 1
        ids = unique_prompt(index, length) if isinstance(prompt, int) else prompt[:length]
        abort_time = abort[0] - start if abort and abort[0] is not None else None
        requests.append(RequestSpec(f"req-{index:05d}", arrival - start, ids, output, abort_time=abort_time))
    description = f"{len(requests)} requests from {path.name}"
    if clipped:
        description += f" ({clipped} prompts clipped to max_model_len - 1)"
    return Workload(requests, description=description, source=str(path))
