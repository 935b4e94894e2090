"""Capacity planning over a sweep: at each workload, the cheapest configuration meeting the SLO.

A point meets the SLO when its p99 TTFT and p99 TPOT are within the objectives. Its cost is
GPUs x the price of a GPU-hour; goodput per dollar is the requests it serves within the SLO
(goodput, per hour) divided by that cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _number(value) -> float:
    if value in (None, ""):
        return math.nan
    return float(value)


@dataclass(frozen=True)
class Choice:
    """The cheapest configuration meeting the SLO at one workload (None if none does)."""

    workload: dict
    config: dict | None
    dollars_per_hour: float
    goodput_per_dollar: float
    num_meeting: int
    num_configs: int


def cheapest_meeting_slo(rows: list[dict], keys: list[str], slo_ttft_s: float, slo_tpot_s: float,
                         cost_per_gpu_hour: float) -> list[Choice]:
    """Group rows by their workload fields (`workload.*`, e.g. the arrival rate); in each group pick
    the fewest dollars per hour among the points meeting the SLO, ties by goodput per dollar."""
    workload_keys = [k for k in keys if k.startswith("workload.")]
    config_keys = [k for k in keys if k not in workload_keys]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[k]) for k in workload_keys), []).append(row)
    choices = []
    for group in groups.values():
        best = None
        meeting = 0
        for row in group:
            if not (_number(row["ttft_s.p99"]) <= slo_ttft_s and _number(row["tpot_s.p99"]) <= slo_tpot_s):
                continue
            meeting += 1
            dollars = int(row["num_gpus"]) * cost_per_gpu_hour
            goodput = _number(row["goodput_requests_per_s"])
            per_dollar = goodput * 3600 / dollars if dollars else math.inf
            if best is None or (dollars, -per_dollar) < (best[0], -best[1]):
                best = (dollars, per_dollar, row)
        workload = {k: group[0][k] for k in workload_keys}
        if best is None:
            choices.append(Choice(workload, None, math.nan, math.nan, 0, len(group)))
        else:
            choices.append(Choice(workload, {k: best[2][k] for k in config_keys}, best[0], best[1], meeting, len(group)))
    return choices


def format_choices(choices: list[Choice], slo_ttft_s: float, slo_tpot_s: float, cost_per_gpu_hour: float) -> str:
    lines = [f"cheapest configuration meeting p99 TTFT <= {slo_ttft_s * 1e3:g} ms and p99 TPOT <= {slo_tpot_s * 1e3:g} ms "
             f"at ${cost_per_gpu_hour:g} per GPU-hour:"]
    for choice in choices:
        workload = ", ".join(f"{k.removeprefix('workload.')}={v}" for k, v in choice.workload.items()) or "the workload"
        if choice.config is None:
            lines.append(f"  {workload}: none of {choice.num_configs} configurations meets the SLO")
            continue
        config = ", ".join(f"{k}={v}" for k, v in choice.config.items()) or "the only configuration"
        lines.append(f"  {workload}: {config}  (${choice.dollars_per_hour:g}/h, "
                     f"{choice.goodput_per_dollar:,.0f} good requests per $; {choice.num_meeting} of "
                     f"{choice.num_configs} configurations meet the SLO)")
    return "\n".join(lines)
