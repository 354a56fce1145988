"""Compile-time metaprogramming helpers. The front end evaluates these specially."""
from __future__ import annotations

from typing import Any


def static_eval(expr: Any) -> Any:
    """Evaluate ``expr`` at compile time (tile shapes, dtypes and constants are visible)."""
    raise TypeError("static_eval can only be used inside tile code")


def static_assert(cond: Any, message: str | None = None) -> None:
    """Fail compilation with ``message`` unless the compile-time condition holds."""
    raise TypeError("static_assert can only be used inside tile code")


def static_iter(iterable: Any) -> Any:
    """In ``for x in ct.static_iter(...)``: unroll the loop over compile-time values."""
    raise TypeError("static_iter can only be used as the iterable of a for loop in tile code")


def ensure_constant(value: Any, what: str = "value") -> Any:
    """Return ``value`` if it is a compile-time constant, else fail compilation."""
    from .values import Array, Tile, not_constant
    if isinstance(value, (Tile, Array)):
        raise not_constant(what, value)
    return value
