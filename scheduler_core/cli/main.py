"""servescope's headless command line (`servescope ...` or `python -m scheduler_core ...`)."""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import fields
from pathlib import Path

from ..cluster import ROUTER_POLICIES
from ..engine.config import VLLM_PROFILES, VllmCompat
from ..engine.scheduler import SchedulerError
from ..engine.spec_decode import SpeculativeConfig
from ..errors import ConfigError
from ..exports.perfetto import export_perfetto
from ..exports.report import format_comparison, format_report
from ..lessons.catalog import LESSONS, LESSONS_BY_NAME
from ..lessons.fleet import FLEET_LESSONS, FLEET_LESSONS_BY_NAME
from ..lessons.framework import comparison_table, evaluate
from ..scenario.engine_args import (
    RESIZING_FIELDS,
    VllmCommand,
    add_engine_args,
    apply_settings,
    check_like_vllm,
    normalize_aliases,
    parse_vllm_command,
    settings_from_args,
)
from ..scenario.scenario import BATCH_LIMITS, PRESET_SCENARIOS, Scenario, apply_assignments, parse_assignment, with_vllm_defaults
from ..sim.metrics import SLO
from ..sim.replay import load_trace, replay, write_log
from ..sim.simulation import Simulation, SimulationStalled
from ..timing.cost_model import CostModel
from ..timing.presets import GPUS, MODELS, resolve_gpu, resolve_model
from ..workload.workload import NAMED_LENGTHS
from .fleet import add_sweep_command, cluster_table, run_fleet
from .output import run_with_progress, write_json

SWITCHES = [f.name for f in fields(VllmCompat)]


def parse_switch(text: str) -> tuple[str, bool]:
    name, _, value = text.partition("=")
    if name not in SWITCHES:
        raise argparse.ArgumentTypeError(f"unknown switch {name!r}; expected one of {', '.join(SWITCHES)}")
    if value.lower() not in ("on", "off", "true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME=on or NAME=off")
    return name, value.lower() in ("on", "true", "1")


def parse_rate(text: str) -> float:
    rate = float(text)  # accepts "inf"
    if not rate > 0:
        raise argparse.ArgumentTypeError("the arrival rate must be > 0 (inf: all at once)")
    return rate


# -- replay and demo ------------------------------------------------------------------------
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


# -- scenarios with overrides ---------------------------------------------------------------
# servescope's own settings (vLLM's engine arguments are in engine_args.ENGINE_ARGS).
ENGINE_FLAGS = {"policy": "policy", "num_cpu_blocks": "num_cpu_blocks", "kv_allocator": "kv_allocator"}
WORKLOAD_FLAGS = {"num_requests": "num_requests", "arrival_rate": "arrival_rate", "concurrency": "concurrency",
                  "seed": "seed"}


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


def build_scenario(args: argparse.Namespace, name_or_path: str, assignments=()) -> Scenario:
    """A scenario (preset name or file) with the command line's overrides applied: first a whole
    `--vllm` command line, then servescope's flags (which win where both speak). What is still
    open after that takes vLLM's default (`with_vllm_defaults`)."""
    data, name = scenario_data(name_or_path)
    command = parse_vllm_command(args.vllm) if args.vllm is not None else None
    if command is not None and command.ignored:
        print(f"servescope: warning: not simulated, ignored: {' '.join(command.ignored)}", file=sys.stderr)
    base = normalize_aliases(data)
    data = apply_command_line(copy.deepcopy(base), args, command, assignments)
    if name_or_path in PRESET_SCENARIOS and any(data.get(key) != base.get(key) for key in RESIZING_FIELDS):
        # A preset's batch limits were chosen for its own model and GPU, like its pool size: on
        # other hardware they give way to vLLM's defaults for it, unless the command line sets them.
        for key in BATCH_LIMITS:
            base.get("engine", {}).pop(key, None)
        data = apply_command_line(base, args, command, assignments)
    if name_or_path in PRESET_SCENARIOS:
        fit_shared_prefixes(data, base)
    data = with_vllm_defaults(data)
    check_like_vllm(data.get("engine", {}))  # vLLM checks after filling in its defaults
    return Scenario.from_dict(data, name=name)


def apply_command_line(data: dict, args: argparse.Namespace, command: VllmCommand | None, assignments) -> dict:
    """`data` with the command line written into it: the `--vllm` line, then servescope's flags,
    then `--set` assignments."""
    if command is not None:
        apply_settings(data, ({"model": command.model} if command.model else {}) | command.settings)
    apply_settings(data, {flag: getattr(args, flag) for flag in ("model", "gpu") if getattr(args, flag) is not None})
    apply_settings(data, settings_from_args(args))
    engine, workload = data.setdefault("engine", {}), data.setdefault("workload", {})
    for flag, key in ENGINE_FLAGS.items():
        if getattr(args, flag) is not None:
            engine[key] = getattr(args, flag)
    for flag, key in WORKLOAD_FLAGS.items():
        if getattr(args, flag) is not None:
            workload[key] = getattr(args, flag)
    if args.workload is not None:
        if args.workload in NAMED_LENGTHS or args.workload in ("fixed", "uniform", "lognormal"):
            workload["lengths"], data["trace"] = args.workload, ""
        elif Path(args.workload).exists():
            data["trace"] = args.workload
        else:
            raise ConfigError("workload", f"{args.workload!r} is neither a named distribution "
                                          f"({', '.join(NAMED_LENGTHS)}) nor a trace file")
    if args.vllm_version is not None:
        engine["compat"] = VllmCompat.for_version(args.vllm_version).__dict__
    if args.slo_ttft_ms is not None:
        data["slo_ttft_s"] = args.slo_ttft_ms / 1e3
    if args.slo_tpot_ms is not None:
        data["slo_tpot_s"] = args.slo_tpot_ms / 1e3
    apply_assignments(data, assignments)
    return data


def print_startup_lines(scenario: Scenario) -> None:
    """What vLLM would log about memory while starting this configuration."""
    plan = scenario.memory_plan()
    print(f"vLLM startup, per GPU ({scenario.tensor_parallel_size} x {scenario.gpu}):")
    for line in plan.startup_lines():
        print(f"  {line}")


def cmd_run(args: argparse.Namespace) -> int:
    scenario = build_scenario(args, args.scenario)
    cluster = cluster_table(args)
    if cluster is not None:
        return run_fleet(args, scenario, cluster)
    print_startup_lines(scenario)
    sim = scenario.build(keep_finished=False)
    wall_s = run_with_progress(sim, show=args.progress if args.progress is not None else sys.stderr.isatty())
    report = sim.metrics.report(wall_s)
    print(format_report(report, title=f"{scenario.name}: {scenario.model} on {scenario.tensor_parallel_size} x {scenario.gpu}, "
                                      f"policy {scenario.engine.policy}, {scenario.engine.num_gpu_blocks} KV blocks"))
    if args.json:
        write_json(args.json, {"scenario": scenario.to_dict(), "memory": scenario.memory_plan().to_dict(), **report})
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    a, b = build_scenario(args, args.a), build_scenario(args, args.b, args.set_b or ())
    # The same requests through both configurations: B runs A's workload.
    workload = a.build_workload()
    reports = []
    for scenario in (a, b):
        sim = Simulation(scenario.engine, workload, scenario.cost_model(), keep_finished=False,
                         slo=SLO(scenario.slo_ttft_s, scenario.slo_tpot_s))
        wall_s = run_with_progress(sim, show=args.progress if args.progress is not None else sys.stderr.isatty())
        reports.append(sim.metrics.report(wall_s))
    changes = ", ".join(f"{k}={v}" for k, v in args.set_b or ()) or "no changes"
    print(f"A = {a.name}, B = {b.name} with {changes}; the same {len(workload.requests)} requests through both")
    print(format_comparison(reports[0], reports[1], "A", "B"))
    if args.json:
        write_json(args.json, {"a": {"scenario": a.to_dict(), **reports[0]}, "b": {"scenario": b.to_dict(), **reports[1]}})
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    scenario = build_scenario(args, args.scenario)
    with open(args.perfetto, "w") as out:
        num_steps = export_perfetto(scenario.build(keep_finished=True), out)
    print(f"wrote {num_steps} steps to {args.perfetto} (open it in ui.perfetto.dev)", file=sys.stderr)
    return 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    for name, data in PRESET_SCENARIOS.items():
        print(f"{name:<34} {data['description']}")
    return 0


def cmd_lesson(args: argparse.Namespace) -> int:
    """A guided scenario: its arms side by side and each narrated claim, checked on the numbers."""
    if not args.name:
        for lesson in LESSONS:
            print(f"{lesson.name:<22} {lesson.title}")
        for lesson in FLEET_LESSONS:
            print(f"{lesson.name:<22} {lesson.title} (a fleet: {lesson.link})")
        return 0
    lesson = LESSONS_BY_NAME.get(args.name) or FLEET_LESSONS_BY_NAME.get(args.name)
    if lesson is None:
        names = [*LESSONS_BY_NAME, *FLEET_LESSONS_BY_NAME]
        raise ConfigError("lesson", f"unknown lesson {args.name!r}; expected one of {', '.join(names)}")
    results = lesson.run()
    print(f"{lesson.title}\n{lesson.summary}\n")
    print(comparison_table(lesson, results))
    print()
    verdicts = evaluate(lesson, results)
    for holds, text in verdicts:
        print(f"  {'holds' if holds else 'FAILS'}: {text}")
    return 0 if all(holds for holds, _ in verdicts) else 1


# -- step time ------------------------------------------------------------------------------
def parse_batch(batch: object, where: str) -> tuple[list[tuple[int, int]], int]:
    """(chunks, sequences sampled) from [["prefill", C, P] | ["decode", N, L], ...]."""
    if not isinstance(batch, list) or not batch:
        raise ConfigError(where, "a batch is a non-empty list of parts")
    chunks, num_sampled = [], 0
    for i, part in enumerate(batch):
        here = f"{where}[{i}]"
        if not (isinstance(part, list) and len(part) == 3 and part[0] in ("prefill", "decode")
                and all(isinstance(x, int) and not isinstance(x, bool) for x in part[1:])):
            raise ConfigError(here, f"expected [\"prefill\", C, P] or [\"decode\", N, L], got {part!r}")
        kind, count, context = part
        if count < 1 or context < 0:
            raise ConfigError(here, "needs C or N >= 1 and P or L >= 0")
        if kind == "prefill":
            chunks.append((count, context))
            num_sampled += 1
        else:
            chunks.extend([(1, context)] * count)
            num_sampled += count
    return chunks, num_sampled


def cmd_step_time(args: argparse.Namespace) -> int:
    cost_model = CostModel(resolve_model(args.model), resolve_gpu(args.gpu), args.tp)
    text = Path(args.batch[1:]).read_text() if args.batch.startswith("@") else args.batch
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError("batch", f"not valid JSON ({e.msg})") from None
    batches = value if args.batch.startswith("@") else [value]
    if args.batch.startswith("@") and not isinstance(value, list):
        raise ConfigError("batch", "the file must hold a list of batches")
    for index, batch in enumerate(batches):
        chunks, num_sampled = parse_batch(batch, f"batch[{index}]" if args.batch.startswith("@") else "batch")
        print(f"{cost_model.step_time(chunks, num_sampled)[0] * 1e3:.4f}")
    return 0


# -- the parser -----------------------------------------------------------------------------
def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("overrides of the scenario's fields")
    group.add_argument("--vllm", metavar='"vllm serve MODEL ..."',
                       help="a whole vLLM command line: the engine arguments servescope models are applied (flags "
                            "given here win); the others are listed in a warning")
    group.add_argument("--model", help=f"preset ({', '.join(MODELS)}), its Hugging Face id, or a local config.json "
                                       "(or its folder)")
    group.add_argument("--gpu", choices=list(GPUS))
    group.add_argument("--policy", choices=["static", "vllm-v0", "vllm-v1"])
    group.add_argument("--workload", help=f"a named length distribution ({', '.join(NAMED_LENGTHS)}) or a trace file (CSV, JSONL)")
    group.add_argument("--num-requests", type=int)
    group.add_argument("--arrival-rate", type=parse_rate, help="requests/s; inf = all at once")
    group.add_argument("--concurrency", type=int, help="closed loop: N clients, each sends its next request when its last finishes")
    add_engine_args(group)
    group.add_argument("--num-cpu-blocks", type=int, help="swap space in blocks (or --swap-space in GiB)")
    group.add_argument("--kv-allocator", choices=["paged", "contiguous"])
    group.add_argument("--vllm-version", choices=sorted(VLLM_PROFILES))
    group.add_argument("--seed", type=int, help="workload seed")
    group.add_argument("--slo-ttft-ms", type=float, help="TTFT objective for goodput")
    group.add_argument("--slo-tpot-ms", type=float, help="TPOT objective for goodput")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servescope", description="Step through a simulated vLLM serving engine.")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("run", help="run a scenario headless and print its metrics")
    p.add_argument("scenario", nargs="?", default="default", help="preset name or TOML/JSON scenario file")
    p.add_argument("--json", metavar="FILE", help="write every metric as JSON")
    p.add_argument("--replicas", type=int, help="a fleet of N replicas behind a router (overrides [cluster] replicas)")
    p.add_argument("--router", choices=ROUTER_POLICIES, help="the fleet's router (overrides [cluster] router)")
    add_scenario_flags(p)
    p.set_defaults(func=cmd_run)

    p = commands.add_parser("compare", help="the same workload through two configurations, side by side")
    p.add_argument("a", help="configuration A (preset or file); its workload is used for both")
    p.add_argument("b", help="configuration B (preset or file)")
    p.add_argument("--set-b", action="append", type=parse_assignment_arg, metavar="FIELD=VALUE",
                   help="change one field of B only, e.g. policy=static or enable_chunked_prefill=false")
    p.add_argument("--json", metavar="FILE")
    add_scenario_flags(p)
    p.set_defaults(func=cmd_compare)

    add_sweep_command(commands)

    p = commands.add_parser("export", help="write a run as a Chrome/Perfetto trace")
    p.add_argument("scenario", nargs="?", default="default")
    p.add_argument("--perfetto", required=True, metavar="FILE")
    add_scenario_flags(p)
    p.set_defaults(func=cmd_export)

    p = commands.add_parser("step-time", help="predicted time of one step, in milliseconds")
    p.add_argument("--model", required=True, help=f"preset ({', '.join(MODELS)}) or a JSON file")
    p.add_argument("--gpu", required=True, choices=list(GPUS))
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--batch", required=True,
                   help='JSON list of ["prefill", C, P] and ["decode", N, L] parts, or @FILE holding a list of batches')
    p.set_defaults(func=cmd_step_time)

    p = commands.add_parser("lesson", help="run a guided scenario and check what it claims (no name: list them)")
    p.add_argument("name", nargs="?")
    p.set_defaults(func=cmd_lesson)

    p = commands.add_parser("scenarios", help="list the preset scenarios")
    p.set_defaults(func=cmd_scenarios)

    p = commands.add_parser("replay", help="run a recorded-vLLM trace through the vllm-v1 policy, writing vLLM's log format")
    p.add_argument("trace", help="trace JSON (optionally .gz) in the vllm_oracle format")
    p.add_argument("--out", required=True, help="where to write the JSONL step log (.gz to compress)")
    p.add_argument("--vllm-version", default="0.33.0", choices=sorted(VLLM_PROFILES))
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

    p = commands.add_parser("demo", help="run the built-in default scenario and print what each step did")
    p.add_argument("--steps", type=int, default=30, help="print the first N steps (plus every preemption)")
    p.set_defaults(func=cmd_demo)
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
