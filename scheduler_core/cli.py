"""servescope's headless command line (`servescope ...` or `python -m scheduler_core ...`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from .config import VLLM_PROFILES, EngineConfig, VllmCompat
from .errors import ConfigError
from .replay import load_trace, replay, write_log
from .scheduler import SchedulerError
from .simulation import Simulation
from .workload import synthetic_workload

SWITCHES = [f.name for f in fields(VllmCompat)]


def parse_switch(text: str) -> tuple[str, bool]:
    name, _, value = text.partition("=")
    if name not in SWITCHES:
        raise argparse.ArgumentTypeError(f"unknown switch {name!r}; expected one of {', '.join(SWITCHES)}")
    if value.lower() not in ("on", "off", "true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME=on or NAME=off")
    return name, value.lower() in ("on", "true", "1")


def cmd_replay(args: argparse.Namespace) -> int:
    compat = VllmCompat.for_version(args.vllm_version)
    if args.switch:
        compat = VllmCompat(**{**compat.__dict__, **dict(args.switch)})
    trace = load_trace(args.trace)
    num_steps = write_log(replay(trace, args.vllm_version, compat), args.out)
    print(f"wrote {num_steps} steps to {args.out}", file=sys.stderr)
    return 0


def demo_scenario() -> tuple[EngineConfig, list]:
    """A small engine under a burst of mixed requests: chunked prefill, a few preemptions."""
    config = EngineConfig(num_gpu_blocks=512, max_num_seqs=32, max_num_batched_tokens=512, max_model_len=4096)
    workload = synthetic_workload(48, arrival_rate=12.0, prompt_mean=600, output_mean=160, seed=7, max_prompt_len=3000)
    return config, workload


def cmd_demo(args: argparse.Namespace) -> int:
    config, workload = demo_scenario()
    sim = Simulation(config, workload)
    print(f"servescope demo: {len(workload)} requests, policy {config.policy}, {config.num_gpu_blocks} KV blocks "
          f"of {config.block_size} tokens, budget {config.max_num_batched_tokens} tokens/step")
    print(f"{'step':>5} {'clock ms':>9} {'step ms':>8} {'prefill':>7} {'decode':>6} {'run':>4} {'wait':>4} {'KV %':>5}  events")
    num_preemptions = 0
    last = None
    for record in sim.records():
        last = record
        num_preemptions += len(record.preempted)
        events = []
        for label, ids in (("+", record.admitted), ("resume ", record.resumed), ("preempt ", record.preempted),
                           ("done ", record.finished)):
            if ids:
                events.append(label + ",".join(ids))
        if record.step < args.steps or record.preempted:
            print(f"{record.step:>5} {record.clock_s_before * 1e3:>9.1f} {record.step_s * 1e3:>8.2f} "
                  f"{record.num_prefill_tokens:>7} {record.num_decode_tokens:>6} {record.num_running:>4} "
                  f"{record.num_waiting:>4} {record.kv_usage * 100:>5.1f}  {' '.join(events)}")
    print(f"finished {len(workload)} requests in {last.step + 1} steps, {last.clock_s_after:.2f} s simulated, "
          f"{num_preemptions} preemptions")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servescope", description="Step through a simulated vLLM serving engine.")
    commands = parser.add_subparsers(dest="command", required=True)

    replay_parser = commands.add_parser(
        "replay", help="run a recorded-vLLM trace through the vllm-v1 policy and write vLLM's step log format"
    )
    replay_parser.add_argument("trace", help="trace JSON (optionally .gz) in the vllm_oracle format")
    replay_parser.add_argument("--out", required=True, help="where to write the JSONL step log (.gz to compress)")
    replay_parser.add_argument("--vllm-version", default="0.33.0", choices=sorted(VLLM_PROFILES))
    replay_parser.add_argument(
        "--switch", action="append", type=parse_switch, metavar="NAME=on|off",
        help=f"flip one vLLM behaviour switch on top of the version profile ({', '.join(SWITCHES)})",
    )
    replay_parser.set_defaults(func=cmd_replay)

    demo_parser = commands.add_parser("demo", help="run a small built-in scenario and print what each step did")
    demo_parser.add_argument("--steps", type=int, default=30, help="print the first N steps (plus every preemption)")
    demo_parser.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, SchedulerError, OSError) as e:
        print(f"servescope: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
