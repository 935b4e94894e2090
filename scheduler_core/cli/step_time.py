"""`servescope step-time`: the cost model's predicted time of one step, in milliseconds."""

from __future__ import annotations

import argparse

from ..bounds import MAX_TOKENS_PER_CONTEXT
from ..errors import ConfigError, shown
from ..files import MAX_SCENARIO_BYTES, parse_json, read_text
from ..timing.cost_model import CostModel
from ..timing.presets import GPUS, MODELS, resolve_gpu, resolve_model


def parse_batch(batch: object, where: str) -> tuple[list[tuple[int, int]], int]:
    """(chunks, sequences sampled) from [["prefill", C, P] | ["decode", N, L], ...]."""
    if not isinstance(batch, list) or not batch:
        raise ConfigError(where, "a batch is a non-empty list of parts")
    chunks, num_sampled = [], 0
    for i, part in enumerate(batch):
        here = f"{where}[{i}]"
        if not (isinstance(part, list) and len(part) == 3 and part[0] in ("prefill", "decode")
                and all(isinstance(x, int) and not isinstance(x, bool) for x in part[1:])):
            raise ConfigError(here, f"expected [\"prefill\", C, P] or [\"decode\", N, L], got {shown(part)}")
        kind, count, context = part
        if count < 1 or context < 0:
            raise ConfigError(here, "needs C or N >= 1 and P or L >= 0")
        if count > MAX_TOKENS_PER_CONTEXT or context > MAX_TOKENS_PER_CONTEXT:
            raise ConfigError(here, f"C, N, P and L are at most {MAX_TOKENS_PER_CONTEXT:,}")
        if kind == "prefill":
            chunks.append((count, context))
            num_sampled += 1
        else:
            chunks.extend([(1, context)] * count)
            num_sampled += count
    return chunks, num_sampled


def cmd_step_time(args: argparse.Namespace) -> int:
    cost_model = CostModel(resolve_model(args.model), resolve_gpu(args.gpu), args.tp)
    text = read_text(args.batch[1:], MAX_SCENARIO_BYTES) if args.batch.startswith("@") else args.batch
    value = parse_json(text, args.batch[1:] if args.batch.startswith("@") else "batch")
    batches = value if args.batch.startswith("@") else [value]
    if args.batch.startswith("@") and not isinstance(value, list):
        raise ConfigError("batch", "the file must hold a list of batches")
    for index, batch in enumerate(batches):
        chunks, num_sampled = parse_batch(batch, f"batch[{index}]" if args.batch.startswith("@") else "batch")
        print(f"{cost_model.step_time(chunks, num_sampled)[0] * 1e3:.4f}")
    return 0


def add_step_time_command(commands) -> argparse.ArgumentParser:
    p = commands.add_parser("step-time", help="predicted time of one step, in milliseconds")
    p.add_argument("--model", required=True, help=f"preset ({', '.join(MODELS)}) or a JSON file")
    p.add_argument("--gpu", required=True, choices=list(GPUS))
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--batch", required=True,
                   help='JSON list of ["prefill", C, P] and ["decode", N, L] parts, or @FILE holding a list of batches')
    p.set_defaults(func=cmd_step_time)
    return p
