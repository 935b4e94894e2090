"""The scenario a command runs: a preset or a file, with the command line's overrides applied.

`run`, `compare` and `export` share these flags: a whole `--vllm` command line, the scenario's and
vLLM's engine arguments (`scenario/engine_args.py`, made from `Scenario`'s and `EngineConfig`'s
declarations), the workload's (from `WorkloadConfig`'s) and a few of the command's own.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
from pathlib import Path

from ..engine.config import implied_release
from ..engine.releases import LATEST, VLLM_RELEASES
from ..errors import ConfigError
from ..scenario.engine_args import (
    RESIZING_FIELDS,
    VllmCommand,
    add_engine_args,
    apply_settings,
    check_like_vllm,
    parse_vllm_command,
    settings_from_args,
)
from ..scenario.scenario import (
    BATCH_LIMITS,
    PRESET_SCENARIOS,
    Scenario,
    apply_assignments,
    named_release,
    normalize_aliases,
    parse_assignment,
    with_vllm_defaults,
)
from ..workload.workload import NAMED_LENGTHS, WORKLOAD_SETTINGS


def parse_rate(text: str) -> float:
    rate = float(text)  # accepts "inf"
    if not rate > 0:
        raise argparse.ArgumentTypeError("the arrival rate must be > 0 (inf: all at once)")
    return rate


def positive_number(text: str) -> float:
    """A flag's value that must be a finite number > 0 (a price, a count of workers)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text[:40]!r}")
    return value


def positive_int(text: str) -> int:
    value = positive_number(text)
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text[:40]!r}")
    return int(value)


# The workload settings with a flag of servescope's own; the core's checks name a value out of bounds.
WORKLOAD_FLAGS = {name: s for name, s in WORKLOAD_SETTINGS.items() if s.flag}


def scenario_data(name_or_path: str) -> tuple[dict, str]:
    if name_or_path in PRESET_SCENARIOS:
        return json.loads(json.dumps(PRESET_SCENARIOS[name_or_path])), name_or_path
    path = Path(name_or_path)
    data = Scenario.read_data(path)
    if isinstance(data, dict):
        data.pop("cluster", None)  # a fleet's table; `run` reads it separately
    try:
        Scenario.from_dict(data, name=path.stem)  # report a bad file before any override is applied to it
    except ConfigError as e:
        raise ConfigError(f"{path}:{e.field}", e.reason) from None
    return data, path.stem


def parse_assignment_arg(text: str) -> tuple[str, object]:
    try:
        return parse_assignment(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def fit_shared_prefixes(data: dict, preset: dict) -> None:
    """A preset's shared prompt prefixes give way to fewer requests asked on the command line
    (`--num-requests 2` on a preset with three prefixes), unless the command line set them too."""
    workload, preset_workload = data.get("workload", {}), preset.get("workload", {})
    prefixes, num_requests = workload.get("num_shared_prefixes"), workload.get("num_requests")
    if (isinstance(prefixes, int) and isinstance(num_requests, int) and 1 <= num_requests < prefixes
            and prefixes == preset_workload.get("num_shared_prefixes")):
        workload["num_shared_prefixes"] = num_requests


# A preset's settings that shape its own traffic: a `--workload` asked on the command line replaces
# them, since a named distribution's lengths (or a trace's) are what was asked. The default preset's
# three 96-token system prompts once lengthened every `--workload sharegpt` prompt by 96 tokens.
PRESET_TRAFFIC_SHAPE = ("shared_prefix_len", "num_shared_prefixes")


def drop_preset_traffic_shape(base: dict) -> None:
    workload = base.get("workload")
    if isinstance(workload, dict):
        for key in PRESET_TRAFFIC_SHAPE:
            workload.pop(key, None)


def build_scenario(args: argparse.Namespace, name_or_path: str, assignments=()) -> Scenario:
    """A scenario (preset name or file) with the command line's overrides applied: first a whole
    `--vllm` command line, then servescope's flags (which win where both speak). What is still
    open after that takes vLLM's default (`with_vllm_defaults`)."""
    data, name = scenario_data(name_or_path)
    command = parse_vllm_command(args.vllm) if args.vllm is not None else None
    base = normalize_aliases(data)
    if name_or_path in PRESET_SCENARIOS and args.workload is not None:
        drop_preset_traffic_shape(base)  # a sweep's `shared_prefix_len=...` still gives them
    data = apply_command_line(copy.deepcopy(base), args, command, assignments)
    if name_or_path in PRESET_SCENARIOS and any(data.get(key) != base.get(key) for key in RESIZING_FIELDS):
        # A preset's batch limits were chosen for its own model and GPU, like its pool size: on
        # other hardware they give way to vLLM's defaults for it, unless the command line sets them.
        for key in BATCH_LIMITS:
            base.get("engine", {}).pop(key, None)
        data = apply_command_line(base, args, command, assignments)
    if name_or_path in PRESET_SCENARIOS:
        fit_shared_prefixes(data, base)
    if command is not None:
        release_flags(command, data)
    data = with_vllm_defaults(data)
    check_like_vllm(data.get("engine", {}))  # vLLM checks after filling in its defaults
    return Scenario.from_dict(data, name=name)


def release_flags(command: VllmCommand, data: dict) -> None:
    """The `--vllm` line's flags that only the release gives a meaning: a rule switch vLLM exposes
    (`--no-scheduler-reserve-full-isl`) sets it; an opt-in flag the release has but servescope does not
    model (`--watermark` on 0.24 or later) is refused by name, not ignored, since the run would not be
    the one asked for; a flag the release does not have is refused as its `vllm serve` would. The
    rest are listed in one warning."""
    release = named_release(data) or implied_release(data.get("engine", {}))
    ignored = []
    for word in command.ignored:
        flag = word.split()[0].partition("=")[0]
        if (reason := release.flag_refusal(flag)) is not None:
            raise ConfigError(flag, reason)
        if (switch := release.switch_of_flag(flag)) is not None and word == flag:
            compat = data.setdefault("engine", {}).setdefault("compat", {})
            if isinstance(compat, dict):
                compat[switch[0]] = switch[1]
        else:
            ignored.append(word)
    if ignored:
        print(f"servescope: warning: not simulated, ignored: {' '.join(ignored)}", file=sys.stderr)


def apply_command_line(data: dict, args: argparse.Namespace, command: VllmCommand | None, assignments) -> dict:
    """`data` with the command line written into it: the `--vllm` line, then servescope's flags,
    then `--set` assignments."""
    if command is not None:
        apply_settings(data, ({"model": command.model} if command.model else {}) | command.settings)
    apply_settings(data, settings_from_args(args))
    engine, workload = data.setdefault("engine", {}), data.setdefault("workload", {})
    for name in WORKLOAD_FLAGS:
        if getattr(args, name) is not None:
            workload[name] = getattr(args, name)
    if args.workload is not None:
        if args.workload in NAMED_LENGTHS or args.workload in ("fixed", "uniform", "lognormal"):
            workload["lengths"], data["trace"] = args.workload, ""
        elif Path(args.workload).exists():
            data["trace"] = args.workload
        else:
            raise ConfigError("workload", f"{args.workload!r} is neither a named distribution "
                                          f"({', '.join(NAMED_LENGTHS)}) nor a trace file")
    if args.vllm_version is not None:
        # The command line's release wins over a scenario file's own rule switches.
        data["vllm_version"] = args.vllm_version
        engine.pop("compat", None)
    if args.slo_ttft_ms is not None:
        data["slo_ttft_s"] = args.slo_ttft_ms / 1e3
    if args.slo_tpot_ms is not None:
        data["slo_tpot_s"] = args.slo_tpot_ms / 1e3
    apply_assignments(data, assignments)
    return data


def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("overrides of the scenario's fields",
                                      "lengths and token counts also take vLLM's forms: 32k (32,000), 32K (32,768)")
    group.add_argument("--vllm", metavar='"vllm serve MODEL ..."',
                       help="a whole vLLM command line: the engine arguments servescope models are applied (flags "
                            "given here win); the others are listed in a warning")
    group.add_argument("--workload",
                       help=f"a named length distribution ({', '.join(NAMED_LENGTHS)}) or a trace file (CSV, JSONL)")
    for name, declared in WORKLOAD_FLAGS.items():
        kind = parse_rate if declared.bound.infinite_ok else declared.type
        group.add_argument(declared.flag, dest=name, type=kind, help=declared.help)
    add_engine_args(group)
    group.add_argument("--vllm-version", choices=VLLM_RELEASES, metavar="VERSION",
                       help=f"the vLLM release whose scheduler rules and defaults are simulated: one of "
                            f"{', '.join(VLLM_RELEASES)} (default: the scenario's, else {LATEST})")
    group.add_argument("--slo-ttft-ms", type=float, help="TTFT objective for goodput")
    group.add_argument("--slo-tpot-ms", type=float, help="TPOT objective for goodput")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")
