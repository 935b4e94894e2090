"""Arithmetic and number words every layer shares (below them all, so any of them can use it)."""


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the blocks (or pages, or steps) that `a` units fill at `b` per block."""
    return -(-a // b)


def plural(count: int, one: str, many: str | None = None) -> str:
    """`count` as the dashboard writes it (en-US separators) and its noun, singular for exactly one:
    "1 cached block", "2,048 cached blocks"."""
    return f"{count:,} {one if count == 1 else many or one + 's'}"
