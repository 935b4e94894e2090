"""`servescope run`: a scenario headless, to the end, and its metrics (a fleet with `[cluster]` or `--replicas`)."""

from __future__ import annotations

import argparse
import sys

from ..cluster import ROUTER_POLICIES
from ..exports.report import format_report
from ..scenario.scenario import Scenario
from ..sim.capacity import KVCapacity
from ..timing.moe import ExpertPlacement
from ..workload.summary import WorkloadSummary
from .fleet import cluster_table, run_fleet
from .output import run_with_progress, write_json
from .overrides import add_scenario_flags, build_scenario


def print_startup_lines(scenario: Scenario) -> None:
    """What vLLM would log about memory while starting this configuration."""
    plan = scenario.memory_plan()
    ranks = f"{scenario.data_parallel_size} DP ranks x " if scenario.data_parallel_size > 1 else ""
    print(f"vLLM startup, per GPU ({ranks}{scenario.tensor_parallel_size} x {scenario.gpu}):")
    model = scenario.model_spec()
    placement = ExpertPlacement(scenario.tensor_parallel_size, scenario.data_parallel_size, scenario.enable_expert_parallel)
    ep_line = placement.startup_line(model.arch.moe) if model.arch is not None and model.arch.moe is not None else ""
    for line in ([ep_line] if ep_line else []) + plan.startup_lines():
        print(f"  {line}")


def cmd_run(args: argparse.Namespace) -> int:
    scenario = build_scenario(args, args.scenario)
    cluster = cluster_table(args)
    if scenario.data_parallel_size > 1:
        print_startup_lines(scenario)  # every rank's GPUs alike
        cluster = {} if cluster is None else cluster  # one deployment of several engine cores: a fleet of its ranks
    if cluster is not None:
        return run_fleet(args, scenario, cluster)
    print_startup_lines(scenario)
    sim = scenario.build(keep_finished=False)
    # Measured from the requests built, so a length or prefix the command line did not mean shows.
    print(f"workload simulated: {WorkloadSummary.of(sim.workload).line()}")
    if warning := KVCapacity.of(sim.workload, sim.config, scenario.memory_plan().kv_cache_size_tokens).warning():
        print(warning)
    wall_s = run_with_progress(sim, show=args.progress if args.progress is not None else sys.stderr.isatty())
    report = sim.metrics.report(wall_s)
    print(format_report(report, title=f"{scenario.name}: {scenario.model} on {scenario.tensor_parallel_size} x {scenario.gpu}, "
                                      f"policy {scenario.engine.policy} as vLLM {scenario.vllm_version}, "
                                      f"{scenario.engine.num_gpu_blocks} KV blocks"))
    if args.json:
        write_json(args.json, {"scenario": scenario.to_dict(), "memory": scenario.memory_plan().to_dict(), **report})
    return 0


def add_run_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("run", help="run a scenario headless and print its metrics")
    p.add_argument("scenario", nargs="?", default="default", help="preset name or TOML/JSON scenario file")
    p.add_argument("--json", metavar="FILE", help="write every metric as JSON")
    p.add_argument("--replicas", type=int, help="a fleet of N replicas behind a router (overrides [cluster] replicas)")
    p.add_argument("--router", choices=ROUTER_POLICIES, help="the fleet's router (overrides [cluster] router)")
    add_scenario_flags(p)
    p.set_defaults(func=cmd_run)
    return p
