"""Memory ops: tile-space load/store, tiled views, gather/scatter and atomics.

Tile-space access (``load``/``store``) addresses whole tiles: index ``i`` along an axis
with tile size ``s`` covers elements ``i*s ... i*s+s-1``. Elements outside the array read
the padding value and are never written. Gather, scatter and atomics address single
elements through integer index tiles that broadcast against each other; out-of-bounds
(including negative) indices read ``padding_value`` and are dropped on writes.

Array slices (``Array.slice``), stepped tiled views (``traversal_steps``) and advanced
indexing (``load_advanced_indexing``/``store_advanced_indexing``) add no IR op: the front
end composes them from element index tiles and ``gather``/``scatter``/atomics, which both
backends already lower (so they do not use the tile-load fast path or TMA).
"""
from __future__ import annotations

import builtins
import enum
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import ArrayType, TileType
from .elementwise import add, align_rank, cast, implicit_cast, maximum, minimum, mul, where
from .factories import arange
from .grid import cdiv
from .memory_model import ATOMIC_DTYPES, MemoryOrder, MemoryScope, memory_attrs
from .shape import broadcast_to, reshape
from .values import Array, ArraySlice, Tile, as_tile, describe, is_const, static_int, static_shape

FAMILY = "memory"


class PaddingMode(enum.Enum):
    """The value out-of-bounds elements of a tile-space load take."""

    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


# The value each padding mode stands for (UNDETERMINED reads 0): the CPU backend pads with it,
# and loads composed from ``gather`` pass it as the padding value.
PAD_VALUES = {
    PaddingMode.UNDETERMINED: 0, PaddingMode.ZERO: 0, PaddingMode.NEG_ZERO: -0.0,
    PaddingMode.NAN: float("nan"), PaddingMode.POS_INF: float("inf"), PaddingMode.NEG_INF: float("-inf"),
}


ATOMIC_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")


# ----------------------------------------------------------------------------- rules

def _scalar_int(t, what):
    if not isinstance(t, TileType) or t.shape != () or not (t.dtype.is_int or t.dtype.is_bool):
        raise TileTypeError(f"{what} must be an integer scalar, got {t}")


def _array(t, what="first operand") -> ArrayType:
    if not isinstance(t, ArrayType):
        raise TileTypeError(f"{what} must be an array, got {t}")
    return t


def _dim_rule(types, attrs):
    arr = _array(types[0])
    if not 0 <= attrs["axis"] < arr.ndim:
        raise TileTypeError(f"axis {attrs['axis']} is out of range for an array of rank {arr.ndim}")
    return [TileType(dt.int32, ())]


def _load_rule(types, attrs):
    arr = _array(types[0])
    for t in types[1:]:
        _scalar_int(t, "tile-space index")
    if len(types) - 1 != arr.ndim or len(attrs["shape"]) != arr.ndim:
        raise TileTypeError(f"index and shape need {arr.ndim} entries for an array of rank {arr.ndim}")
    return [TileType(arr.dtype, attrs["shape"])]


def _store_rule(types, attrs):
    arr = _array(types[0])
    if arr.readonly:
        raise TileTypeError("cannot store to a read-only array")
    for t in types[1:-1]:
        _scalar_int(t, "tile-space index")
    tile = types[-1]
    if len(types) - 2 != arr.ndim or tile.ndim not in (0, arr.ndim):
        raise TileTypeError(f"store to an array of rank {arr.ndim} needs {arr.ndim} index entries "
                            f"and a tile of rank {arr.ndim}, got {tile}")
    if tile.dtype is not arr.dtype:
        raise TileTypeError(f"tile dtype {tile.dtype.name} does not match array dtype {arr.dtype.name}")
    return []


def _indices_shape(types, ndim):
    idx = types[1:1 + ndim]
    for t in idx:
        if not t.dtype.is_int:
            raise TileTypeError(f"indices must be integer tiles, got {t}")
    return dt.broadcast_shapes(*(t.shape for t in idx))


def _gather_rule(types, attrs):
    arr = _array(types[0])
    shape = _indices_shape(types, arr.ndim)
    if attrs.get("has_mask"):
        shape = dt.broadcast_shapes(shape, types[-1].shape)
    return [TileType(arr.dtype, shape)]


def _scatter_rule(types, attrs):
    arr = _array(types[0])
    if arr.readonly:
        raise TileTypeError("cannot scatter to a read-only array")
    _indices_shape(types, arr.ndim)
    return []


def _atomic_rule(types, attrs):
    arr = _array(types[0])
    if arr.readonly:
        raise TileTypeError("cannot update a read-only array atomically")
    shapes = [t.shape for t in types[1:]]
    return [TileType(arr.dtype, dt.broadcast_shapes(*shapes))]


declare("array_dim", FAMILY, "the run-time size of an array axis (int32)", _dim_rule)
declare("array_stride", FAMILY, "the run-time element stride of an array axis (int32)", _dim_rule)
declare("load", FAMILY, "load the tile at a tile-space index (attrs shape, order, padding)",
        _load_rule, effect="read")
declare("store", FAMILY, "store a tile at a tile-space index; out-of-bounds parts are dropped",
        _store_rule, effect="write")
declare("gather", FAMILY, "load array[indices...] element-wise (attrs padding_value, check_bounds, "
        "has_mask)", _gather_rule, effect="read")
declare("scatter", FAMILY, "store values to array[indices...] element-wise (attrs check_bounds, "
        "has_mask)", _scatter_rule, effect="write")
declare("atomic_rmw", FAMILY, "atomic read-modify-write per element (attr kind in add, max, min, and, "
        "or, xor, xchg); returns the old values (0 for out-of-bounds lanes, which change nothing)",
        _atomic_rule, effect="write")
declare("atomic_cas", FAMILY, "atomic compare-and-swap per element; returns the old values (0 for "
        "out-of-bounds lanes, which change nothing)", _atomic_rule, effect="write")


# ----------------------------------------------------------------------------- helpers

def _constant_for(dtype: dt.DType, value, fn: str, what: str):
    """A Python constant stored into an array of ``dtype`` must be exactly representable."""
    ok = True
    if dtype.is_bool:
        ok = value in (0, 1)
    elif dtype.is_int:
        if isinstance(value, float) or hasattr(value, "dtype") and value.dtype.kind == "f":
            ok = float(value).is_integer()
        if ok:
            info = dtype.info()
            ok = info.min <= int(value) <= info.max
    if not ok:
        raise TileValueError(f"{fn}: {what} {value!r} is not representable in the array's dtype {dtype.name}")
    return value


def _check_array(array, fn) -> Array:
    if not isinstance(array, Array):
        raise TileTypeError(f"{fn}: expected an array, got {describe(array)}")
    return array


def _index_tuple(index, ndim, fn) -> list[Tile]:
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != ndim:
        raise TileTypeError(f"{fn}: index has {len(index)} entries but the array has rank {ndim}")
    out = []
    for i in index:
        if is_const(i) and not isinstance(i, (bool, float)):
            out.append(as_tile(int(i), dt.int32))
        elif isinstance(i, Tile) and i.shape == () and i.dtype.is_int:
            out.append(i)
        else:
            raise TileTypeError(f"{fn}: tile-space index entries must be integer scalars, got {describe(i)}")
    return out


def _order(order, ndim) -> tuple[int, ...]:
    if order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(reversed(range(ndim)))
    if isinstance(order, tuple) and sorted(static_int(a, "order axis") for a in order) == list(range(ndim)):
        return tuple(int(a) for a in order)
    raise TileTypeError(f"order must be 'C', 'F' or a permutation of {tuple(range(ndim))}, got {order!r}")


def _padding(mode, dtype: dt.DType) -> PaddingMode:
    if mode is None:
        return PaddingMode.UNDETERMINED
    if not isinstance(mode, PaddingMode):
        raise TileTypeError(f"padding_mode must be a ct.PaddingMode, got {describe(mode)}")
    if not dtype.is_float and mode in (PaddingMode.NAN, PaddingMode.POS_INF, PaddingMode.NEG_INF,
                                       PaddingMode.NEG_ZERO):
        raise TileTypeError(f"padding mode {mode.name} needs a float array, got {dtype.name}")
    return mode


def _hints(latency, allow_tma) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if latency is not None:
        lat = static_int(latency, "latency")
        if not 1 <= lat <= 10:
            raise TileValueError(f"latency must be between 1 and 10, got {lat}")
        out["latency"] = lat
    if allow_tma is not None:
        if not isinstance(allow_tma, bool):
            raise TileTypeError(f"allow_tma must be True or False, got {describe(allow_tma)}")
        out["allow_tma"] = allow_tma
    return out


def _int_scalar(x, what: str) -> int | Tile:
    """An element position: a Python int, or a 0-d integer tile (as int32, like array sizes)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, Tile) and x.shape == () and x.dtype.is_int:
        return cast(x, dt.int32)
    raise TileTypeError(f"{what} must be an integer (a Python int or a 0-d integer tile), got {describe(x)}")


def _along(t: Tile, axis: int, ndim: int) -> Tile:
    """The 1-d tile ``t`` laid along ``axis`` of a rank-``ndim`` tile (unit size elsewhere)."""
    return reshape(t, tuple(t.shape[0] if a == axis else 1 for a in range(ndim)))


def _box_indices(origins: list, shape: tuple[int, ...]) -> list[Tile]:
    """Element index tiles of the box ``origins + [0, shape)``: entry ``k`` varies along axis
    ``k`` only, so together they broadcast to ``shape`` (the operands of a gather/scatter)."""
    n = len(shape)
    return [add(_along(arange(s, dtype=dt.int32), k, n), o) for k, (o, s) in enumerate(zip(origins, shape))]


def _array_axes(per_tile_axis: list[Tile], perm: tuple[int, ...]) -> tuple[Tile, ...]:
    """Index tiles in array-axis order; tile axis ``k`` runs along array axis ``perm[k]``."""
    return tuple(per_tile_axis[perm.index(a)] for a in range(len(perm)))


def _load_box(array: Array, origins: list, shape: tuple[int, ...], perm: tuple[int, ...],
              padding: PaddingMode, latency) -> Tile:
    """The tile whose element ``x`` is array element ``origins + x`` (tile axis ``k`` along
    array axis ``perm[k]``), as a gather: elements outside the array or slice read the padding."""
    idx = _array_axes(_box_indices(origins, shape), perm)
    return gather(array, idx, padding_value=PAD_VALUES[padding], latency=latency)


def _store_box(array: Array, origins: list, tile: Tile, perm: tuple[int, ...], latency) -> None:
    """Store ``tile`` to the box at ``origins`` (see ``_load_box``) as a scatter that drops
    elements outside the array or slice."""
    scatter(array, _array_axes(_box_indices(origins, tile.shape), perm), tile, latency=latency)


def _into_base(index: Tile, offset: Tile | None, size: Tile | None) -> Tile:
    """An element index along one axis of a slice as an index of the base array. Positions
    outside the slice become -1, which gather, scatter and atomics treat as out of bounds, so
    no access through a slice reaches memory outside it."""
    if offset is None:
        return index
    assert size is not None  # slice_array sets an axis's offset and size together
    return where((index >= 0) & (index < size), add(index, offset), -1)


# ----------------------------------------------------------------------------- public API

def array_dim(array: Array, axis: int) -> Tile | int:
    """The size of ``axis`` (for a slice, the slice's own size): a Python int where it is known
    at compile time (``ct.ArrayAnnotation(static_shape_dims=...)``, a slice with constant
    bounds), else a run-time int32 scalar (int64 for ``ct.IndexedWithInt64`` arrays)."""
    if isinstance(array, ArraySlice):
        known, size = array.static_sizes[axis], array.sizes[axis]
        if known is not None:
            return known
        if size is not None:
            return _index_cast(array, size)
    static = array.type.static_shape
    known = None if static is None else static[axis]
    if known is not None:
        return int(known)
    return _index_cast(array, Tile(emit("array_dim", [array.value], {"axis": axis}).result))


def array_stride(array: Array, axis: int) -> Tile | int:
    """The element stride of ``axis`` (a Python int where known at compile time)."""
    static = array.type.static_strides
    known = None if static is None else static[axis]
    if known is not None:
        return int(known)
    return _index_cast(array, Tile(emit("array_stride", [array.value], {"axis": axis}).result))


def _index_cast(array: Array, t: Tile) -> Tile:
    return cast(t, dt.int64) if array.type.index_int64 else t


def slice_array(array: Array, axis, start, stop) -> ArraySlice:
    """``array.slice(axis, start, stop)``: the window [start, stop) of ``axis``, no copy.

    The bounds are clamped to ``0 <= start <= stop <= N`` (N the parent's size; cuTile leaves
    other bounds undefined), so a slice never reaches outside its parent. A slice of a slice
    is one window of the base array. No IR op: accesses through the slice are gathers and
    scatters of the base array (see ``_into_base``).
    """
    array = _check_array(array, "Array.slice")
    ax = static_int(axis, "Array.slice axis")
    if not -array.ndim <= ax < array.ndim:
        raise TileTypeError(f"Array.slice: axis {ax} is out of range for an array of rank {array.ndim}")
    ax %= array.ndim
    cs, ce = (int(start) if is_const(start) else None), (int(stop) if is_const(stop) else None)
    if cs is not None and cs < 0:
        raise TileTypeError("Slice start must be non-negative")
    if ce is not None and ce < 0:
        raise TileTypeError("Slice stop must be non-negative")
    if cs is not None and ce is not None and ce < cs:
        raise TileTypeError("Slice stop must be greater than or equal to start")
    n = array_dim(array, ax)
    lo = minimum(maximum(_int_scalar(start, "Array.slice start"), 0), n)
    hi = minimum(maximum(_int_scalar(stop, "Array.slice stop"), lo), n)
    if isinstance(array, ArraySlice):
        base, offsets, sizes = array.base, list(array.offsets), list(array.sizes)
    else:
        base, offsets, sizes = array, [None] * array.ndim, [None] * array.ndim
    offsets[ax] = lo if offsets[ax] is None else add(offsets[ax], lo)
    sizes[ax] = hi - lo
    static: list[int | None] = list(array.static_sizes) if isinstance(array, ArraySlice) else [None] * array.ndim
    # constant bounds give a compile-time size, as in cuTile Python (accesses stay clamped)
    static[ax] = max(int(stop) - int(start), 0) if is_const(start) and is_const(stop) and int(start) >= 0 \
        else None
    return ArraySlice(base, tuple(offsets), tuple(sizes), tuple(static))


def _tile_count(array: Array, axis, steps: tuple[int, ...], perm: tuple[int, ...], fn: str) -> Tile:
    """Tile origins ``i * step`` inside the array along tile axis ``axis``: cdiv(size, step)."""
    ax = static_int(axis, "axis")
    if not 0 <= ax < array.ndim:
        raise TileTypeError(f"{fn}: axis {ax} out of range for rank {array.ndim}")
    return cdiv(array_dim(array, perm[ax]), steps[ax])


def num_tiles(array, axis, shape, order="C"):
    """The number of tiles of ``shape`` along ``axis`` of the array's (or slice's) tile space."""
    array = _check_array(array, "num_tiles")
    shp = static_shape(shape)
    perm = _order(order, array.ndim)
    if len(shp) != array.ndim:
        raise TileTypeError(f"num_tiles: shape {shp} does not match the array rank {array.ndim}")
    return _tile_count(array, axis, shp, perm, "num_tiles")


def load(array, /, index, shape, *, order="C", padding_mode=PaddingMode.UNDETERMINED,
         check_bounds=True, latency=None, allow_tma=None, memory_order=None, memory_scope=None):
    """Load the tile at tile-space ``index`` of ``array`` partitioned into ``shape`` tiles.

    ``shape=()`` loads one element. ``order`` permutes the array axes before tiling.
    Out-of-bounds elements of a partial edge tile take the ``padding_mode`` value. On an
    array slice, tile space and bounds are the slice's (a gather of the base array).
    """
    array = _check_array(array, "load")
    scalar = shape == ()
    shp = (1,) * array.ndim if scalar else static_shape(shape)
    if len(shp) != array.ndim:
        raise TileTypeError(f"load: shape {shp} has rank {len(shp)} but the array has rank {array.ndim}")
    idx = _index_tuple(index, array.ndim, "load")
    attrs = {"shape": shp, "order": _order(order, array.ndim),
             "padding": _padding(padding_mode, array.dtype), **_hints(latency, allow_tma),
             **memory_attrs(memory_order, memory_scope, MemoryOrder.WEAK, MemoryScope.NONE, "tile_load")}
    if isinstance(array, ArraySlice):
        t = _load_box(array, [mul(i, s) for i, s in zip(idx, shp)], shp, attrs["order"], attrs["padding"],
                      latency)
    else:
        t = Tile(emit("load", [array.value] + [i.value for i in idx], attrs).result)
    if scalar:
        return reshape(t, ())
    return t


def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None, allow_tma=None,
          memory_order=None, memory_scope=None):
    """Store ``tile`` at tile-space ``index``; parts outside the array are dropped.

    A scalar (number or 0-d tile) stores one element at ``index``. On an array slice,
    tile space and bounds are the slice's (a scatter to the base array).
    """
    array = _check_array(array, "store")
    idx = _index_tuple(index, array.ndim, "store")
    if not isinstance(tile, Tile) and not is_const(tile):
        raise TileTypeError(f"store: expected a tile to store, got {describe(tile)}")
    tile = implicit_cast(tile, array.dtype, "Stored tile is incompatible with array's dtype")
    if tile.ndim == 0:
        tile = align_rank(tile, array.ndim)
    elif tile.ndim != array.ndim:
        raise TileTypeError(f"store: tile of rank {tile.ndim} cannot be stored to an array of rank {array.ndim}")
    attrs = {"order": _order(order, array.ndim), **_hints(latency, allow_tma),
             **memory_attrs(memory_order, memory_scope, MemoryOrder.WEAK, MemoryScope.NONE, "tile_store")}
    if isinstance(array, ArraySlice):
        _store_box(array, [mul(i, s) for i, s in zip(idx, tile.shape)], tile, attrs["order"], latency)
    else:
        emit("store", [array.value] + [i.value for i in idx] + [tile.value], attrs)


def _element_indices(array: Array, indices, fn: str) -> list[Tile]:
    if isinstance(indices, Tile) or is_const(indices):
        indices = (indices,)
    if not isinstance(indices, tuple) or len(indices) != array.ndim:
        raise TileTypeError(f"{fn}: need {array.ndim} index tile(s) for an array of rank {array.ndim}, "
                            f"got {describe(indices)}")
    tiles = []
    for i in indices:
        t = as_tile(i, dt.int32) if is_const(i) else i
        if not isinstance(t, Tile) or not t.dtype.is_int:
            raise TileTypeError(f"{fn}: indices must be integer tiles, got {describe(i)}")
        tiles.append(t)
    if isinstance(array, ArraySlice):
        return [_into_base(t, o, n) for t, o, n in zip(tiles, array.offsets, array.sizes)]
    return tiles


def _index_shape(idx: list[Tile]) -> tuple:
    """The common shape of element index tiles (cuTile: indices broadcast together; values,
    updates and masks must broadcast *to* this shape)."""
    try:
        return dt.broadcast_shapes(*(t.shape for t in idx))
    except ValueError:
        shapes = ", ".join(str(t.shape) for t in idx)
        raise TileTypeError(f"Index shapes {shapes} are not broadcastable to a common shape") from None


def _fits(value, shape: tuple, what: str) -> None:
    s = value.shape if isinstance(value, Tile) else ()
    if not (len(s) <= len(shape) and builtins.all(x in (y, 1) for x, y in zip(reversed(s), reversed(shape)))):
        raise TileTypeError(f"{what} shape {s} is not broadcastable to the index shape {shape}")


def _aligned(tiles: list[Tile]) -> list[Tile]:
    ndim = max((t.ndim for t in tiles), default=0)
    return [align_rank(t, ndim) for t in tiles]


def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    """Load ``array[indices]`` element-wise; out-of-bounds or masked-off lanes read ``padding_value``.

    On an array slice, indices and bounds are the slice's (as for scatter and the atomics).
    """
    array = _check_array(array, "gather")
    idx = _element_indices(array, indices, "gather")
    if not is_const(padding_value):
        raise TileTypeError(f"gather: padding_value must be a number, got {describe(padding_value)}")
    _constant_for(array.dtype, padding_value, "gather", "padding_value")
    shape = _index_shape(idx)
    ops = idx + ([as_tile(mask, dt.bool_) if is_const(mask) else mask] if mask is not None else [])
    if mask is not None and (not isinstance(ops[-1], Tile) or not ops[-1].dtype.is_bool):
        raise TileTypeError(f"Custom mask must have boolean dtype, but got {describe(mask)}")
    if mask is not None:
        _fits(ops[-1], shape, "Custom mask")
    ops = _aligned(ops)
    attrs = {"padding_value": padding_value, "check_bounds": bool(check_bounds),
             "has_mask": mask is not None, **_hints(latency, None)}
    return Tile(emit("gather", [array.value] + [t.value for t in ops], attrs).result)


def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    """Store ``value`` to ``array[indices]`` element-wise; out-of-bounds lanes are dropped."""
    array = _check_array(array, "scatter")
    idx = _element_indices(array, indices, "scatter")
    if not isinstance(value, Tile) and not is_const(value):
        raise TileTypeError(f"scatter: value must be a tile, got {describe(value)}")
    shape = _index_shape(idx)
    _fits(value, shape, "Value")
    val = implicit_cast(value, array.dtype, "Stored value is incompatible with array's dtype")
    ops = idx + [val] + ([mask] if mask is not None else [])
    if mask is not None and (not isinstance(mask, Tile) or not mask.dtype.is_bool):
        raise TileTypeError(f"Custom mask must have boolean dtype, but got {describe(mask)}")
    if mask is not None:
        _fits(mask, shape, "Custom mask")
    ops = _aligned(ops)
    attrs = {"check_bounds": bool(check_bounds), "has_mask": mask is not None, **_hints(latency, None)}
    emit("scatter", [array.value] + [t.value for t in ops], attrs)


def _atomic(kind: str, array, indices, update, check_bounds, memory_order, memory_scope, fn):
    array = _check_array(array, fn)
    idx = _element_indices(array, indices, fn)
    if array.dtype.name not in ATOMIC_DTYPES[kind]:
        raise TileTypeError(f"Unsupported array dtype: {array.dtype.name}")
    if not isinstance(update, Tile) and not is_const(update):
        raise TileTypeError(f"{fn}: update must be a tile or number, got {describe(update)}")
    _fits(update, _index_shape(idx), "Update")
    if kind in ("and", "or", "xor") and isinstance(update, Tile) and update.dtype is not array.dtype:
        raise TileTypeError(f"Bitwise atomic read-modify-write operations require the update dtype "
                            f"({update.dtype.name}) to exactly match the target dtype ({array.dtype.name})")
    val = implicit_cast(update, array.dtype, "Update is incompatible with the target dtype")
    ops = _aligned(idx + [val])
    attrs = {"kind": kind, "check_bounds": bool(check_bounds),
             **memory_attrs(memory_order, memory_scope, MemoryOrder.ACQ_REL, MemoryScope.DEVICE, "tile_atomic_rmw")}
    return Tile(emit("atomic_rmw", [array.value] + [t.value for t in ops], attrs).result)


def _atomic_fn(kind: str):
    name = "atomic_xchg" if kind == "xchg" else f"atomic_{kind}"

    def fn(array, indices, update, /, *, check_bounds=True, memory_order=None, memory_scope=None):
        return _atomic(kind, array, indices, update, check_bounds, memory_order, memory_scope, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Atomically apply `{kind}` to array[indices] per element and return the old "
                  "values (default ACQ_REL, device scope).")
    return fn


atomic_add = _atomic_fn("add")
atomic_max = _atomic_fn("max")
atomic_min = _atomic_fn("min")
atomic_and = _atomic_fn("and")
atomic_or = _atomic_fn("or")
atomic_xor = _atomic_fn("xor")
atomic_xchg = _atomic_fn("xchg")


def atomic_cas(array, indices, expected, desired, /, *, check_bounds=True, memory_order=None,
               memory_scope=None):
    """Atomically replace array[indices] by ``desired`` where it equals ``expected``; returns old values."""
    array = _check_array(array, "atomic_cas")
    idx = _element_indices(array, indices, "atomic_cas")
    if array.dtype.name not in ATOMIC_DTYPES["xchg"]:
        raise TileTypeError(f"Unsupported array dtype: {array.dtype.name}")
    vals = []
    for what, v in (("expected", expected), ("desired", desired)):
        if not isinstance(v, Tile) and not is_const(v):
            raise TileTypeError(f"atomic_cas: {what} must be a tile or number, got {describe(v)}")
        _fits(v, _index_shape(idx), f"{what.capitalize()} value")
        vals.append(implicit_cast(v, array.dtype, f"{what.capitalize()} is incompatible with the array's dtype"))
    ops = _aligned(idx + vals)
    attrs = {"check_bounds": bool(check_bounds),
             **memory_attrs(memory_order, memory_scope, MemoryOrder.ACQ_REL, MemoryScope.DEVICE, "tile_atomic_cas")}
    return Tile(emit("atomic_cas", [array.value] + [t.value for t in ops], attrs).result)


class TiledView:
    """An array (or slice) seen as a grid of ``tile_shape`` tiles (padding fixed at creation).

    ``traversal_steps`` (cuTile's strided view) sets the distance between tile origins per
    axis: tile ``index`` starts at element ``index * step``. Steps below the tile shape give
    overlapping windows, above it gaps. ``num_tiles`` counts the origins inside the array,
    ``cdiv(size, step)`` (Tile IR's strided-view index space), so the last tiles may be
    partial. Steps equal to the tile shape are the plain tile space (the fast load path);
    other steps compose the access from gather/scatter (no IR op).
    """

    def __init__(self, array: Array, tile_shape, *, padding_mode=None, traversal_steps=None):
        self.array = _check_array(array, "tiled_view")
        self.tile_shape = static_shape(tile_shape, "tile_shape")
        if len(self.tile_shape) != array.ndim:
            raise TileTypeError(f"tiled_view: tile_shape {self.tile_shape} does not match the array rank {array.ndim}")
        self.steps = self.tile_shape if traversal_steps is None else _steps(traversal_steps, array.ndim)
        self.padding_mode = _padding(padding_mode, array.dtype)

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def _stepped(self) -> bool:
        return self.steps != self.tile_shape

    def _origins(self, index, fn: str) -> list[Tile]:
        return [mul(i, st) for i, st in zip(_index_tuple(index, self.array.ndim, fn), self.steps)]

    def num_tiles(self, axis):
        """Tiles along ``axis``: the origins ``i * step`` inside the array, cdiv(size, step)."""
        return _tile_count(self.array, axis, self.steps, tuple(range(self.array.ndim)), "TiledView.num_tiles")

    @property
    def traversal_steps(self) -> tuple[int, ...]:
        """Elements between consecutive tile origins per axis (the tile shape unless given)."""
        return self.steps

    def load(self, index, *, check_bounds=True, latency=None, allow_tma=None):
        """The tile at tile-space ``index`` (out-of-bounds elements take the view's padding)."""
        _check_bounds_flag(check_bounds)
        if not self._stepped:
            return load(self.array, index, self.tile_shape, padding_mode=self.padding_mode,
                        latency=latency, allow_tma=allow_tma)
        _hints(latency, allow_tma)
        return _load_box(self.array, self._origins(index, "TiledView.load"), self.tile_shape,
                         tuple(range(self.array.ndim)), self.padding_mode, latency)

    def _full_tile(self, tile, fn: str, context: str, cast_dtype: bool = True) -> Tile:
        """``tile`` broadcast to the view's tile shape (and implicitly cast to its dtype)."""
        if not isinstance(tile, Tile) and not is_const(tile):
            raise TileTypeError(f"{fn}: expected a tile, got {describe(tile)}")
        t = implicit_cast(tile, self.array.dtype, context) if cast_dtype else as_tile(tile, self.array.dtype)
        if len(t.shape) > len(self.tile_shape) or any(
                a not in (1, b) for a, b in zip(reversed(t.shape), reversed(self.tile_shape))):
            raise TileTypeError(f"{fn}: shape {t.shape} is not broadcastable to the view's tile_shape "
                                f"{self.tile_shape}")
        return broadcast_to(t, self.tile_shape)

    def store(self, index, tile, *, check_bounds=True, latency=None, allow_tma=None):
        """Store ``tile`` (broadcast to the tile shape, implicitly cast) at tile-space ``index``."""
        _check_bounds_flag(check_bounds)
        tile = self._full_tile(tile, "TiledView.store", "Stored tile is incompatible with array's dtype")
        if not self._stepped:
            store(self.array, index, tile, latency=latency, allow_tma=allow_tma)
            return
        _hints(latency, allow_tma)
        _store_box(self.array, self._origins(index, "TiledView.store"), tile, tuple(range(self.array.ndim)),
                   latency)

    def _atomic(self, kind, index, update):
        fn = f"TiledView.atomic_store_{kind}"
        bitwise = kind in ("and", "or", "xor")
        if bitwise and isinstance(update, Tile) and update.dtype is not self.array.dtype:
            raise TileTypeError(f"Bitwise atomic read-modify-write operations require the update dtype "
                                f"({update.dtype.name}) to exactly match the target dtype ({self.array.dtype.name})")
        upd = self._full_tile(update, fn, "Update is incompatible with the target dtype")
        elems = _box_indices(self._origins(index, fn), self.tile_shape)
        _atomic(kind, self.array, tuple(elems), upd, True, MemoryOrder.RELAXED, MemoryScope.DEVICE, fn)

    def atomic_store_add(self, index, update, /):
        """Atomically add ``update`` to the tile at ``index`` (no result; out-of-bounds lanes ignored)."""
        self._atomic("add", index, update)

    def atomic_store_max(self, index, update, /):
        """Atomic element-wise maximum with ``update`` at tile ``index``."""
        self._atomic("max", index, update)

    def atomic_store_min(self, index, update, /):
        """Atomic element-wise minimum with ``update`` at tile ``index``."""
        self._atomic("min", index, update)

    def atomic_store_and(self, index, update, /):
        """Atomic bitwise AND with ``update`` (exactly the view's dtype) at tile ``index``."""
        self._atomic("and", index, update)

    def atomic_store_or(self, index, update, /):
        """Atomic bitwise OR with ``update`` (exactly the view's dtype) at tile ``index``."""
        self._atomic("or", index, update)

    def atomic_store_xor(self, index, update, /):
        """Atomic bitwise XOR with ``update`` (exactly the view's dtype) at tile ``index``."""
        self._atomic("xor", index, update)

    # the names of earlier cuTile releases
    atomic_add = atomic_store_add
    atomic_max = atomic_store_max
    atomic_min = atomic_store_min
    atomic_and = atomic_store_and
    atomic_or = atomic_store_or
    atomic_xor = atomic_store_xor


def _check_bounds_flag(check_bounds) -> None:
    """``check_bounds=False`` is a promise that every element is in bounds; safetile keeps the
    checks either way (out-of-bounds accesses stay safe), so only the type is checked."""
    if not isinstance(check_bounds, bool):
        raise TileTypeError(f"check_bounds must be a constant True or False, got {describe(check_bounds)}")


def _steps(steps, ndim: int) -> tuple[int, ...]:
    """``traversal_steps``: one positive integer constant per axis (any value, not only powers of two)."""
    if isinstance(steps, (int, np.integer)) and not isinstance(steps, bool):
        steps = (steps,)
    if not isinstance(steps, tuple):
        raise TileTypeError(f"tiled_view: traversal_steps must be a tuple of integer constants, got {describe(steps)}")
    out = tuple(static_int(s, "tiled_view: traversal_steps entry") for s in steps)
    if len(out) != ndim:
        raise TileTypeError(f"tiled_view: traversal_steps {out} does not match the array rank {ndim}")
    if any(s <= 0 for s in out):
        raise TileValueError(f"tiled_view: traversal_steps must be positive, got {out}")
    return out


# ----------------------------------------------------------------------------- advanced indexing

class Slice:
    """``ct.Slice(start, length)``: the dense range [start, start + length) of one axis in
    ``load_advanced_indexing``/``store_advanced_indexing``. ``start`` is an element offset
    (run-time allowed); ``length`` a compile-time power of two (the tile size on that axis)."""

    def __init__(self, start, length, /):
        self.start = _int_scalar(start, "Slice start")
        self.length = static_int(length, "Slice length")
        if not dt.is_pow2(self.length):
            raise TileTypeError(f"Slice length must be a power of two, got {self.length}")

    def __repr__(self) -> str:
        return f"Slice({self.start!r}, {self.length})"


def _advanced_indices(array: Array, indices, fn: str) -> tuple[tuple[Tile, ...], tuple[int, ...]]:
    """(element index tiles in array-axis order, result shape) for advanced indexing: one
    1-d integer tile (the sparse axis, element indices) and a ``Slice`` for every other axis."""
    if not isinstance(indices, tuple) or len(indices) != array.ndim:
        raise TileTypeError(f"{fn}: indices need one entry per array axis ({array.ndim}), got {describe(indices)}")
    for axis, i in enumerate(indices):
        if not isinstance(i, Slice) and not (isinstance(i, Tile) and i.ndim == 1 and i.dtype.is_int):
            raise TileTypeError(f"{fn}: indices entry {axis} must be a ct.Slice or a 1-d integer tile, "
                                f"got {describe(i)}")
    sparse = [axis for axis, i in enumerate(indices) if isinstance(i, Tile)]
    if len(sparse) != 1:
        raise TileTypeError(f"{fn}: exactly one indices entry must be a 1-d integer tile (the sparse axis), "
                            f"got {len(sparse)}")
    n = array.ndim
    elems = tuple(add(_along(arange(i.length, dtype=dt.int32), axis, n), i.start) if isinstance(i, Slice)
                  else _along(i, axis, n) for axis, i in enumerate(indices))
    return elems, tuple(i.length if isinstance(i, Slice) else i.shape[0] for i in indices)


def load_advanced_indexing(array, indices, /, *, padding_mode=PaddingMode.UNDETERMINED, latency=None,
                           allow_tma=None):
    """Load the tile ``array[indices]`` where ``indices`` has one entry per axis: a 1-d integer
    tile of element indices on exactly one (sparse) axis, ``ct.Slice(start, length)`` on the
    others. The result has shape (len per axis); out-of-bounds elements (on any axis, negative
    indices included) take the ``padding_mode`` value. No IR op: a gather of broadcast indices.
    """
    array = _check_array(array, "load_advanced_indexing")
    elems, _ = _advanced_indices(array, indices, "load_advanced_indexing")
    _hints(latency, allow_tma)
    pad = _padding(padding_mode, array.dtype)
    return gather(array, elems, padding_value=PAD_VALUES[pad], latency=latency)


def store_advanced_indexing(array, indices, tile, /, *, latency=None, allow_tma=None):
    """Store ``tile`` to ``array[indices]`` (indices as in ``load_advanced_indexing``); the tile
    must have exactly the shape the indices imply and the array's dtype. Out-of-bounds
    elements are dropped. No IR op: a scatter of broadcast indices.
    """
    fn = "store_advanced_indexing"
    array = _check_array(array, fn)
    elems, shape = _advanced_indices(array, indices, fn)
    if not isinstance(tile, Tile) and not is_const(tile):
        raise TileTypeError(f"{fn}: expected a tile, got {describe(tile)}")
    tile = implicit_cast(tile, array.dtype, "Stored tile is incompatible with array's dtype")
    if tile.shape != shape:
        try:
            tile = broadcast_to(tile, shape)
        except TileTypeError:
            raise TileTypeError(f"{fn}: tile shape {tile.shape} does not broadcast to {shape}, the shape the "
                                "indices imply") from None
    _hints(latency, allow_tma)
    scatter(array, elems, tile, latency=latency)
