"""Python builtins and ``math`` functions that have a meaning in tile code.

Each handler gets the compiler, the evaluated arguments and keyword arguments. With
only compile-time arguments most of these simply run the Python function; with tiles
they emit the matching tile op, or explain what to use instead.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any
from collections.abc import Callable

from ..errors import TileTypeError, TileUnsupportedFeatureError
from ..ops import debug, elementwise as ew
from ..ops.values import Array, Tile, describe, is_const
from .common import user_boundary


@user_boundary
def _print(c, args, kwargs):
    return debug.print(*args, **kwargs)


@user_boundary
def _len(c, args, kwargs):
    (x,) = args
    if isinstance(x, (tuple, str, range, dict)):
        return len(x)
    if isinstance(x, Tile) and x.ndim:
        return x.shape[0]
    if isinstance(x, Array):
        return x.shape[0]
    raise TileTypeError(f"len() of {describe(x)} is not defined in tile code")


def _minmax(fold: Callable, tile_fn: Callable, name: str):
    @user_boundary
    def handler(c, args, kwargs):
        if kwargs:
            raise TileTypeError(f"{name}() takes no keyword arguments in tile code")
        if len(args) == 1 and isinstance(args[0], Tile):
            raise TileTypeError(f"{name}() of one tile is ambiguous; reduce it with ct.{name}(tile), or pass "
                                f"two values for an element-wise {name}imum")
        vals = args[0] if len(args) == 1 and isinstance(args[0], (tuple, range)) else args
        if not vals:
            raise TileTypeError(f"{name}() of nothing")
        acc = vals[0]
        for v in vals[1:]:
            acc = fold(acc, v) if is_const(acc) and is_const(v) else tile_fn(acc, v)
        return acc
    return handler


@user_boundary
def _sum(c, args, kwargs):
    if kwargs or not 1 <= len(args) <= 2:
        raise TileTypeError("sum(values, start=0) in tile code takes a tuple and an optional start")
    values = args[0]
    if isinstance(values, Tile):
        raise TileTypeError("sum() of a tile is ambiguous; reduce it with ct.sum(tile)")
    if not isinstance(values, (tuple, range)):
        raise TileTypeError(f"sum() needs a tuple in tile code, got {describe(values)}")
    acc = args[1] if len(args) == 2 else 0
    for v in values:
        acc = acc + v
    return acc


@user_boundary
def _abs(c, args, kwargs):
    (x,) = args
    return builtins.abs(x) if is_const(x) else ew.abs(x)


def _convert(pytype: type, dtype_name: str):
    @user_boundary
    def handler(c, args, kwargs):
        if kwargs or len(args) > 1:
            raise TileTypeError(f"{pytype.__name__}() takes at most one argument in tile code")
        if not args:
            return pytype()
        (x,) = args
        if not isinstance(x, (Tile, Array)):
            return pytype(x)
        # cuTile Python: the builtin numeric constructors are compile-time only
        raise TileTypeError(f"{pytype.__name__}() expects a constant argument, got a run-time {x.type}; use "
                            f"ct.{dtype_name}(x) or .astype(ct.{dtype_name}) to convert a tile")
    return handler


@user_boundary
def _tuple(c, args, kwargs):
    if kwargs or len(args) > 1:
        raise TileTypeError("tuple() takes at most one argument")
    if not args:
        return ()
    (x,) = args
    if isinstance(x, (tuple, range, str, dict)):
        return tuple(x)
    raise TileTypeError(f"tuple() of {describe(x)} is not supported in tile code")


@user_boundary
def _range(c, args, kwargs):
    if kwargs or not all(is_const(a) for a in args):
        raise TileUnsupportedFeatureError("range() with run-time bounds can only be the iterable of a for loop")
    return range(*args)


@user_boundary
def _enumerate(c, args, kwargs):
    x = args[0]
    if isinstance(x, (tuple, range)):
        return tuple(enumerate(x, *args[1:], **kwargs))
    raise TileTypeError("enumerate() works on compile-time tuples in tile code")


@user_boundary
def _zip(c, args, kwargs):
    if all(isinstance(a, (tuple, range)) for a in args):
        return tuple(zip(*args, **kwargs))
    raise TileTypeError("zip() works on compile-time tuples in tile code")


@user_boundary
def _reversed(c, args, kwargs):
    (x,) = args
    if isinstance(x, (tuple, range)):
        return tuple(reversed(x))
    raise TileTypeError("reversed() works on compile-time tuples in tile code")


def _introspect(py_fn: Callable):
    """``isinstance``/``getattr``/``hasattr`` work on any front-end value, tiles included."""
    @user_boundary
    def handler(c, args, kwargs):
        return py_fn(*args, **kwargs)
    return handler


@user_boundary
def _getattr(c, args, kwargs):
    """``getattr`` sees what attribute syntax sees (the documented surface; reads recorded)."""
    if kwargs or len(args) not in (2, 3) or not isinstance(args[1], str):
        raise TileTypeError("getattr(obj, name[, default]) needs a constant string name in tile code")
    try:
        return c.attribute(args[0], args[1], None)
    except TileTypeError:
        if len(args) == 3:
            return args[2]
        raise


@user_boundary
def _hasattr(c, args, kwargs):
    if kwargs or len(args) != 2 or not isinstance(args[1], str):
        raise TileTypeError("hasattr(obj, name) needs a constant string name in tile code")
    try:
        c.attribute(args[0], args[1], None)
    except (TileTypeError, TileUnsupportedFeatureError):
        return False
    return True


def _math(tile_fn: Callable, py_fn: Callable):
    """A ``math`` function: folded on constants, the element-wise tile op on tiles."""
    @user_boundary
    def handler(c, args, kwargs):
        if any(isinstance(a, Tile) for a in args):
            return tile_fn(*args, **kwargs)
        return py_fn(*args, **kwargs)
    return handler


def _operator(sym: str):
    """``operator.add`` and friends (e.g. as a reduce/scan combiner): the Python operator."""
    @user_boundary
    def handler(c, args, kwargs):
        if kwargs or len(args) != 2:
            raise TileTypeError(f"operator function for {sym!r} takes two arguments")
        return c._binop(sym, args[0], args[1], None)
    return handler


def _operator_unary(fn: Callable):
    @user_boundary
    def handler(c, args, kwargs):
        if kwargs or len(args) != 1:
            raise TileTypeError(f"{fn.__name__}() takes one argument")
        (x,) = args
        if isinstance(x, Array):
            raise TileTypeError(f"bad operand for {fn.__name__}(): {describe(x)}")
        if fn is operator.not_:
            return c._not(c._truth(x))
        return fn(x)
    return handler


@user_boundary
def _divmod(c, args, kwargs):
    if kwargs or len(args) != 2:
        raise TileTypeError("divmod() takes two arguments")
    return ew.divmod(*args)


@user_boundary
def _pow(c, args, kwargs):
    if kwargs or len(args) != 2:
        raise TileTypeError("pow() with a modulus is not supported in tile code")
    return c._binop("**", args[0], args[1], None)


_TABLE: dict[Any, Callable] = {
    builtins.print: _print,
    builtins.len: _len,
    builtins.min: _minmax(builtins.min, ew.minimum, "min"),
    builtins.max: _minmax(builtins.max, ew.maximum, "max"),
    builtins.sum: _sum,
    builtins.abs: _abs,
    builtins.int: _convert(int, "int32"),
    builtins.float: _convert(float, "float32"),
    builtins.bool: _convert(bool, "bool_"),
    builtins.tuple: _tuple,
    builtins.list: _tuple,
    builtins.range: _range,
    builtins.enumerate: _enumerate,
    builtins.zip: _zip,
    builtins.reversed: _reversed,
    builtins.isinstance: _introspect(builtins.isinstance),
    builtins.getattr: _getattr,
    builtins.hasattr: _hasattr,
    builtins.divmod: _divmod,
    builtins.pow: _pow,
    operator.neg: _operator_unary(operator.neg),
    operator.pos: _operator_unary(operator.pos),
    operator.invert: _operator_unary(operator.invert),
    operator.not_: _operator_unary(operator.not_),
    operator.abs: _abs,
}
for _fn, _sym in ((operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"), (operator.truediv, "/"),
                  (operator.floordiv, "//"), (operator.mod, "%"), (operator.pow, "**"), (operator.and_, "&"),
                  (operator.or_, "|"), (operator.xor, "^"), (operator.lshift, "<<"), (operator.rshift, ">>"),
                  (operator.matmul, "@"), (operator.eq, "=="), (operator.ne, "!="), (operator.lt, "<"),
                  (operator.le, "<="), (operator.gt, ">"), (operator.ge, ">=")):
    _TABLE[_fn] = _operator(_sym)
for _name in ("exp", "exp2", "log", "log2", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "floor",
              "ceil", "atan2"):
    _py = getattr(math, _name, None)
    if _py is not None:
        _TABLE[_py] = _math(getattr(ew, _name), _py)
_TABLE[math.fabs] = _math(ew.abs, math.fabs)
_TABLE[math.pow] = _math(ew.pow, math.pow)


def lookup(fn: Any) -> Callable | None:
    try:
        return _TABLE.get(fn)
    except TypeError:  # unhashable
        return None
