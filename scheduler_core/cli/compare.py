"""`servescope compare`: the same workload through two configurations, side by side."""

from __future__ import annotations

import argparse
import sys

from ..exports.report import format_comparison
from ..sim.metrics import SLO
from ..sim.simulation import Simulation
from .output import run_with_progress, write_json
from .overrides import add_scenario_flags, build_scenario, parse_assignment_arg


def cmd_compare(args: argparse.Namespace) -> int:
    a, b = build_scenario(args, args.a), build_scenario(args, args.b, args.set_b or ())
    # The same requests through both configurations: B runs A's workload.
    workload = a.build_workload()
    reports = []
    for scenario in (a, b):
        sim = Simulation(scenario.engine, workload, scenario.cost_model(), keep_finished=False,
                         slo=SLO(scenario.slo_ttft_s, scenario.slo_tpot_s), api_server=scenario.api_server(workload))
        wall_s = run_with_progress(sim, show=args.progress if args.progress is not None else sys.stderr.isatty())
        reports.append(sim.metrics.report(wall_s))
    changes = ", ".join(f"{k}={v}" for k, v in args.set_b or ()) or "no changes"
    print(f"A = {a.name}, B = {b.name} with {changes}; the same {len(workload.requests)} requests through both")
    print(format_comparison(reports[0], reports[1], "A", "B"))
    if args.json:
        write_json(args.json, {"a": {"scenario": a.to_dict(), **reports[0]}, "b": {"scenario": b.to_dict(), **reports[1]}})
    return 0


def add_compare_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("compare", help="the same workload through two configurations, side by side")
    p.add_argument("a", help="configuration A (preset or file); its workload is used for both")
    p.add_argument("b", help="configuration B (preset or file)")
    p.add_argument("--set-b", action="append", type=parse_assignment_arg, metavar="FIELD=VALUE",
                   help="change one field of B only, e.g. policy=static or enable_chunked_prefill=false")
    p.add_argument("--json", metavar="FILE")
    add_scenario_flags(p)
    p.set_defaults(func=cmd_compare)
    return p
