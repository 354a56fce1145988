"""Python builtins that have a meaning in tile code (``print``, ``len``, ``min``...)."""
from __future__ import annotations

import builtins
from typing import Any, Callable

from ..errors import TileTypeError, TileUnsupportedFeatureError
from ..ops import debug, elementwise as ew
from ..ops.values import Tile, describe, is_const


def _print(c, args, kwargs):
    return debug.print(*args, **kwargs)


def _len(c, args, kwargs):
    (x,) = args
    if isinstance(x, tuple):
        return len(x)
    if isinstance(x, Tile) and x.ndim:
        return x.shape[0]
    raise TileTypeError(f"len() of {describe(x)} is not defined in tile code")


def _minmax(fold, tile_fn):
    def handler(c, args, kwargs):
        if kwargs:
            raise TileTypeError("min/max take no keyword arguments in tile code")
        vals = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
        if not vals:
            raise TileTypeError("min/max of nothing")
        acc = vals[0]
        for v in vals[1:]:
            acc = fold(acc, v) if is_const(acc) and is_const(v) else tile_fn(acc, v)
        return acc
    return handler


def _abs(c, args, kwargs):
    (x,) = args
    return builtins.abs(x) if is_const(x) else ew.abs(x)


def _convert(pytype, dtype_name):
    def handler(c, args, kwargs):
        (x,) = args
        if is_const(x):
            return pytype(x)
        if isinstance(x, Tile):
            if x.shape != ():
                raise TileTypeError(f"{pytype.__name__}() needs a scalar, got {x.type}")
            from .. import dtypes as dt
            if pytype is bool:
                return c._truth(x)
            target = dt.as_dtype(dtype_name)
            if pytype is int and x.dtype.is_int:
                return x
            if pytype is float and x.dtype.is_float:
                return x
            return ew.astype(x, target)
        raise TileTypeError(f"{pytype.__name__}() of {describe(x)}")
    return handler


def _tuple(c, args, kwargs):
    if not args:
        return ()
    (x,) = args
    if isinstance(x, tuple):
        return x
    raise TileTypeError(f"tuple() of {describe(x)} is not supported in tile code")


def _range(c, args, kwargs):
    raise TileUnsupportedFeatureError("range() can only be used as the iterable of a for loop")


def _isinstance(c, args, kwargs):
    return builtins.isinstance(*args)


def _enumerate(c, args, kwargs):
    (x,) = args
    if isinstance(x, tuple):
        return tuple(enumerate(x))
    raise TileTypeError("enumerate() works on compile-time tuples in tile code")


def _zip(c, args, kwargs):
    if all(isinstance(a, tuple) for a in args):
        return tuple(zip(*args))
    raise TileTypeError("zip() works on compile-time tuples in tile code")


_TABLE: dict[Any, Callable] = {
    builtins.print: _print,
    builtins.len: _len,
    builtins.min: _minmax(builtins.min, ew.minimum),
    builtins.max: _minmax(builtins.max, ew.maximum),
    builtins.abs: _abs,
    builtins.int: _convert(int, "int32"),
    builtins.float: _convert(float, "float32"),
    builtins.bool: _convert(bool, "bool_"),
    builtins.tuple: _tuple,
    builtins.list: _tuple,
    builtins.range: _range,
    builtins.isinstance: _isinstance,
    builtins.enumerate: _enumerate,
    builtins.zip: _zip,
}


def lookup(fn: Any) -> Callable | None:
    try:
        return _TABLE.get(fn)
    except TypeError:  # unhashable
        return None
