"""Tile factories: tiles made from compile-time shapes and values."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .elementwise import cast
from .values import Tile, as_tile, describe, is_const, static_dtype, static_shape

FAMILY = "factories"

declare("arange", FAMILY, "the 1-d tile [start, start+step, ...] of `size` elements",
        lambda types, attrs: [TileType(attrs["dtype"], (attrs["size"],))])
declare("broadcast", FAMILY, "a tile of `shape` filled with a run-time scalar",
        lambda types, attrs: [TileType(types[0].dtype, attrs["shape"])])


def full(shape, fill_value, dtype) -> Tile:
    """A tile of ``shape`` where every element is ``fill_value``."""
    shp = static_shape(shape)
    d = static_dtype(dtype)
    if is_const(fill_value):
        constant = as_tile(fill_value, d).value.owner
        assert constant is not None  # as_tile makes a constant a "constant" op's result
        return Tile(emit("constant", [], {"value": constant.attrs["value"], "dtype": d,
                                          "shape": shp}).result)
    if isinstance(fill_value, Tile):
        if fill_value.shape != ():
            raise TileTypeError(f"full: fill_value must be a scalar, got {fill_value.type}")
        return Tile(emit("broadcast", [cast(fill_value, d).value], {"shape": shp}).result)
    raise TileTypeError(f"full: fill_value must be a number or scalar tile, got {describe(fill_value)}")


def zeros(shape, dtype) -> Tile:
    """A tile of zeros."""
    return full(shape, 0, dtype)


def ones(shape, dtype) -> Tile:
    """A tile of ones."""
    return full(shape, 1, dtype)


def arange(size, *, dtype=dt.int32, start=0, step=1) -> Tile:
    """The 1-d tile ``start + step * [0, 1, ..., size-1]`` (size a power of two)."""
    (n,) = static_shape((size,), "arange size")
    d = static_dtype(dtype)
    if not (is_const(start) and is_const(step)):
        from .elementwise import add, mul
        base = Tile(emit("arange", [], {"size": n, "dtype": d, "start": 0, "step": 1}).result)
        return add(mul(base, step), start)
    return Tile(emit("arange", [], {"size": n, "dtype": d, "start": start, "step": step}).result)


def astile(value, /, *, dtype=None) -> Tile:
    """Turn a scalar (constant or 0-d tile), or a (nested) tuple of scalars whose nesting gives
    the shape (each length a power of two, siblings of equal length), into a tile of ``dtype``."""
    if isinstance(value, Tile):
        return cast(value, static_dtype(dtype)) if dtype is not None else value
    if is_const(value):
        return as_tile(value, static_dtype(dtype) if dtype is not None else None)
    if isinstance(value, tuple):
        shape = _tuple_shape(value, ())
        leaves = _flatten(value)
        if dtype is not None:
            d = static_dtype(dtype)
        else:
            d = leaves[0].dtype if isinstance(leaves[0], Tile) else dt.scalar_dtype(leaves[0])
            for x in leaves[1:]:
                d = dt.promote(d, x.dtype if isinstance(x, Tile) else dt.scalar_dtype(x))
        from .shape import cat, reshape
        parts = [reshape(cast(x, d), (1,)) if isinstance(x, Tile) else full((1,), x, d) for x in leaves]
        while len(parts) > 1:
            parts = [cat((parts[i], parts[i + 1]), 0) for i in range(0, len(parts), 2)]
        return reshape(parts[0], shape)
    raise TileTypeError(f"Expected a scalar or (possibly nested) tuple of scalars; got {describe(value)}")


def _path(path: tuple) -> str:
    return "value" + "".join(f"[{i}]" for i in path)


def _tuple_shape(v, path: tuple) -> tuple:
    if not isinstance(v, tuple):
        if isinstance(v, Tile):
            if v.ndim:
                raise TileTypeError(f"Expected scalar elements at {_path(path)}; got a tile of shape {v.shape}")
            return ()
        if is_const(v):
            return ()
        raise TileTypeError(f"Expected scalar elements at {_path(path)}; got {describe(v)}")
    n = len(v)
    if n == 0 or n & (n - 1):
        raise TileTypeError(f"Tuple length {n} at {_path(path)} is not a power of 2")
    inner = {_tuple_shape(x, path + (i,)) for i, x in enumerate(v)}
    if len(inner) != 1:
        raise TileTypeError(f"Tuple has non-uniform inner shapes at {_path(path)}")
    return (n,) + inner.pop()


def _flatten(v) -> list:
    return [y for x in v for y in _flatten(x)] if isinstance(v, tuple) else [v]
