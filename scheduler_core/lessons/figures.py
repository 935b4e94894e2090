"""How captions and claims write numbers: as the dashboard does (en-US thousands separators,
"Step 4,860"), and a count with its noun in the singular for one ("1 cached block").

A caption is a `str.format` template filled with a moment's facts; `FIGURES.format` fills it so:
- an integer with no format of its own gets separators: `{step}` -> "4,860";
- `{blocks:plural:cached block}` writes the count and its noun: "1 cached block", "2,048 cached
  blocks"; an irregular plural after a bar: `{n:plural:copy|copies}`.
"""

from __future__ import annotations

import string

from ..utils import plural


class Figures(string.Formatter):
    """str.format with the two rules above."""

    def format_field(self, value, format_spec: str) -> str:
        if format_spec.startswith("plural:"):
            one, _, many = format_spec.removeprefix("plural:").partition("|")
            return plural(value, one, many or None)
        if not format_spec and isinstance(value, int) and not isinstance(value, bool):
            format_spec = ","
        return super().format_field(value, format_spec)


FIGURES = Figures()
