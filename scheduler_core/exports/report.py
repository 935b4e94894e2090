"""Metrics reports as text tables: one run, or two side by side with their ratio."""

from __future__ import annotations

import math

from ..utils import plural

# (label, key path, unit scale, unit) in the order a reader scans them.
ROWS = [
    ("requests", ("num_requests",), 1, ""),
    ("steps", ("num_steps",), 1, ""),
    ("simulated time", ("simulated_s",), 1, "s"),
    ("request throughput", ("requests_per_s",), 1, "req/s"),
    ("input throughput", ("input_tokens_per_s",), 1, "tok/s"),
    ("output throughput", ("output_tokens_per_s",), 1, "tok/s"),
    ("goodput", ("goodput_requests_per_s",), 1, "req/s"),
    *[(f"TTFT {stat}", ("ttft_s", stat), 1e3, "ms") for stat in ("mean", "p50", "p90", "p99")],
    *[(f"TPOT {stat}", ("tpot_s", stat), 1e3, "ms") for stat in ("mean", "p50", "p90", "p99")],
    *[(f"ITL {stat}", ("itl_s", stat), 1e3, "ms") for stat in ("mean", "p50", "p90", "p99")],
    *[(f"E2E {stat}", ("e2e_s", stat), 1, "s") for stat in ("mean", "p50", "p90", "p99")],
    ("queue time p99", ("queue_s", "p99"), 1e3, "ms"),
    ("preemptions", ("preemptions",), 1, ""),
    ("KV usage (mean)", ("kv_usage_mean",), 100, "%"),
    ("fragmentation", ("fragmentation",), 100, "%"),
    ("prefix cache hit rate", ("prefix_cache_hit_rate",), 100, "%"),
]


def _value(report: dict, path: tuple) -> float:
    value = report
    for key in path:
        value = value[key]
    return value


def _fmt(value: float, scale: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "-"
    scaled = value * scale
    if float(scaled).is_integer() and abs(scaled) < 1e9:
        return f"{int(scaled):,}"
    return f"{scaled:,.3g}" if abs(scaled) < 100 else f"{scaled:,.1f}"


def format_report(report: dict, title: str = "") -> str:
    lines = [title] if title else []
    for label, path, scale, unit in ROWS:
        lines.append(f"  {label:<24} {_fmt(_value(report, path), scale):>12} {unit}")
    lines.append(f"  {'wall time':<24} {report['wall_s']:>12.2f} s")
    if "front_end" in report:
        lines.append(f"  {'front end':<24} {front_end_note(report['front_end'])}")
    return "\n".join(lines)


def front_end_note(front_end: dict) -> str:
    """What the API server added to the mean TTFT, split into its two halves."""
    servers = front_end["api_server_count"]
    return (f"+{front_end['ttft_added_s_mean'] * 1e3:,.2f} ms of TTFT ({front_end['admission_s_mean'] * 1e3:,.2f} to reach "
            f"the engine core, {front_end['first_token_stream_s_mean'] * 1e3:,.2f} to stream the first token; "
            f"{plural(servers, 'API server')})")


def format_comparison(a: dict, b: dict, name_a: str, name_b: str) -> str:
    width = max(12, len(name_a), len(name_b))
    lines = [f"  {'metric':<24} {name_a:>{width}} {name_b:>{width}}   B/A"]
    for label, path, scale, unit in ROWS:
        va, vb = _value(a, path), _value(b, path)
        ratio = vb / va if va and not math.isnan(va) and not math.isnan(vb) else math.nan
        ratio_text = "-" if math.isnan(ratio) else f"{ratio:.2f}x"
        lines.append(f"  {(label + (' (' + unit + ')' if unit else '')):<24} {_fmt(va, scale):>{width}} "
                     f"{_fmt(vb, scale):>{width}}   {ratio_text}")
    if "front_end" in a or "front_end" in b:  # what the API server added to TTFT (none offline)
        va, vb = (report["front_end"]["ttft_added_s_mean"] if "front_end" in report else 0.0 for report in (a, b))
        ratio_text = f"{vb / va:.2f}x" if va else "-"
        lines.append(f"  {'front end TTFT (ms)':<24} {_fmt(va, 1e3):>{width}} {_fmt(vb, 1e3):>{width}}   {ratio_text}")
    return "\n".join(lines)
