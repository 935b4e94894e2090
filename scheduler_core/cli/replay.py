"""`servescope replay`: a recorded-vLLM trace through the vllm-v1 policy, written in vLLM's log format."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from ..engine.config import VLLM_PROFILES, VllmCompat
from ..engine.spec_decode import SpeculativeConfig
from ..sim.replay import load_trace, replay, write_log

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
    spec = SpeculativeConfig.from_json(args.speculative_config) if args.speculative_config else None
    lines = replay(trace, args.vllm_version, compat, max_steps=args.max_steps, async_scheduling=args.async_scheduling,
                   speculative_config=spec)
    num_steps = write_log(lines, args.out)
    print(f"wrote {num_steps} steps to {args.out}", file=sys.stderr)
    return 0


def add_replay_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("replay", help="run a recorded-vLLM trace through the vllm-v1 policy, writing vLLM's log format")
    p.add_argument("trace", help="trace JSON (optionally .gz) in the vllm_oracle format")
    p.add_argument("--out", required=True, help="where to write the JSONL step log (.gz to compress)")
    p.add_argument("--vllm-version", default="0.33.0", choices=list(VLLM_PROFILES))
    p.add_argument("--switch", action="append", type=parse_switch, metavar="NAME=on|off",
                   help=f"flip one vLLM behaviour switch on top of the version profile ({', '.join(SWITCHES)})")
    p.add_argument("--async-scheduling", action=argparse.BooleanOptionalAction, default=False,
                   help="vLLM's async scheduling (AsyncScheduler + a batch queue of two): one log line per "
                        "pass of the engine loop; off by default, since the recordings of the synchronous "
                        "Scheduler are what replay checks")
    p.add_argument("--speculative-config", metavar="JSON",
                   help='vLLM\'s speculative decoding config, e.g. \'{"method": "eagle", "num_speculative_tokens": 3}\', '
                        'plus servescope\'s "acceptance_rate" (per position) and "acceptance_seed"')
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop with an error after this many steps (default: generous, from the trace's size)")
    p.set_defaults(func=cmd_replay)
    return p
