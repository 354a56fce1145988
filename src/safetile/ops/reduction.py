"""Reductions and scans along tile axes, built in and custom (a combining tile function).

Results follow Python's convention: the reduced axes are dropped unless ``keepdims``.
Sums and products keep the tile's dtype (bools count as int32).
"""
from __future__ import annotations

import builtins

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError
from ..ir.builder import current, emit
from ..ir.catalogue import declare
from ..ir.core import Block, Value
from ..ir.types import TileType
from .elementwise import cast, check_computable
from .values import Tile, as_tile, describe, is_const, normalize_axis

FAMILY = "reduction"


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _reduce_rule(types, attrs):
    t = types[0]
    check_computable(t.dtype, "reduction")
    return [TileType(t.dtype, _reduced_shape(t.shape, attrs["axes"], attrs["keepdims"]))]


def _arg_rule(types, attrs):
    t = types[0]
    check_computable(t.dtype, "reduction")
    return [TileType(dt.int32, _reduced_shape(t.shape, attrs["axes"], attrs["keepdims"]))]


def _custom_reduce_rule(types, attrs):
    return [TileType(t.dtype, _reduced_shape(t.shape, attrs["axes"], attrs["keepdims"])) for t in types]


def _scan_rule(types, attrs):
    return list(types)


def _builtin_scan_rule(types, attrs):
    check_computable(types[0].dtype, "scan")
    return list(types)


for _name, _doc in (("reduce_sum", "sum over `axes`"), ("reduce_prod", "product over `axes`"),
                    ("reduce_max", "maximum over `axes` (attr propagate_nan)"),
                    ("reduce_min", "minimum over `axes` (attr propagate_nan)")):
    declare(_name, FAMILY, _doc, _reduce_rule)
declare("argmax", FAMILY, "index of the first maximum over `axes` (flattened when several), int32", _arg_rule)
declare("argmin", FAMILY, "index of the first minimum over `axes` (flattened when several), int32", _arg_rule)
declare("reduce", FAMILY, "custom reduction of one or more tiles over `axes` with a combining region "
        "(args: accumulators then elements; yields new accumulators); attr identity", _custom_reduce_rule,
        regions=1)
declare("cumsum", FAMILY, "inclusive prefix sum along `axis` (attr reverse)", _builtin_scan_rule)
declare("cumprod", FAMILY, "inclusive prefix product along `axis` (attr reverse)", _builtin_scan_rule)
declare("scan", FAMILY, "custom inclusive scan along `axis` with a combining region; attrs identity, "
        "reverse", _scan_rule, regions=1)


def _tile(x, fn) -> Tile:
    if isinstance(x, Tile):
        return x
    if is_const(x):
        return as_tile(x)
    raise TileTypeError(f"{fn}: expected a tile, got {describe(x)}")


def _axes(axis, ndim) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(sorted({normalize_axis(a, ndim) for a in axis}))
        if len(axes) != len(axis):
            raise TileValueError(f"repeated axis in {tuple(axis)}")
        return axes
    return (normalize_axis(axis, ndim),)


def _builtin(name: str, x, axis, keepdims, **attrs) -> Tile:
    x = _tile(x, name)
    if x.ndim == 0:
        return x
    if x.dtype.is_bool and name in ("reduce_sum", "reduce_prod"):
        x = cast(x, dt.int32)
    return Tile(emit(name, [x.value], {"axes": _axes(axis, x.ndim), "keepdims": bool(keepdims),
                                       **attrs}).result)


def sum(x, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=None) -> Tile:  # noqa: A001
    """Sum over ``axis`` (an int, a tuple, or None for all axes)."""
    return _builtin("reduce_sum", x, axis, keepdims)


def prod(x, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=None) -> Tile:
    """Product over ``axis``."""
    return _builtin("reduce_prod", x, axis, keepdims)


def max(x, axis=None, *, keepdims=False, propagate_nan=True) -> Tile:  # noqa: A001
    """Maximum over ``axis``; NaN wins unless ``propagate_nan=False`` (then NaNs are skipped and an
    all-NaN slice gives NaN)."""
    return _builtin("reduce_max", x, axis, keepdims, propagate_nan=bool(propagate_nan))


def min(x, axis=None, *, keepdims=False, propagate_nan=True) -> Tile:  # noqa: A001
    """Minimum over ``axis``; NaN wins unless ``propagate_nan=False`` (then NaNs are skipped and an
    all-NaN slice gives NaN)."""
    return _builtin("reduce_min", x, axis, keepdims, propagate_nan=bool(propagate_nan))


def _arg(name, x, axis, keepdims) -> Tile:
    x = _tile(x, name)
    if x.ndim == 0:
        return as_tile(0, dt.int32)
    return Tile(emit(name, [x.value], {"axes": _axes(axis, x.ndim), "keepdims": bool(keepdims)}).result)


def argmax(x, axis=None, *, keepdims=False) -> Tile:
    """Index of the first maximum along ``axis`` (of the flattened tile when None)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, *, keepdims=False) -> Tile:
    """Index of the first minimum along ``axis`` (of the flattened tile when None)."""
    return _arg("argmin", x, axis, keepdims)


def _combine_region(func, elem_types: list[TileType]) -> Block:
    """Compile ``func(acc..., x...) -> acc...`` on scalars into a region."""
    builder = current()
    block = Block()
    accs = [Value(TileType(t.dtype, ()), hint="a") for t in elem_types]
    elems = [Value(TileType(t.dtype, ()), hint="b") for t in elem_types]
    block.args = accs + elems
    with builder.inside(block):
        a_tiles, b_tiles = [Tile(v) for v in accs], [Tile(v) for v in elems]
        if len(elem_types) == 1:
            out = builder.compiler.call_value(func, [a_tiles[0], b_tiles[0]])
            outs = [out]
        else:
            out = builder.compiler.call_value(func, [tuple(a_tiles), tuple(b_tiles)])
            if not isinstance(out, tuple) or len(out) != len(elem_types):
                raise TileTypeError(f"the combining function must return a tuple of {len(elem_types)} values")
            outs = list(out)
        ys = []
        for o, t in zip(outs, elem_types):
            o = as_tile(o, t.dtype) if is_const(o) else o
            if not isinstance(o, Tile) or o.shape != ():
                raise TileTypeError(f"the combining function must return scalars, got {describe(o)}")
            ys.append(cast(o, t.dtype))
        builder.emit("yield", [y.value for y in ys])
    return block


def _identities(identity, n) -> tuple:
    ids = identity if isinstance(identity, tuple) else (identity,)
    if len(ids) != n or not builtins.all(is_const(i) for i in ids):
        raise TileTypeError(f"identity must be {n} number(s), got {describe(identity)}")
    return ids


def reduce(x, axis, func, identity, *, keepdims=False):
    """Reduce one tile (or a tuple of same-shaped tiles) with ``func(acc, x) -> acc``.

    ``func`` must be associative and commutative; ``identity`` is its neutral element.
    """
    tiles = [_tile(t, "reduce") for t in (x if isinstance(x, tuple) else (x,))]
    if len({t.shape for t in tiles}) != 1:
        raise TileTypeError("reduce: all tiles must have the same shape")
    ids = _identities(identity, len(tiles))
    axes = _axes(axis, tiles[0].ndim)
    region = _combine_region(func, [t.type for t in tiles])
    op = emit("reduce", [t.value for t in tiles], {"axes": axes, "keepdims": bool(keepdims),
                                                    "identity": ids}, regions=[region])
    res = [Tile(v) for v in op.results]
    return tuple(res) if isinstance(x, tuple) else res[0]


def _scan_builtin(name, x, axis, reverse):
    x = _tile(x, name)
    if x.ndim == 0:
        raise TileTypeError(f"{name} needs a tile of rank >= 1")
    if x.dtype.is_bool:
        x = cast(x, dt.int32)
    return Tile(emit(name, [x.value], {"axis": normalize_axis(axis, x.ndim), "reverse": bool(reverse)}).result)


def cumsum(x, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=None) -> Tile:
    """Inclusive prefix sum along ``axis`` (from the end when ``reverse``)."""
    return _scan_builtin("cumsum", x, axis, reverse)


def cumprod(x, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=None) -> Tile:
    """Inclusive prefix product along ``axis`` (from the end when ``reverse``)."""
    return _scan_builtin("cumprod", x, axis, reverse)


def scan(x, axis, func, identity, *, reverse=False):
    """Inclusive scan of a tile (or tuple of tiles) with the associative ``func(acc, x)``."""
    tiles = [_tile(t, "scan") for t in (x if isinstance(x, tuple) else (x,))]
    if len({t.shape for t in tiles}) != 1 or tiles[0].ndim == 0:
        raise TileTypeError("scan: tiles must share one shape of rank >= 1")
    ids = _identities(identity, len(tiles))
    region = _combine_region(func, [t.type for t in tiles])
    op = emit("scan", [t.value for t in tiles], {"axis": normalize_axis(axis, tiles[0].ndim),
                                                  "reverse": bool(reverse), "identity": ids}, regions=[region])
    res = [Tile(v) for v in op.results]
    return tuple(res) if isinstance(x, tuple) else res[0]
