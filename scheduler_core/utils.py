"""Arithmetic every layer shares (below them all, so any of them can use it)."""


def cdiv(a: int, b: int) -> int:
    """Ceiling division: the blocks (or pages, or steps) that `a` units fill at `b` per block."""
    return -(-a // b)
