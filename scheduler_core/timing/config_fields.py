"""The one checked way to read a field of a Hugging Face config.json.

Every field hf_config.py and hf_architecture.py read goes through `ConfigFields`: each read names
the field (`model.text_config.head_dim`) and bounds it, so a hostile or mistyped value is a
ConfigError naming it, never a TypeError deep in the cost model nor a number taken on trust.
JSON `null` reads as absent, as transformers reads it (Mixtral's `"sliding_window": null`).
"""

from __future__ import annotations

import math
import typing

from ..errors import ConfigError, shown

# The largest value a shape field may have: far past any real model (vocabularies of 2^18,
# contexts of 10^7), and small enough that no product of them the cost model forms overflows a float.
MAX_SHAPE_VALUE = 1 << 30
# The longest list a config.json holds (per-layer lists: real decoders have a few hundred layers).
MAX_LIST_ITEMS = 1 << 16
MAX_TEXT_CHARS = 200

_REQUIRED = object()


class ConfigFields:
    """One JSON object of a config.json and where it sits (`model`, `model.quantization_config`)."""

    def __init__(self, data: object, where: str, outer: ConfigFields | None = None):
        if not isinstance(data, dict):
            raise ConfigError(where, f"must be a JSON object, got {shown(data)}")
        self.data, self.where, self.outer = data, where, outer

    def holder(self, key: str) -> ConfigFields:
        """This object, or the wrapper around it when only that one gives `key` (a multimodal
        checkpoint's quantization_config and torch_dtype sit outside its text_config)."""
        return self if self.has(key) or self.outer is None else self.outer

    def name(self, key: str) -> str:
        return f"{self.where}.{key}"

    def refuse(self, key: str, reason: str) -> typing.NoReturn:
        raise ConfigError(self.name(key), reason)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def _value(self, key: str, default: object) -> object:
        if self.has(key):
            return self.data[key]
        if default is _REQUIRED:
            self.refuse(key, "missing")
        return default

    def integer(self, key: str, default: object = _REQUIRED, low: int = 1, high: int = MAX_SHAPE_VALUE) -> int:
        """An integer in [low, high]; a default of None reads an absent field as None."""
        value = self._value(key, default)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            self.refuse(key, f"must be an integer from {low:,} to {high:,}, got {shown(value)}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        """A finite number in (low, high]."""
        value = self._value(key, default)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or (isinstance(value, float) and not math.isfinite(value)) or not low < value <= high:
            self.refuse(key, f"must be a number above {low:g} and at most {high:g}, got {shown(value)}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self._value(key, default)
        if not isinstance(value, bool):
            self.refuse(key, f"must be true or false, got {shown(value)}")
        return value

    def choice(self, key: str, choices: typing.Iterable[str], default: object = _REQUIRED) -> str:
        value = self._value(key, default)
        choices = tuple(choices)
        if not isinstance(value, str) or value not in choices:
            self.refuse(key, f"{shown(value)} is not modelled; expected one of {', '.join(choices)}")
        return value

    def text(self, key: str, default: str = "") -> str:
        value = self._value(key, default)
        if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
            self.refuse(key, f"must be text of at most {MAX_TEXT_CHARS} characters, got {shown(value)}")
        return value

    def items(self, key: str) -> list:
        """A list of at most MAX_LIST_ITEMS items (empty when absent); its items are the caller's to read."""
        value = self._value(key, [])
        if not isinstance(value, list) or len(value) > MAX_LIST_ITEMS:
            self.refuse(key, f"must be a list of at most {MAX_LIST_ITEMS:,} items, got {shown(value)}")
        return value

    def integers(self, key: str, low: int, high: int) -> list[int]:
        items = self.items(key)
        for i, item in enumerate(items):
            if not isinstance(item, int) or isinstance(item, bool) or not low <= item <= high:
                self.refuse(f"{key}[{i}]", f"must be an integer from {low:,} to {high:,}, got {shown(item)}")
        return items

    def choices(self, key: str, choices: typing.Iterable[str]) -> list[str]:
        items, choices = self.items(key), tuple(choices)
        for i, item in enumerate(items):
            if not isinstance(item, str) or item not in choices:
                self.refuse(f"{key}[{i}]", f"{shown(item)} is not modelled; expected one of {', '.join(choices)}")
        return items

    def section(self, key: str) -> ConfigFields | None:
        """A nested object, read the same way; None when absent."""
        return ConfigFields(self.data[key], self.name(key)) if self.has(key) else None

    def sections(self, key: str) -> list[ConfigFields]:
        """An object of objects (compressed-tensors' config_groups), each read the same way."""
        outer = self.section(key)
        return [] if outer is None else [ConfigFields(v, outer.name(str(k)[:80])) for k, v in outer.data.items()]
