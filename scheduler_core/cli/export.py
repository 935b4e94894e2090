"""`servescope export`: a run as a Chrome/Perfetto trace."""

from __future__ import annotations

import argparse
import sys

from ..exports.perfetto import export_perfetto
from .overrides import add_scenario_flags, build_scenario


def cmd_export(args: argparse.Namespace) -> int:
    scenario = build_scenario(args, args.scenario)
    with open(args.perfetto, "w") as out:
        num_steps = export_perfetto(scenario.build(keep_finished=True), out)
    print(f"wrote {num_steps} steps to {args.perfetto} (open it in ui.perfetto.dev)", file=sys.stderr)
    return 0


def add_export_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("export", help="write a run as a Chrome/Perfetto trace")
    p.add_argument("scenario", nargs="?", default="default")
    p.add_argument("--perfetto", required=True, metavar="FILE")
    add_scenario_flags(p)
    p.set_defaults(func=cmd_export)
    return p
