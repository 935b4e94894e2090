"""How a scenario setting is declared, and the budgets its bounds are drawn from.

A config dataclass declares each setting once, with `setting(...)`: its name and type are the
field's, its default, bound, help text, choices, command-line flag and older names the `Setting`
held in the field's metadata. From that one declaration come the core's checks (`bounds_of`), the
web's pydantic model and JSON Schema (`app/schemas.py`) and the command line's flags
(`scenario/engine_args.py`). `EngineConfig`, `VllmCompat`, `SpeculativeConfig`, `WorkloadConfig`
and `Scenario` (the model, GPU and memory settings) are declared this way.

The bounds keep one run inside a stated budget (docs/cli.md, "Budgets"): at most 1,000,000 requests,
contexts of at most 1,000,000 tokens, at most 2^20 shared-prefix tokens held in all, and finite
rates and spreads whose random draws cannot overflow. `app/schemas.py` turns each bound into
pydantic `Field` constraints; the core calls `check` so the CLI and scenario files are held
to the same limits.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from dataclasses import dataclass

from .errors import ConfigError, shown


@dataclass(frozen=True)
class Bound:
    """An allowed range: integers or finite floats in [low, high] (or (low, high] with `low_open`)."""

    low: float
    high: float
    integer: bool = True
    low_open: bool = False
    # arrival_rate alone: inf means every request at time 0.
    infinite_ok: bool = False
    # A setting's own wording of what it accepts, said whatever is wrong with the value ({value}:
    # the value as shown), where its messages predate the generated ones.
    message: str = ""

    def check(self, field: str, value: object) -> None:
        kind = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (self.integer and not isinstance(value, int)):
            self.refuse(field, value, f"must be {kind}")
        if self.infinite_ok and value == math.inf:
            return
        if isinstance(value, float) and not math.isfinite(value):  # (an int is finite, and may be too big for a float)
            self.refuse(field, value, "must be finite")
        low_ok = value > self.low if self.low_open else value >= self.low
        if not low_ok or value > self.high:
            self.refuse(field, value, f"must be {self.describe()}")

    def refuse(self, field: str, value: object, reason: str) -> typing.NoReturn:
        if self.message:
            raise ConfigError(field, self.message.format(value=shown(value)))
        raise ConfigError(field, f"{reason}, got {shown(value)}")

    def describe(self) -> str:
        def show(x: float) -> str:
            return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"

        low = f"> {show(self.low)}" if self.low_open else f">= {show(self.low)}"
        return f"{low} and <= {show(self.high)}" + (" (or inf)" if self.infinite_ok else "")

    def field_constraints(self) -> dict:
        """The same bound as pydantic `Field` keyword arguments."""
        return {"gt" if self.low_open else "ge": self.low, "le": self.high}


@dataclass(frozen=True)
class Setting:
    """Everything about one setting besides its name, type and default (those are its field's)."""

    help: str
    bound: Bound | None = None
    choices: tuple[str, ...] = ()
    # The command-line flag, as `vllm serve` spells it; with `vllm_flag=False`, servescope's own
    # flag for a setting vLLM does not have (a `vllm serve` line cannot carry it).
    flag: str | None = None
    aliases: tuple[str, ...] = ()  # shorter flags servescope had before it spoke vLLM's names
    vllm_flag: bool = True
    max_chars: int | None = None  # a name's longest spelling on the web
    # The web form leaves it empty, for the server to fill in the default (vLLM's for the GPU and version).
    left_open: bool = False
    # Other names a scenario file or a web request may give it (vLLM's older ones): one field in the core.
    field_aliases: tuple[str, ...] = ()
    # What the web accepts where it is narrower than the core (a preset's name, never a file's).
    web_choices: tuple[str, ...] = ()
    # False: the setting never reaches the web (it names a file on the server, or is the CLI's alone).
    web: bool = True
    # A list setting: how many items it holds (`bound` then bounds each item).
    length: Bound | None = None
    # Filled in from the dataclass field by `settings_of`.
    name: str = ""
    type: object = None
    default: object = None


def setting(default: object, help: str, **declaration) -> typing.Any:
    """A dataclass field whose metadata declares the setting (see `Setting`)."""
    return dataclasses.field(default=default, metadata={"setting": Setting(help, **declaration)})


@functools.cache
def settings_of(config: type) -> dict[str, Setting]:
    """The declared settings of a config dataclass, in field order, each with its name, type and default."""
    hints = typing.get_type_hints(config)
    return {f.name: dataclasses.replace(f.metadata["setting"], name=f.name, type=hints[f.name], default=f.default)
            for f in dataclasses.fields(config) if "setting" in f.metadata}


def bounds_of(config: type) -> dict[str, Bound]:
    """The bound of each bounded setting of a config dataclass: the table `check_all` reads."""
    return {name: s.bound for name, s in settings_of(config).items() if s.bound is not None}


# Below the 1,000,003-id stride between synthetic prompts' unique tails, so no two can share a block.
MAX_TOKENS_PER_CONTEXT = 1_000_000
MAX_BLOCKS = 1 << 20

MAX_REQUESTS = 1_000_000

# Every shared prefix's tokens are held (4 bytes each) for the whole run: 4 MiB at most.
MAX_SHARED_PREFIX_TOKENS = 1 << 20

# The largest seed of a random draw (`random.Random` takes any integer; this one fits 64 bits).
MAX_SEED = 2**63 - 1

MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 2_000


def check_all(bounds: dict[str, Bound], values: object, prefix: str = "") -> None:
    """Check each bounded attribute of `values` (a config dataclass)."""
    for name, bound in bounds.items():
        bound.check(prefix + name, getattr(values, name))


def check_text(field: str, value: object, max_chars: int) -> None:
    if not isinstance(value, str):
        raise ConfigError(field, f"must be text, got {shown(value)}")
    if len(value) > max_chars:
        raise ConfigError(field, f"at most {max_chars} characters, got {len(value)}")
    if not is_unicode(value):
        raise ConfigError(field, "not Unicode text (a lone surrogate such as \\ud800)")


def is_unicode(text: str) -> bool:
    """Whether `text` can be written as UTF-8: JSON's \\ud800 escapes make strings that cannot, which
    would fail later, wherever they are printed or sent."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
