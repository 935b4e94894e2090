"""servescope's headless command line (`servescope ...` or `python -m scheduler_core ...`): the parser
of every command, each in its own module, and the dispatch to it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ..engine.scheduler import SchedulerError
from ..errors import ConfigError
from ..sim.simulation import SimulationStalled
from .compare import add_compare_command
from .demo import add_demo_command, add_scenarios_command
from .export import add_export_command
from .fleet import add_sweep_command
from .lab import add_lab_command
from .lesson import add_lesson_command
from .replay import add_replay_command
from .run import add_run_command
from .step_time import add_step_time_command

# Each command's name and the function adding its parser, in the order `--help` lists them.
COMMANDS = {"run": add_run_command, "compare": add_compare_command, "sweep": add_sweep_command, "export": add_export_command,
            "step-time": add_step_time_command, "lesson": add_lesson_command, "scenarios": add_scenarios_command,
            "replay": add_replay_command, "demo": add_demo_command, "lab": add_lab_command}

# A hook that adds commands or flags, given what argparse's `add_subparsers()` returned (to add
# commands to) and each command's parser by name (to add flags to). The `servescope` command adds
# `serve` and `sweep --ray` with one (`app/cli.py`).
Extension = Callable[[object, dict[str, argparse.ArgumentParser]], None]


def build_parser(extend: Extension | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servescope", description="Step through a simulated vLLM serving engine.")
    commands = parser.add_subparsers(dest="command", required=True)
    parsers = {name: add_command(commands) for name, add_command in COMMANDS.items()}
    if extend is not None:
        extend(commands, parsers)
    return parser


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    args = (parser or build_parser()).parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, SchedulerError, SimulationStalled, OSError) as e:
        print(f"servescope: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
