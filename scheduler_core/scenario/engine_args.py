"""vLLM's engine arguments as `vllm serve` spells them, and a whole `vllm serve` command line read
into scenario settings.

One table (`ENGINE_ARGS`) says, for each argument the simulation models, its flag, the scenario
field it sets and how its value is read, made from the declarations (`bounds.setting`) of
`Scenario` (memory and hardware) and `EngineConfig`; `servescope run --max-num-seqs 128` and
`servescope run --vllm "vllm serve MODEL --max-num-seqs 128"` both go through it, so the two give
the same scenario. A value vLLM would reject is rejected with vLLM's own reason, naming the flag.
Names and checks follow vLLM 0.33.0 (`vllm/engine/arg_utils.py`, `vllm/config/cache.py`,
`vllm/config/scheduler.py`); `--swap-space` and `--preemption-mode` are vLLM 0.10's (V0) arguments.
"""

from __future__ import annotations

import argparse
import re
import shlex
import typing
from collections.abc import Callable
from dataclasses import dataclass

from ..bounds import Bound, Setting
from ..engine.config import ENGINE_BOUNDS, ENGINE_SETTINGS, EngineConfig
from ..engine.spec_decode import SpeculativeConfig
from ..errors import ConfigError
from .scenario import SCENARIO_ALIASES, SCENARIO_SETTINGS


def human_readable_int(text: str) -> int:
    """vLLM's integer syntax for lengths and budgets: 8192, 32k (32,000), 1.5k (1,500) or 32K (32,768)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG])", text.strip())
    if not match:
        return int(text)
    number, suffix = match.groups()
    if suffix.islower():
        return int(float(number) * 1000 ** ("kmg".index(suffix) + 1))
    if "." in number:
        raise ValueError(f"Decimals are not allowed with binary suffixes like {suffix}. "
                         f"Did you mean to use {number}{suffix.lower()} instead?")
    return int(number) * 1024 ** ("KMG".index(suffix) + 1)


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = human_readable_int(text)
        if value < low:
            raise ValueError(f"Input should be greater than or equal to {low}, got {value}")
        return value
    return parse


def _number_within(bound: Bound) -> Callable[[str], float]:
    """A number in `bound`, refused in the words of vLLM's pydantic configs (NaN and inf are out of
    any finite bound: no comparison lets them through)."""
    def parse(text: str) -> float:
        value = float(text)
        if not (value > bound.low if bound.low_open else value >= bound.low):
            raise ValueError(f"Input should be greater than {'' if bound.low_open else 'or equal to '}{bound.low:g}, got {value}")
        if not value <= bound.high:
            raise ValueError(f"Input should be less than or equal to {bound.high:g}, got {value}")
        return value
    return parse


def _speculative_config(text: str) -> dict:
    """vLLM's JSON for `--speculative-config`, checked and written out as scenario data."""
    try:
        spec = SpeculativeConfig.from_json(text)
    except ConfigError as e:
        raise ValueError(f"{e.field}: {e.reason}") from None
    return {**spec.__dict__, "acceptance_rate": list(spec.acceptance_rate)}


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"invalid choice: {text!r} (choose from {', '.join(repr(c) for c in choices)})")
        return text
    return parse


@dataclass(frozen=True)
class EngineArg:
    """One vLLM engine argument the simulation models: its flag, the scenario field it sets
    (`engine.x` for an engine field, a bare name for a top-level scenario field) and its parser."""

    flag: str
    field: str
    parse: Callable[[str], object] | None  # None: an on/off switch (--x / --no-x)
    help: str
    aliases: tuple[str, ...] = ()  # shorter flags servescope had before it spoke vLLM's names
    choices: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @classmethod
    def of_setting(cls, declared: Setting, section: str = "engine.") -> "EngineArg":
        """The argument of a setting, as its config declares it (`EngineConfig`'s, or with `section=""`,
        `Scenario`'s own); its value is read by its type."""
        if declared.type is bool:
            parse = None
        elif declared.choices:
            parse = _choice(declared.choices)
        elif declared.type is int and not declared.vllm_flag:
            parse = int  # servescope's own flag: the core's check names a value out of bounds, as for a file's
        elif declared.type is int:
            parse = _int_at_least(int(declared.bound.low))
        elif declared.type is float:
            parse = _number_within(declared.bound)
        elif declared.type is str:
            parse = str
        elif SpeculativeConfig in typing.get_args(declared.type):
            parse = _speculative_config
        else:
            raise TypeError(f"no command-line reading for {declared.name}: {declared.type}")
        return cls(declared.flag, section + declared.name, parse, declared.help, declared.aliases, declared.choices)


def _args_of(settings: dict[str, Setting], vllm_flag: bool, section: str) -> tuple[EngineArg, ...]:
    return tuple(EngineArg.of_setting(s, section) for s in settings.values() if s.flag and s.vllm_flag == vllm_flag)


# vLLM's arguments, from their declarations: the scenario's (memory and hardware), then the engine's.
ENGINE_ARGS = (*_args_of(SCENARIO_SETTINGS, True, ""), *_args_of(ENGINE_SETTINGS, True, "engine."))
ARGS_BY_FLAG = {name: arg for arg in ENGINE_ARGS for name in (arg.flag, *arg.aliases)}
# Settings vLLM does not have, or spells otherwise, under servescope's own flags (a `vllm serve`
# line cannot carry them): the engine's, and the scenario's model and GPU.
OWN_ENGINE_ARGS = _args_of(ENGINE_SETTINGS, False, "engine.")
OWN_SCENARIO_ARGS = _args_of(SCENARIO_SETTINGS, False, "")


# -- the same table on servescope's own command line ----------------------------------------------
def add_engine_args(group) -> None:
    """Add every engine argument, under vLLM's flag and its older aliases, then servescope's own, to an argparse group."""
    for arg in (*OWN_SCENARIO_ARGS, *ENGINE_ARGS, *OWN_ENGINE_ARGS):
        names = [arg.flag, *arg.aliases]
        if arg.parse is None:
            group.add_argument(*names, dest=arg.dest, action=argparse.BooleanOptionalAction, default=None, help=arg.help)
        else:
            group.add_argument(*names, dest=arg.dest, type=_argparse_type(arg), default=None, help=arg.help,
                               metavar="{" + ",".join(arg.choices) + "}" if arg.choices else None)


def _argparse_type(arg: EngineArg) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return arg.parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(_value_error(e, text)) from None
    return parse


def settings_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The engine arguments given on servescope's command line, as {scenario field: value}."""
    return {arg.field: getattr(args, arg.dest) for arg in (*OWN_SCENARIO_ARGS, *ENGINE_ARGS, *OWN_ENGINE_ARGS)
            if getattr(args, arg.dest, None) is not None}


# -- a whole vLLM command line ----------------------------------------------------------------
@dataclass(frozen=True)
class VllmCommand:
    """What a `vllm serve` command line says that the simulation models, and what it ignores."""

    model: str | None
    settings: dict[str, object]
    ignored: tuple[str, ...]  # arguments that change nothing in the simulation, as written


def parse_vllm_command(text: str) -> VllmCommand:
    """Read `vllm serve MODEL --max-num-seqs 128 ...` (or `python -m vllm.entrypoints.openai.api_server
    --model MODEL ...`). Arguments outside `ENGINE_ARGS` are collected in `ignored`."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise ConfigError("vllm", f"cannot split the command line: {e}") from None
    if words[:2] == ["vllm", "serve"]:
        words = words[2:]
    elif words[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"] or words[:3] == [
            "python3", "-m", "vllm.entrypoints.openai.api_server"]:
        words = words[3:]
    else:
        raise ConfigError("vllm", "expected a command starting with `vllm serve`")
    model, settings, ignored = None, {}, []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-"):
            if model is not None:
                raise ConfigError("vllm", f"unexpected argument {word!r}: the model is already {model!r}")
            model = word
            continue
        flag, has_value, value = word.partition("=")
        # As argparse: a following word is a value unless it looks like a flag (negative numbers are values).
        takes_value = i < len(words) and (not words[i].startswith("-") or re.fullmatch(r"-\d[\d.]*", words[i]))
        if flag == "--model":
            if not (has_value or takes_value):
                raise ConfigError("--model", "expected one argument")
            model = value if has_value else words[i]
            i += 0 if has_value else 1
            continue
        negated = flag.startswith("--no-") and ("--" + flag[5:]) in ARGS_BY_FLAG
        arg = ARGS_BY_FLAG.get("--" + flag[5:] if negated else flag)
        if arg is None:
            if not has_value and takes_value:
                word, i = f"{word} {words[i]}", i + 1
            ignored.append(word)
            continue
        if arg.parse is None:
            if has_value:
                raise ConfigError(flag, "ignored explicit argument: this flag takes no value")
            settings[arg.field] = not negated
            continue
        if not (has_value or takes_value):
            raise ConfigError(flag, "expected one argument")
        if not has_value:
            value, i = words[i], i + 1
        try:
            settings[arg.field] = arg.parse(value)
        except ValueError as e:
            raise ConfigError(arg.flag, _value_error(e, value)) from None
    return VllmCommand(model, settings, tuple(ignored))


def _value_error(error: ValueError, text: str) -> str:
    if "invalid literal" in str(error) or "could not convert" in str(error):
        return f"invalid value: {text!r}"
    return str(error)


# -- settings into a scenario's data -----------------------------------------------------------
def apply_settings(data: dict, settings: dict[str, object]) -> None:
    """Write {scenario field: value} settings into a scenario's data; a new model, GPU, TP size,
    memory share or KV dtype re-sizes the KV pool unless its size is among the settings."""
    resize = False
    for name, value in settings.items():
        section, _, key = name.rpartition(".")
        target = data.setdefault(section, {}) if section else data
        if not section:
            for alias in SCENARIO_ALIASES.get(key, ()):
                target.pop(alias, None)
        target[key] = value
        resize = resize or name in RESIZING_FIELDS
    if resize and "engine.num_gpu_blocks" not in settings:
        data.setdefault("engine", {}).pop("num_gpu_blocks", None)


# A scenario that fixed its pool size keeps it, unless the hardware, the model or the memory given
# to it changes (then the size no longer means anything).
RESIZING_FIELDS = {"model", "gpu", "tensor_parallel_size", "gpu_memory_utilization", "kv_cache_dtype", "enforce_eager",
                   "data_parallel_size", "enable_expert_parallel"}


def check_like_vllm(engine: dict) -> None:
    """vLLM's cross-argument checks (`SchedulerConfig.verify_max_model_len`) on a scenario's engine
    settings, with vLLM's messages, naming the flag a user would change."""
    def get(name):
        return engine.get(name, getattr(EngineConfig, name))

    tokens, seqs, max_model_len = get("max_num_batched_tokens"), get("max_num_seqs"), get("max_model_len")
    threshold = get("long_prefill_token_threshold")
    names = ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "long_prefill_token_threshold")
    for name in names:  # each within its own bounds first: a message below never quotes a 1,000-digit number
        ENGINE_BOUNDS[name].check(f"engine.{name}", get(name))
    if tokens < max_model_len and not get("enable_chunked_prefill"):
        raise ConfigError("--max-num-batched-tokens", (
            f"max_num_batched_tokens ({tokens}) is smaller than max_model_len ({max_model_len}). This "
            "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
            "reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."))
    if tokens < seqs:
        raise ConfigError("--max-num-batched-tokens", (
            f"max_num_batched_tokens ({tokens}) must be greater than or equal to max_num_seqs ({seqs})."))
    if threshold > max_model_len:
        raise ConfigError("--long-prefill-token-threshold", (
            f"long_prefill_token_threshold ({threshold}) cannot be greater than the max_model_len "
            f"({max_model_len})."))
