"""Argument checks shared by the store and the capture: one wording, one rule."""

from __future__ import annotations

from typing import Optional

__all__ = ["whole_number"]


def whole_number(value: object, name: str, minimum: Optional[int] = None) -> int:
    """``value`` if it is an int (a bool is not), and at least ``minimum`` when one is given.

    :raises TypeError: not an int.
    :raises ValueError: below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    return value
