"""The command line's fleet and sweep parts: `run` of a cluster scenario, and `sweep`."""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

from ..cluster import fleet_report
from ..cluster.scenario import ClusterScenario
from ..errors import ConfigError
from ..exports.fleet_report import format_fleet_report
from ..scenario.scenario import PRESET_SCENARIOS, Scenario
from ..sweep import Sweep, cheapest_meeting_slo, format_choices, run_processes, run_serial, run_sweep
from .output import write_json
from .overrides import positive_int, positive_number


def cluster_table(args: argparse.Namespace) -> dict | None:
    """The `[cluster]` table of a scenario file, with --replicas / --router laid over it; None for one engine."""
    data = Scenario.read_data(args.scenario) if args.scenario not in PRESET_SCENARIOS else {}
    cluster = data.get("cluster", {})
    if not isinstance(cluster, dict):
        raise ConfigError("cluster", "must be a table")
    cluster = dict(cluster)
    if args.replicas is not None:
        cluster["replicas"] = args.replicas
    if args.router is not None:
        cluster["router"] = args.router
    return cluster if "cluster" in data or cluster else None


def run_fleet(args: argparse.Namespace, scenario: Scenario, cluster: dict) -> int:
    fleet_scenario = ClusterScenario.from_dict({**scenario.to_dict(), "cluster": cluster}, scenario.name)
    fleet = fleet_scenario.build()
    user_facing = fleet.decode_pool if fleet.disaggregated else fleet.entry_pool
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    start = last_draw = time.perf_counter()
    total = len(fleet.workload.requests)
    for _ in fleet.events():
        now = time.perf_counter()
        if show and now - last_draw > 0.25:
            last_draw = now
            done = sum(r.sim.metrics.num_finished for r in user_facing)
            print(f"\r  [{'#' * int(30 * done / total):<30}] {done}/{total} requests, {fleet.clock_s:.1f} s simulated",
                  end="", file=sys.stderr)
    wall_s = time.perf_counter() - start
    if show and wall_s > 0.25:
        print(file=sys.stderr)
    report = fleet_report(fleet, wall_s)
    prefill, decode = fleet_scenario.prefill, fleet_scenario.decode
    shape = (f"{fleet_scenario.prefill_replicas} prefill x {prefill.tensor_parallel_size} {prefill.gpu} + "
             f"{fleet_scenario.decode_replicas} decode x {decode.tensor_parallel_size} {decode.gpu} over "
             f"{fleet_scenario.link}" if fleet_scenario.disaggregated
             else f"{fleet_scenario.replicas} DP ranks of {scenario.tensor_parallel_size} x {scenario.gpu}"
             f"{', expert parallel' if scenario.enable_expert_parallel else ''}"
             f"{', lockstep' if fleet_scenario.lockstep else ''}" if scenario.data_parallel_size > 1
             else f"{fleet_scenario.replicas} replicas of {scenario.tensor_parallel_size} x {scenario.gpu}")
    for note in fleet_scenario.notes:
        print(f"note: {note}")
    print(format_fleet_report(report, title=f"{scenario.name}: {scenario.model}, {shape}, router {fleet_scenario.router}"))
    if args.json:
        write_json(args.json, {"scenario": fleet_scenario.to_dict(), **report})
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """A grid of runs, in local processes (default), one after another, or as Ray tasks (`--ray`, added
    by the servescope command with its executor)."""
    data = Scenario.read_data(args.sweep)
    if args.slo_ttft_ms is not None:
        data["slo_ttft_s"] = args.slo_ttft_ms / 1e3
    if args.slo_tpot_ms is not None:
        data["slo_tpot_s"] = args.slo_tpot_ms / 1e3
    sweep = Sweep.from_dict(data, name=Path(args.sweep).stem)
    if getattr(args, "ray", None) is not None:  # the servescope command's flag (app.cli)
        executor = functools.partial(args.ray_executor, address=args.ray or None)
    elif args.workers == 1:
        executor = run_serial
    else:
        executor = functools.partial(run_processes, workers=args.workers)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    start = time.perf_counter()
    rows = run_sweep(sweep, args.out, executor, show_progress=show)
    print(f"{len(rows)} points in {args.out} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    if args.cost_per_gpu_hour is not None:
        slo_ttft_s = data.get("slo_ttft_s", math.inf)
        slo_tpot_s = data.get("slo_tpot_s", math.inf)
        choices = cheapest_meeting_slo(rows, sweep.keys, slo_ttft_s, slo_tpot_s, args.cost_per_gpu_hour)
        print(format_choices(choices, slo_ttft_s, slo_tpot_s, args.cost_per_gpu_hour))
    return 0


def add_sweep_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("sweep", help="run a grid of scenario variations; rows stream to a CSV or JSON Lines file")
    p.add_argument("sweep", help="TOML/JSON scenario with a [sweep] table of \"dotted.field\" = [values]")
    p.add_argument("--out", required=True, metavar="RESULTS", help="results file: .csv, or .jsonl/.json for JSON Lines; "
                   "an existing file of the same sweep is resumed")
    p.add_argument("--workers", type=positive_int, help="local processes (default: one per core; 1: one point after another)")
    p.add_argument("--slo-ttft-ms", type=float, help="p99 TTFT objective (also the goodput SLO)")
    p.add_argument("--slo-tpot-ms", type=float, help="p99 TPOT objective (also the goodput SLO)")
    p.add_argument("--cost-per-gpu-hour", type=positive_number, metavar="DOLLARS",
                   help="report the cheapest configuration meeting the SLO at each workload")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=cmd_sweep)
    return p
