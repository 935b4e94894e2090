"""The one error type the core raises for bad input, so callers can report the field at fault."""

import math


class ConfigError(ValueError):
    """An invalid configuration, request or trace value.

    `field` names the offending setting (dotted for nested ones, e.g. `requests[3].max_tokens`)
    so a CLI, an API or a form can point at it; `reason` says what is wrong with it.
    """

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def shown(value: object, max_chars: int = 80) -> str:
    """A value as an error message quotes it: short, whatever its size (an integer of a thousand
    digits is described, not written out)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**max_chars:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= max_chars else text[:max_chars - 3] + "..."
