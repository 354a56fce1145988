"""Compile-time metaprogramming helpers. The front end evaluates these specially."""
from __future__ import annotations

from typing import Any

from ..errors import ArgumentError


def static_eval(expr: Any, /) -> Any:
    """Evaluate ``expr`` at compile time (tile shapes, dtypes and constants are visible).

    The front end handles it like a keyword; reached from Python code already running at compile
    time (inside another ``static_eval``/``static_assert``), it returns its argument."""
    from ..ir.builder import active
    if active():
        return expr
    raise ArgumentError("static_eval can only be used inside tile code")


def static_assert(cond: Any, message: str | None = None) -> None:
    """Fail compilation with ``message`` unless the compile-time condition holds."""
    raise ArgumentError("static_assert can only be used inside tile code")


def static_iter(iterable: Any) -> Any:
    """In ``for x in ct.static_iter(...)``: unroll the loop over compile-time values."""
    raise ArgumentError("static_iter can only be used as the iterable of a for loop in tile code")


def ensure_constant(value: Any, /) -> Any:
    """Return ``value`` if it is a compile-time constant, else fail compilation
    (``TileStaticAssertionError``)."""
    from ..errors import TileStaticAssertionError
    from .values import Array, Tile
    if isinstance(value, (Tile, Array)) or isinstance(value, tuple) and any(
            isinstance(v, (Tile, Array)) for v in value):
        raise TileStaticAssertionError("Static assertion failed: Argument of ensure_constant() is not a "
                                       "compile-time constant")
    return value


def assume_divisible_by(x: Any, divisor: Any, /) -> Any:
    """Declare that the integer scalar ``x`` is divisible by the constant ``divisor``; returns ``x``.

    cuTile Python lets the compiler trust the claim (undefined behaviour if it is false).
    safetile checks it where it can (a constant ``x``) and otherwise does not rely on it, so a
    false claim cannot make a kernel access memory it would not access without it."""
    from ..errors import TileTypeError, TileValueError
    from .values import Tile, describe, is_const
    if isinstance(divisor, bool) or not isinstance(divisor, int):
        raise TileTypeError(f"assume_divisible_by: divisor must be an integer constant, got {describe(divisor)}")
    if divisor <= 0:
        raise TileValueError(f"assume_divisible_by: divisor must be positive, got {divisor}")
    if is_const(x) and not isinstance(x, (bool, float)):
        if int(x) % divisor:
            raise TileValueError(f"assume_divisible_by: {x} is not divisible by {divisor}")
        return x
    if not (isinstance(x, Tile) and x.shape == () and x.dtype.is_int):
        raise TileTypeError(f"assume_divisible_by: x must be an integer scalar, got {describe(x)}")
    return x
