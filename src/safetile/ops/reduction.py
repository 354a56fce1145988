"""Reductions and scans along tile axes, built in and custom (a combining tile function).

Results follow Python's convention: the reduced axes are dropped unless ``keepdims``.
Sums and products keep the tile's dtype (bools count as int32).
"""
from __future__ import annotations

import builtins

from .. import dtypes as dt
from ..errors import TileSyntaxError, TileTypeError
from ..ir.builder import current, emit
from ..ir.catalogue import declare
from ..ir.core import Block, Value
from ..ir.types import TileType
import numpy as np

from .elementwise import cast, check_computable, implicit_cast
from .shape import broadcast_to
from .rounding import check_flag, rounding_attrs
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


for _name, _doc in (("reduce_sum", "sum over `axes` (attrs rounding_mode, flush_to_zero)"),
                    ("reduce_prod", "product over `axes` (attrs rounding_mode, flush_to_zero)"),
                    ("reduce_max", "maximum over `axes`; NaNs ignored unless attr propagate_nan (attr "
                                   "flush_to_zero)"),
                    ("reduce_min", "minimum over `axes`; NaNs ignored unless attr propagate_nan (attr "
                                   "flush_to_zero)")):
    declare(_name, FAMILY, _doc, _reduce_rule)
declare("argmax", FAMILY, "index of the first maximum over `axes` (C-order flattened when several), int32; "
        "NaNs ignored unless attr propagate_nan (then the first NaN)", _arg_rule)
declare("argmin", FAMILY, "index of the first minimum over `axes` (C-order flattened when several), int32; "
        "NaNs ignored unless attr propagate_nan (then the first NaN)", _arg_rule)
declare("reduce", FAMILY, "custom reduction of one or more tiles over `axes` with a combining region "
        "(args: accumulators then elements; yields new accumulators); attr identity", _custom_reduce_rule,
        regions=1)
declare("cumsum", FAMILY, "inclusive prefix sum along `axis` (attrs reverse, rounding_mode, flush_to_zero)",
        _builtin_scan_rule)
declare("cumprod", FAMILY, "inclusive prefix product along `axis` (attrs reverse, rounding_mode, "
        "flush_to_zero)", _builtin_scan_rule)
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
            raise TileTypeError(f"repeated axis in {tuple(axis)}")
        return axes
    return (normalize_axis(axis, ndim),)


def _builtin(name: str, x, axis, keepdims, **attrs) -> Tile:
    x = _tile(x, name)
    if dt.is_restricted(x.dtype):
        raise TileTypeError(f"Non-arithmetic dtype {x.dtype.name} is unsupported for reduction")
    if x.dtype.is_bool:
        x = cast(x, dt.int32)
    keep = check_flag(keepdims, "keepdims")
    if x.ndim == 0:
        return x
    return Tile(emit(name, [x.value], {"axes": _axes(axis, x.ndim), "keepdims": keep, **attrs}).result)


def _float_attrs(fn: str, x, rounding_mode, flush_to_zero, propagate_nan=None) -> dict:
    """rounding/flush/NaN attributes of a built-in reduction or scan (validated on x's dtype)."""
    d = x.dtype if isinstance(x, Tile) else dt.scalar_dtype(x) if is_const(x) else dt.int32
    attrs = rounding_attrs(fn, rounding_mode, flush_to_zero, dt.int32 if d.is_bool else d)
    if propagate_nan is not None:
        check_flag(propagate_nan, "propagate_nan")
        if d.is_float and propagate_nan:
            attrs["propagate_nan"] = True
    return attrs


def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:  # noqa: A001
    """Sum over ``axis`` (an int, a tuple, or None for all axes); bools count as int32."""
    return _builtin("reduce_sum", x, axis, keepdims, **_float_attrs("add", x, rounding_mode, flush_to_zero))


def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    """Product over ``axis``."""
    return _builtin("reduce_prod", x, axis, keepdims, **_float_attrs("mul", x, rounding_mode, flush_to_zero))


def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:  # noqa: A001
    """Maximum over ``axis``; NaNs are ignored unless ``propagate_nan`` (then a NaN wins). An
    all-NaN slice gives NaN."""
    return _builtin("reduce_max", x, axis, keepdims,
                    **_float_attrs("maximum", x, None, flush_to_zero, propagate_nan))


def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:  # noqa: A001
    """Minimum over ``axis``; NaNs are ignored unless ``propagate_nan`` (then a NaN wins). An
    all-NaN slice gives NaN."""
    return _builtin("reduce_min", x, axis, keepdims,
                    **_float_attrs("minimum", x, None, flush_to_zero, propagate_nan))


def _arg(name, x, axis, keepdims, propagate_nan) -> Tile:
    x = _tile(x, name)
    keep = check_flag(keepdims, "keepdims")
    check_flag(propagate_nan, "propagate_nan")
    if axis is not None and not (isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)):
        raise TileTypeError(f"{name}: axis must be an integer constant or None (reducing over a tuple of axes is "
                            f"not supported), got {describe(axis)}")
    if dt.is_restricted(x.dtype):
        raise TileTypeError(f"Non-arithmetic dtype {x.dtype.name} is unsupported for reduction")
    if x.ndim == 0:
        return as_tile(0, dt.int32)
    attrs = {"axes": _axes(axis, x.ndim), "keepdims": keep}
    if x.dtype.is_float and propagate_nan:
        attrs["propagate_nan"] = True
    return Tile(emit(name, [x.value], attrs).result)


def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    """Index of the first maximum along ``axis`` (of the C-order flattened tile when None).
    NaNs are ignored unless ``propagate_nan`` (then the first NaN's index)."""
    return _arg("argmax", x, axis, keepdims, propagate_nan)


def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    """Index of the first minimum along ``axis`` (of the C-order flattened tile when None).
    NaNs are ignored unless ``propagate_nan`` (then the first NaN's index)."""
    return _arg("argmin", x, axis, keepdims, propagate_nan)


def _combine_region(func, elem_types: list[TileType], what: str) -> Block:
    """Compile ``func(a_0..a_n-1, b_0..b_n-1) -> (c_0..c_n-1)`` on scalars into a region (one value
    instead of a tuple when n == 1; cuTile Python's convention). Results are implicitly cast
    to the element dtypes."""
    builder = current()
    block = Block()
    accs = [Value(TileType(t.dtype, ()), hint="a") for t in elem_types]
    elems = [Value(TileType(t.dtype, ()), hint="b") for t in elem_types]
    block.args = accs + elems
    n = len(elem_types)
    compiler = builder.compiler
    assert compiler is not None  # combiners are met only while the front end compiles a kernel
    with builder.inside(block):
        out = compiler.call_value(func, [Tile(v) for v in accs + elems])
        if n == 1:
            outs = [out]
        else:
            if not isinstance(out, tuple):
                raise TileTypeError(f"{what} function returns {describe(out)}, but a tuple was expected")
            if len(out) != n:
                raise TileTypeError(f"{what} function must return a tuple of {n} values to match the number of "
                                    f"inputs, but a tuple of length {len(out)} was found.")
            outs = list(out)
        ys = []
        for k, (o, t) in enumerate(zip(outs, elem_types)):
            where = f" at position #{k}" if n > 1 else ""
            if isinstance(o, Tile) and o.shape != ():
                raise TileTypeError(f"{what} function returned a tile of non-scalar shape {o.shape}{where}")
            if not isinstance(o, Tile) and not is_const(o):
                raise TileTypeError(f"{what} function returned a value of non-tile type {describe(o)}{where}")
            ys.append(implicit_cast(o, t.dtype, f"{what} function returned a tile of unexpected dtype{where}"))
        builder.emit("yield", [y.value for y in ys])
    _check_body(block, what.lower())
    return block


def _check_body(block: Block, kind: str) -> None:
    """cuTile's restrictions on a reduce/scan body: no memory effects, loops, branches or
    nested reductions/scans (an ``if`` on a compile-time condition leaves no branch)."""
    from ..ir.catalogue import OPS
    from ..ir.core import walk
    for op in walk(block):
        spec = OPS.get(op.name)
        if spec is not None and spec.family == FAMILY:
            raise TileSyntaxError("Nested scan/reduction is not supported")
        if op.name in ("for", "while"):
            raise TileSyntaxError(f"Loops inside {kind} body are not supported")
        if op.name == "if":
            raise TileSyntaxError(f"Branching inside {kind} body is not supported. Consider ct.where() as a "
                                  "workaround.")
        if spec is not None and spec.effect in ("read", "write", "io"):
            raise TileSyntaxError(f"Operations with memory effects are not supported inside {kind} body")


def _inputs(x, fn: str) -> tuple[list[Tile], bool]:
    """The tiles of a custom reduce/scan (one, or a tuple broadcast to a common shape)."""
    is_tuple = isinstance(x, tuple)
    tiles = [_tile(t, fn) for t in (x if is_tuple else (x,))]
    if not tiles:
        raise TileTypeError(f"Need at least one input value to {fn}")
    try:
        shape = dt.broadcast_shapes(*(t.shape for t in tiles))
    except ValueError:
        shapes = ", ".join(str(t.shape) for t in tiles)
        raise TileTypeError(f"Input shapes {shapes} are not broadcastable to a common shape") from None
    return [broadcast_to(t, shape) for t in tiles], is_tuple


def _identities(identity, n, is_tuple) -> tuple:
    ids = identity if isinstance(identity, tuple) else (identity,)
    if is_tuple and isinstance(identity, tuple) and len(ids) != n:
        raise TileTypeError(f"Number of identity values ({len(ids)}) must match the number of input tiles ({n})")
    if len(ids) != n or not builtins.all(is_const(i) for i in ids):
        raise TileTypeError(f"identity must be {n} constant number(s), got {describe(identity)}")
    return ids


def reduce(x, /, axis, func, identity, *, keepdims=False):
    """Reduce one tile (or a tuple of tiles broadcast together) along ``axis`` with ``func``.

    ``func(a, b) -> c`` on scalars (with a tuple of n tiles: ``func(a_0.., b_0..)`` returning n
    values); it must be associative and commutative, and ``identity`` is its neutral element.
    ``axis`` may also be a tuple or None (all axes), an extension of cuTile Python.
    """
    tiles, is_tuple = _inputs(x, "reduce")
    ids = _identities(identity, len(tiles), is_tuple)
    axes = _axes(axis, tiles[0].ndim)
    region = _combine_region(func, [t.type for t in tiles], "Reduction")
    op = emit("reduce", [t.value for t in tiles], {"axes": axes, "keepdims": check_flag(keepdims, "keepdims"),
                                                    "identity": ids}, regions=[region])
    res = [Tile(v) for v in op.results]
    return tuple(res) if is_tuple else res[0]


def _scan_builtin(name, x, axis, reverse, attrs):
    x = _tile(x, name)
    if x.ndim == 0:
        raise TileTypeError(f"{name} needs a tile of rank >= 1")
    if dt.is_restricted(x.dtype):
        raise TileTypeError(f"Non-arithmetic dtype {x.dtype.name} is unsupported for scan")
    if x.dtype.is_bool:
        x = cast(x, dt.int32)
    return Tile(emit(name, [x.value], {"axis": normalize_axis(axis, x.ndim),
                                       "reverse": check_flag(reverse, "reverse"), **attrs}).result)


def cumsum(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    """Inclusive prefix sum along ``axis`` (from the end when ``reverse``)."""
    return _scan_builtin("cumsum", x, axis, reverse, _float_attrs("add", x, rounding_mode, flush_to_zero))


def cumprod(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    """Inclusive prefix product along ``axis`` (from the end when ``reverse``)."""
    return _scan_builtin("cumprod", x, axis, reverse, _float_attrs("mul", x, rounding_mode, flush_to_zero))


def scan(x, /, axis, func, identity, *, reverse=False):
    """Inclusive scan of a tile (or a tuple of tiles broadcast together) with the associative
    ``func`` (called as for ``reduce``)."""
    tiles, is_tuple = _inputs(x, "scan")
    if tiles[0].ndim == 0:
        raise TileTypeError("scan needs tiles of rank >= 1")
    ids = _identities(identity, len(tiles), is_tuple)
    region = _combine_region(func, [t.type for t in tiles], "Scan")
    op = emit("scan", [t.value for t in tiles], {"axis": normalize_axis(axis, tiles[0].ndim),
                                                  "reverse": check_flag(reverse, "reverse"), "identity": ids},
              regions=[region])
    res = [Tile(v) for v in op.results]
    return tuple(res) if is_tuple else res[0]
