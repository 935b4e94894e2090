"""`servescope demo` and `servescope scenarios`: the built-in scenarios, one narrated step by step, all listed."""

from __future__ import annotations

import argparse

from ..exports.report import format_report
from ..scenario.scenario import PRESET_SCENARIOS, Scenario


def cmd_demo(args: argparse.Namespace) -> int:
    scenario = Scenario.from_dict(PRESET_SCENARIOS["default"], name="default")
    sim = scenario.build()
    engine = scenario.engine
    print(f"servescope demo: {sim.num_requests} requests, {scenario.model} on {scenario.gpu}, policy {engine.policy}, "
          f"{engine.num_gpu_blocks} KV blocks of {engine.block_size} tokens, budget {engine.max_num_batched_tokens} tokens/step")
    print(f"{'step':>5} {'clock ms':>9} {'step ms':>8} {'prefill':>7} {'decode':>6} {'run':>4} {'wait':>4} {'KV %':>5}  events")
    for record in sim.records():
        events = []
        for label, ids in (("+", record.admitted), ("resume ", record.resumed), ("preempt ", record.preempted),
                           ("done ", record.finished)):
            if ids:
                events.append(label + ",".join(ids))
        if record.step < args.steps or record.preempted:
            print(f"{record.step:>5} {record.clock_s_before * 1e3:>9.1f} {record.step_s * 1e3:>8.2f} "
                  f"{record.num_prefill_tokens:>7} {record.num_decode_tokens:>6} {record.num_running:>4} "
                  f"{record.num_waiting:>4} {record.kv_usage * 100:>5.1f}  {' '.join(events)}")
    print(format_report(sim.metrics.report(), title="\nmetrics:"))
    return 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    for name, data in PRESET_SCENARIOS.items():
        print(f"{name:<34} {data['description']}")
    return 0


def add_demo_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("demo", help="run the built-in default scenario and print what each step did")
    p.add_argument("--steps", type=int, default=30, help="print the first N steps (plus every preemption)")
    p.set_defaults(func=cmd_demo)
    return p


def add_scenarios_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("scenarios", help="list the preset scenarios")
    p.set_defaults(func=cmd_scenarios)
    return p
