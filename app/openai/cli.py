"""`serve --openai`'s flags: the scenario's and vLLM's engine arguments (`--vllm "vllm serve ..."`,
`--model` with a config.json, every engine flag `run` takes), and the served model's name, the
trace to write and the tokenizer file, each a path the operator names (no web request ever does)."""

from __future__ import annotations

import argparse
from pathlib import Path

from scheduler_core.cli.overrides import add_scenario_flags, build_scenario
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.engine_args import parse_vllm_command

from .replicas import MAX_REPLICAS, REPLICAS
from .serve import ServeOptions
from .tokenizer_file import FileTokenizer


def add_openai_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("--openai: a simulated engine on vLLM's OpenAI-compatible API")
    group.add_argument("--openai", action="store_true",
                       help="also serve one engine, configured by the flags below and --scenario, on /v1/completions, "
                            "/v1/chat/completions, /v1/models, /health, /version and /metrics, in real time")
    group.add_argument("--served-model-name", metavar="NAME",
                       help="the model name clients send (default: the --vllm line's model, else the scenario's)")
    group.add_argument("--save-trace", metavar="FILE.jsonl", type=Path,
                       help="write each request as it arrives (JSONL: arrival, prompt ids, output length), "
                            "to replay the session headless: `servescope run ... --workload FILE.jsonl`")
    group.add_argument("--replicas", metavar="N", type=int, default=1,
                       help=f"serve N engines (1 to {MAX_REPLICAS}), each a whole server on a port of its own: --port, "
                            "--port + 1, ...; on the first port, vLLM's X-data-parallel-rank header also picks one")
    group.add_argument("--tokenizer", metavar="tokenizer.json", type=Path,
                       help="the model's own tokenizer file, read locally (needs the `tokenizers` package); "
                            "default: the deterministic stand-in")
    add_scenario_flags(serve)


def served_options(args: argparse.Namespace) -> ServeOptions:
    scenario = build_scenario(args, args.scenario)
    if scenario.data_parallel_size > 1:
        raise ConfigError("data_parallel_size", "serve --openai serves one engine core per replica: leave "
                                                "data_parallel_size at 1 and give --replicas N for N engines")
    command = parse_vllm_command(args.vllm) if args.vllm else None
    name = args.served_model_name or (command.model if command and command.model else scenario.model)
    tokenizer = FileTokenizer(args.tokenizer) if args.tokenizer else None
    if args.save_trace is not None and args.save_trace.parent and not args.save_trace.parent.is_dir():
        raise ConfigError("save-trace", f"no directory {args.save_trace.parent}")
    REPLICAS.check("replicas", args.replicas)
    return ServeOptions(scenario, name, args.save_trace, tokenizer, replicas=args.replicas)
