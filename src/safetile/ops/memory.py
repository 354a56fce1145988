"""Memory ops: tile-space load/store, tiled views, gather/scatter and atomics.

Tile-space access (``load``/``store``) addresses whole tiles: index ``i`` along an axis
with tile size ``s`` covers elements ``i*s ... i*s+s-1``. Elements outside the array read
the padding value and are never written. Gather, scatter and atomics address single
elements through integer index tiles that broadcast against each other; out-of-bounds
(including negative) indices read ``padding_value`` and are dropped on writes.
"""
from __future__ import annotations

import enum
from typing import Any

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import ArrayType, TileType
from .elementwise import align_rank, cast
from .values import Array, Tile, as_tile, describe, is_const, static_int, static_shape

FAMILY = "memory"


class PaddingMode(enum.Enum):
    """The value out-of-bounds elements of a tile-space load take."""

    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class MemoryOrder(enum.Enum):
    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    NONE = "none"
    BLOCK = "block"
    CLUSTER = "cluster"
    DEVICE = "device"
    SYS = "sys"


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
        raise TileValueError(f"axis {attrs['axis']} is out of range for an array of rank {arr.ndim}")
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
    raise TileValueError(f"order must be 'C', 'F' or a permutation of {tuple(range(ndim))}, got {order!r}")


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


def _mem(memory_order, memory_scope, default_order, default_scope) -> dict[str, Any]:
    mo = default_order if memory_order is None else memory_order
    ms = default_scope if memory_scope is None else memory_scope
    if not isinstance(mo, MemoryOrder):
        raise TileTypeError(f"memory_order must be a ct.MemoryOrder, got {describe(mo)}")
    if not isinstance(ms, MemoryScope):
        raise TileTypeError(f"memory_scope must be a ct.MemoryScope, got {describe(ms)}")
    return {"memory_order": mo, "memory_scope": ms}


# ----------------------------------------------------------------------------- public API

def array_dim(array: Array, axis: int) -> Tile:
    return Tile(emit("array_dim", [array.value], {"axis": axis}).result)


def array_stride(array: Array, axis: int) -> Tile:
    return Tile(emit("array_stride", [array.value], {"axis": axis}).result)


def num_tiles(array, axis, shape, order="C"):
    """The number of tiles of ``shape`` along ``axis`` of the array's tile space."""
    array = _check_array(array, "num_tiles")
    shp = static_shape(shape)
    perm = _order(order, array.ndim)
    if len(shp) != array.ndim:
        raise TileTypeError(f"num_tiles: shape {shp} does not match the array rank {array.ndim}")
    ax = static_int(axis, "axis")
    if not 0 <= ax < array.ndim:
        raise TileValueError(f"num_tiles: axis {ax} out of range for rank {array.ndim}")
    from .grid import cdiv
    return cdiv(array_dim(array, perm[ax]), shp[ax])


def load(array, /, index, shape, *, order="C", padding_mode=PaddingMode.UNDETERMINED,
         check_bounds=True, latency=None, allow_tma=None, memory_order=None, memory_scope=None):
    """Load the tile at tile-space ``index`` of ``array`` partitioned into ``shape`` tiles.

    ``shape=()`` loads one element. ``order`` permutes the array axes before tiling.
    Out-of-bounds elements of a partial edge tile take the ``padding_mode`` value.
    """
    array = _check_array(array, "load")
    scalar = shape == ()
    shp = (1,) * array.ndim if scalar else static_shape(shape)
    if len(shp) != array.ndim:
        raise TileTypeError(f"load: shape {shp} has rank {len(shp)} but the array has rank {array.ndim}")
    idx = _index_tuple(index, array.ndim, "load")
    attrs = {"shape": shp, "order": _order(order, array.ndim),
             "padding": _padding(padding_mode, array.dtype), **_hints(latency, allow_tma),
             **_mem(memory_order, memory_scope, MemoryOrder.WEAK, MemoryScope.NONE)}
    t = Tile(emit("load", [array.value] + [i.value for i in idx], attrs).result)
    if scalar:
        from .shape import reshape
        return reshape(t, ())
    return t


def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None, allow_tma=None,
          memory_order=None, memory_scope=None):
    """Store ``tile`` at tile-space ``index``; parts outside the array are dropped.

    A scalar (number or 0-d tile) stores one element at ``index``.
    """
    array = _check_array(array, "store")
    idx = _index_tuple(index, array.ndim, "store")
    if is_const(tile):
        tile = as_tile(_constant_for(array.dtype, tile, "store", "value"), array.dtype)
    if not isinstance(tile, Tile):
        raise TileTypeError(f"store: expected a tile to store, got {describe(tile)}")
    if tile.dtype is not array.dtype:
        raise TileTypeError(f"store: tile dtype {tile.dtype.name} does not match array dtype "
                            f"{array.dtype.name}; convert it with .astype({array.dtype.name})")
    if tile.ndim == 0:
        tile = align_rank(tile, array.ndim)
    elif tile.ndim != array.ndim:
        raise TileTypeError(f"store: tile of rank {tile.ndim} cannot be stored to an array of rank {array.ndim}")
    attrs = {"order": _order(order, array.ndim), **_hints(latency, allow_tma),
             **_mem(memory_order, memory_scope, MemoryOrder.WEAK, MemoryScope.NONE)}
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
    return tiles


def _aligned(tiles: list[Tile]) -> list[Tile]:
    ndim = max(t.ndim for t in tiles)
    return [align_rank(t, ndim) for t in tiles]


def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    """Load ``array[indices]`` element-wise; out-of-bounds or masked-off lanes read ``padding_value``."""
    array = _check_array(array, "gather")
    idx = _element_indices(array, indices, "gather")
    if not is_const(padding_value):
        raise TileTypeError(f"gather: padding_value must be a number, got {describe(padding_value)}")
    _constant_for(array.dtype, padding_value, "gather", "padding_value")
    ops = idx + ([as_tile(mask, dt.bool_) if is_const(mask) else mask] if mask is not None else [])
    if mask is not None and (not isinstance(ops[-1], Tile) or not ops[-1].dtype.is_bool):
        raise TileTypeError(f"gather: mask must be a bool tile, got {describe(mask)}")
    ops = _aligned(ops)
    attrs = {"padding_value": padding_value, "check_bounds": bool(check_bounds),
             "has_mask": mask is not None, **_hints(latency, None)}
    return Tile(emit("gather", [array.value] + [t.value for t in ops], attrs).result)


def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    """Store ``value`` to ``array[indices]`` element-wise; out-of-bounds lanes are dropped."""
    array = _check_array(array, "scatter")
    idx = _element_indices(array, indices, "scatter")
    val = as_tile(_constant_for(array.dtype, value, "scatter", "value"), array.dtype) if is_const(value) else value
    if not isinstance(val, Tile):
        raise TileTypeError(f"scatter: value must be a tile, got {describe(value)}")
    if val.dtype is not array.dtype:
        raise TileTypeError(f"scatter: value dtype {val.dtype.name} does not match array dtype "
                            f"{array.dtype.name}; convert it with .astype({array.dtype.name})")
    ops = idx + [val] + ([mask] if mask is not None else [])
    if mask is not None and (not isinstance(mask, Tile) or not mask.dtype.is_bool):
        raise TileTypeError(f"scatter: mask must be a bool tile, got {describe(mask)}")
    ops = _aligned(ops)
    attrs = {"check_bounds": bool(check_bounds), "has_mask": mask is not None, **_hints(latency, None)}
    emit("scatter", [array.value] + [t.value for t in ops], attrs)


def _atomic(kind: str, array, indices, update, check_bounds, memory_order, memory_scope, fn):
    array = _check_array(array, fn)
    idx = _element_indices(array, indices, fn)
    if kind in ("and", "or", "xor") and array.dtype.is_float:
        raise TileTypeError(f"{fn} needs an integer array, got {array.dtype.name}")
    if kind in ("add", "max", "min") and (array.dtype.is_bool or array.dtype.storage_only):
        raise TileTypeError(f"{fn} needs an integer or float array, got {array.dtype.name}")
    val = as_tile(_constant_for(array.dtype, update, fn, "update"), array.dtype) if is_const(update) else update
    if not isinstance(val, Tile):
        raise TileTypeError(f"{fn}: update must be a tile or number, got {describe(update)}")
    val = cast(val, array.dtype)
    ops = _aligned(idx + [val])
    attrs = {"kind": kind, "check_bounds": bool(check_bounds),
             **_mem(memory_order, memory_scope, MemoryOrder.ACQ_REL, MemoryScope.DEVICE)}
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
    vals = []
    for what, v in (("expected", expected), ("desired", desired)):
        if is_const(v):
            v = as_tile(_constant_for(array.dtype, v, "atomic_cas", what), array.dtype)
        elif not isinstance(v, Tile):
            raise TileTypeError(f"atomic_cas: {what} must be a tile or number, got {describe(v)}")
        vals.append(cast(v, array.dtype))
    ops = _aligned(idx + vals)
    attrs = {"check_bounds": bool(check_bounds),
             **_mem(memory_order, memory_scope, MemoryOrder.ACQ_REL, MemoryScope.DEVICE)}
    return Tile(emit("atomic_cas", [array.value] + [t.value for t in ops], attrs).result)


class TiledView:
    """An array seen as a grid of ``tile_shape`` tiles (padding fixed at creation)."""

    def __init__(self, array: Array, tile_shape, *, padding_mode=None, traversal_steps=None):
        self.array = _check_array(array, "tiled_view")
        self.tile_shape = static_shape(tile_shape, "tile_shape")
        if len(self.tile_shape) != array.ndim:
            raise TileTypeError(f"tiled_view: tile_shape {self.tile_shape} does not match the array rank {array.ndim}")
        if traversal_steps is not None:
            raise TileValueError("tiled_view: traversal_steps is not supported yet")
        self.padding_mode = _padding(padding_mode, array.dtype)

    @property
    def dtype(self):
        return self.array.dtype

    def num_tiles(self, axis):
        return num_tiles(self.array, axis, self.tile_shape)

    def load(self, index, *, latency=None, allow_tma=None):
        return load(self.array, index, self.tile_shape, padding_mode=self.padding_mode,
                    latency=latency, allow_tma=allow_tma)

    def store(self, index, tile, *, latency=None, allow_tma=None):
        if isinstance(tile, Tile) and tile.shape not in ((), self.tile_shape):
            raise TileTypeError(f"TiledView.store: tile shape {tile.shape} does not match the view's "
                                f"tile_shape {self.tile_shape}")
        if isinstance(tile, Tile) and tile.shape == () or is_const(tile):
            from .shape import broadcast_to
            tile = broadcast_to(as_tile(tile, self.array.dtype), self.tile_shape)
        store(self.array, index, tile, latency=latency, allow_tma=allow_tma)

    def _element_grid(self, index) -> list[Tile]:
        """Element index tiles covering the tile at ``index`` (for atomics)."""
        from .elementwise import add, mul
        from .factories import arange
        from .shape import reshape
        idx = _index_tuple(index, self.array.ndim, "TiledView atomic")
        n = self.array.ndim
        out = []
        for axis, (i, s) in enumerate(zip(idx, self.tile_shape)):
            shape = tuple(s if a == axis else 1 for a in range(n))
            out.append(add(reshape(arange(s, dtype=dt.int32), shape), mul(i, s)))
        return out

    def _atomic(self, kind, index, update):
        upd = update
        if isinstance(upd, Tile) and upd.shape not in ((), self.tile_shape):
            raise TileTypeError(f"TiledView.atomic_{kind}: update shape {upd.shape} does not match "
                                f"tile_shape {self.tile_shape}")
        _atomic(kind, self.array, tuple(self._element_grid(index)), upd, True, MemoryOrder.RELAXED,
                MemoryScope.DEVICE, f"TiledView.atomic_{kind}")

    def atomic_add(self, index, update):
        self._atomic("add", index, update)

    def atomic_max(self, index, update):
        self._atomic("max", index, update)

    def atomic_min(self, index, update):
        self._atomic("min", index, update)

    def atomic_and(self, index, update):
        self._atomic("and", index, update)

    def atomic_or(self, index, update):
        self._atomic("or", index, update)

    def atomic_xor(self, index, update):
        self._atomic("xor", index, update)
