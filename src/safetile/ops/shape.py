"""Shape ops: reshape, permute/transpose, broadcasting, concatenation and slicing."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .values import Tile, as_tile, describe, is_const, normalize_axis, static_int, static_shape

FAMILY = "shape"


def _reshape_rule(types, attrs):
    src, shape = types[0], attrs["shape"]
    if dt.numel(src.shape) != dt.numel(shape):
        raise TileTypeError(f"cannot reshape {src} to {shape}: element counts differ")
    return [TileType(src.dtype, shape)]


def _permute_rule(types, attrs):
    src, axes = types[0], attrs["axes"]
    if sorted(axes) != list(range(src.ndim)):
        raise TileTypeError(f"axes {axes} are not a permutation of {tuple(range(src.ndim))}")
    return [TileType(src.dtype, tuple(src.shape[a] for a in axes))]


def _broadcast_rule(types, attrs):
    src, shape = types[0], attrs["shape"]
    if src.ndim != len(shape) or any(s not in (1, n) for s, n in zip(src.shape, shape)):
        raise TileTypeError(f"cannot broadcast {src} to shape {shape}")
    return [TileType(src.dtype, shape)]


def _cat_rule(types, attrs):
    a, b = types
    axis = attrs["axis"]
    if a.dtype is not b.dtype or a.ndim != b.ndim or any(
            x != y for i, (x, y) in enumerate(zip(a.shape, b.shape)) if i != axis):
        raise TileTypeError(f"cat: tiles {a} and {b} differ outside axis {axis}")
    shape = list(a.shape)
    shape[axis] += b.shape[axis]
    if not dt.is_pow2(shape[axis]):
        raise TileTypeError(f"cat: result dimension {shape[axis]} along axis {axis} is not a power of two")
    return [TileType(a.dtype, tuple(shape))]


def _extract_rule(types, attrs):
    src = types[0]
    shape = attrs["shape"]
    if len(shape) != src.ndim or any(s > n or n % s for s, n in zip(shape, src.shape)):
        raise TileTypeError(f"extract: shape {shape} must evenly divide the tile shape {src.shape}")
    for t in types[1:]:
        if t.shape != () or not t.dtype.is_int:
            raise TileTypeError(f"extract: index entries must be integer scalars, got {t}")
    return [TileType(src.dtype, shape)]


def _insert_rule(types, attrs):
    src, val = types[0], types[-1]
    if val.dtype is not src.dtype or val.ndim != src.ndim or any(
            s > n or n % s for s, n in zip(val.shape, src.shape)):
        raise TileTypeError(f"insert: value {val} must evenly divide the tile {src}")
    return [src]


def _storage_bits(d: dt.DType) -> int:
    """Bits of one element in packed bytes (a bool takes a byte, as in cuTile Python)."""
    return 8 if d.is_bool else d.bits


def _pack_rule(types, attrs):
    (x,) = types
    bits = dt.numel(x.shape) * _storage_bits(x.dtype)
    if bits % 8:
        raise TileTypeError(f"pack_to_bytes: the tile's {bits} bits are not a whole number of bytes")
    return [TileType(dt.uint8, (bits // 8,))]


def _unpack_rule(types, attrs):
    (x,) = types
    d = attrs["dtype"]
    if x.dtype is not dt.uint8 or x.ndim != 1:
        raise TileTypeError(f"unpack_from_bytes needs a 1-d uint8 tile, got {x}")
    bits = x.shape[0] * 8
    if bits % _storage_bits(d):
        raise TileTypeError(f"unpack_from_bytes: {x.shape[0]} bytes do not hold a whole number of {d.name} elements")
    return [TileType(d, (bits // _storage_bits(d),))]


declare("pack_to_bytes", FAMILY, "the tile's elements flattened in C order as their little-endian bytes "
        "(uint8; 4-bit elements two per byte, the first in the low nibble; a bool is one byte)", _pack_rule)
declare("unpack_from_bytes", FAMILY, "the inverse of pack_to_bytes: a 1-d uint8 tile read as elements of "
        "attr dtype", _unpack_rule)
declare("reshape", FAMILY, "same elements in C order, new static shape", _reshape_rule)
declare("permute", FAMILY, "reorder axes: result axis i is source axis axes[i]", _permute_rule)
declare("broadcast_to", FAMILY, "stretch size-1 dimensions to `shape` (equal ranks)", _broadcast_rule)
def _take_rule(types, attrs):
    src, index = types
    axis = attrs["axis"]
    if not index.dtype.is_int or index.ndim != src.ndim or any(
            a != b for i, (a, b) in enumerate(zip(src.shape, index.shape)) if i != axis):
        raise TileTypeError(f"take: the index {index} must be an integer tile shaped like {src} "
                            f"outside axis {axis}")
    return [TileType(src.dtype, index.shape)]


declare("cat", FAMILY, "concatenate two tiles along `axis`", _cat_rule)
declare("take", FAMILY, "elements of a tile at run-time positions along `axis`: result[.., i, ..] = "
        "src[.., index[.., i, ..], ..]; positions outside the axis give 0", _take_rule)
declare("extract", FAMILY, "the sub-tile of `shape` at block index (index...) of the tile (the tile seen "
        "as a grid of `shape` blocks; an out-of-range run-time index fails the launch)", _extract_rule)
declare("insert", FAMILY, "replace the sub-tile at block index (index...) with a value (an out-of-range "
        "run-time index fails the launch)", _insert_rule)


def _tile(x, fn) -> Tile:
    if isinstance(x, Tile):
        return x
    if is_const(x):
        return as_tile(x)
    raise TileTypeError(f"{fn}: expected a tile, got {describe(x)}")


def reshape(x, /, shape) -> Tile:
    """The same elements in C order with a new shape (every dimension a power of two); one
    dimension may be -1 (inferred from the element count)."""
    x = _tile(x, "reshape")
    if isinstance(shape, list):
        shape = tuple(shape)
    if isinstance(shape, tuple) and any(isinstance(n, int) and not isinstance(n, bool) and n < 0 for n in shape):
        dims = [static_int(n, "shape dimension") for n in shape]
        if sum(n == -1 for n in dims) > 1:
            raise TileTypeError(f"Only one dimension can be -1, got {tuple(dims)}")
        if any(n < -1 for n in dims):
            raise TileTypeError(f"Dimension can only be -1 or non-negative, got {min(dims)}")
        known = dt.numel(tuple(n for n in dims if n != -1))
        if known == 0 or dt.numel(x.shape) % known:
            raise TileTypeError(f"Cannot reshape {x.shape} to {tuple(dims)}")
        shape = tuple(dt.numel(x.shape) // known if n == -1 else n for n in dims)
    shp = () if shape == () else static_shape(shape)
    if dt.numel(shp) != dt.numel(x.shape):
        raise TileTypeError(f"Cannot reshape {x.shape} to {shp}")
    if shp == x.shape:
        return x
    return Tile(emit("reshape", [x.value], {"shape": shp}).result)


def permute(x, axes) -> Tile:
    """Reorder axes: result axis i is source axis ``axes[i]``."""
    x = _tile(x, "permute")
    if not isinstance(axes, (tuple, list)):
        raise TileTypeError(f"permute: axes must be a tuple, got {describe(axes)}")
    ax = tuple(normalize_axis(a, x.ndim) for a in axes)
    if len(ax) != x.ndim:
        raise TileTypeError(f"permute: need {x.ndim} axes for a tile of rank {x.ndim}, got {len(ax)}")
    if ax == tuple(range(x.ndim)):
        return x
    return Tile(emit("permute", [x.value], {"axes": ax}).result)


def transpose(x, axis0=None, axis1=None) -> Tile:
    """Swap two axes (both default to the two axes of a rank-2 tile)."""
    x = _tile(x, "transpose")
    if axis0 is None and axis1 is None:
        if x.ndim != 2:
            raise TileTypeError(f"transpose of a rank-{x.ndim} tile needs axis0 and axis1")
        a, b = 0, 1
    elif axis0 is None or axis1 is None:
        raise TileTypeError("transpose needs both axis0 and axis1, or neither")
    else:
        a, b = normalize_axis(axis0, x.ndim), normalize_axis(axis1, x.ndim)
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute(x, tuple(axes))


def broadcast_to(x, shape) -> Tile:
    """Broadcast to ``shape`` with NumPy rules."""
    x = _tile(x, "broadcast_to")
    shp = static_shape(shape)
    if len(shp) < x.ndim:
        raise TileTypeError(f"cannot broadcast {x.type} to the lower-rank shape {shp}")
    x = reshape(x, (1,) * (len(shp) - x.ndim) + x.shape) if x.ndim < len(shp) else x
    if x.shape == shp:
        return x
    return Tile(emit("broadcast_to", [x.value], {"shape": shp}).result)


def expand_dims(x, axis) -> Tile:
    """Insert a size-1 axis at ``axis``."""
    x = _tile(x, "expand_dims")
    a = static_int(axis, "axis")
    if not -x.ndim - 1 <= a <= x.ndim:
        raise TileTypeError(f"expand_dims: axis {a} out of range for rank {x.ndim}")
    a %= x.ndim + 1
    return reshape(x, x.shape[:a] + (1,) + x.shape[a:])


def index_tile(x: Tile, key) -> Tile:
    """``t[None, :]``-style indexing: ``None`` inserts an axis, ``:`` keeps one, ``...`` fills."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise TileTypeError("an index can contain at most one ...")
    n_keep = sum(1 for k in key if isinstance(k, slice))
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - n_keep) + key[i + 1:]
        n_keep = x.ndim
    if n_keep > x.ndim:
        raise TileTypeError(f"too many indices for a tile of rank {x.ndim}")
    key = key + (slice(None),) * (x.ndim - n_keep)
    shape, src = [], iter(x.shape)
    for k in key:
        if k is None:
            shape.append(1)
        elif isinstance(k, slice) and k == slice(None):
            shape.append(next(src))
        else:
            raise TileTypeError("tiles support only None, : and ... in subscripts; use ct.extract "
                                "for sub-tiles or ct.gather for elements")
    return reshape(x, tuple(shape))


def cat(tiles, axis) -> Tile:
    """Concatenate two tiles along ``axis`` (the result dimension must be a power of two)."""
    if not isinstance(tiles, (tuple, list)) or len(tiles) != 2:
        raise TileTypeError("cat expects a tuple of two tiles")
    a, b = (_tile(t, "cat") for t in tiles)
    ax = normalize_axis(axis, a.ndim)
    return Tile(emit("cat", [a.value, b.value], {"axis": ax}).result)


def take(tile, index, axis: int = 0) -> Tile:
    """``tile``'s elements at the positions ``index`` along ``axis`` (an in-register gather,
    like ``numpy.take_along_axis``); positions outside the axis read 0. ``index`` has the
    tile's rank and its sizes on the other axes."""
    x, idx = _tile(tile, "take"), _tile(index, "take")
    ax = normalize_axis(axis, x.ndim)
    return Tile(emit("take", [x.value, idx.value], {"axis": ax}).result)


def _block_index(index, ndim, fn, counts):
    """Block-index entries as int32 scalars; constants are checked against ``counts``."""
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != ndim:
        raise TileTypeError(f"{fn}: index needs {ndim} entries, got {len(index)}")
    out = []
    for axis, (i, n) in enumerate(zip(index, counts)):
        if is_const(i):
            k = static_int(i, f"{fn} index")
            if not 0 <= k < n:
                raise TileTypeError(f"{fn}: block index {k} along axis {axis} is out of range: the tile "
                                     f"holds {n} block(s) there")
            out.append(as_tile(k, dt.int32))
        elif isinstance(i, Tile) and i.shape == () and i.dtype.is_int:
            out.append(i)
        else:
            raise TileTypeError(f"{fn}: index entries must be integer scalars, got {describe(i)}")
    return out


def _counts(full, sub, fn):
    if len(sub) != len(full) or any(s > n or n % s for s, n in zip(sub, full)):
        raise TileTypeError(f"{fn}: shape {sub} must evenly divide the tile shape {full}")
    return tuple(n // s for n, s in zip(full, sub))


def extract(x, index, shape) -> Tile:
    """The sub-tile of ``shape`` at block index ``index`` (x viewed as a grid of ``shape`` blocks)."""
    x = _tile(x, "extract")
    shp = static_shape(shape)
    idx = _block_index(index, x.ndim, "extract", _counts(x.shape, shp, "extract"))
    return Tile(emit("extract", [x.value] + [i.value for i in idx], {"shape": shp}).result)


def insert(x, index, value) -> Tile:
    """A copy of ``x`` with the sub-tile at block index ``index`` replaced by ``value``."""
    x = _tile(x, "insert")
    value = as_tile(value, x.dtype) if is_const(value) else _tile(value, "insert")
    if value.dtype is not x.dtype:
        raise TileTypeError(f"Cannot insert a tile of dtype {value.dtype.name} into a tile of dtype {x.dtype.name}")
    idx = _block_index(index, x.ndim, "insert", _counts(x.shape, value.shape, "insert"))
    from .elementwise import cast
    value = cast(value, x.dtype)
    return Tile(emit("insert", [x.value] + [i.value for i in idx] + [value.value]).result)


def item(x) -> Tile:
    """The single element of a one-element tile, as a scalar (0-d) tile."""
    x = _tile(x, "item")
    if dt.numel(x.shape) != 1:
        raise TileTypeError(f"item() needs a tile with one element, got {x.type}")
    return reshape(x, ())


def pack_to_bytes(x, /) -> Tile:
    """Flatten ``x`` and reinterpret its raw bytes as a 1-d uint8 tile (little-endian; 4-bit
    elements two per byte, the first in the low nibble; a bool is one byte)."""
    x = _tile(x, "pack_to_bytes")
    if x.dtype.is_bool:
        raise TileTypeError(f"pack_to_bytes from a {x.dtype.name} tile is not supported")
    bits = dt.numel(x.shape) * _storage_bits(x.dtype)
    if bits % 8:
        raise TileTypeError(f"pack_to_bytes: the total number of bits ({bits}) must be divisible by 8")
    return Tile(emit("pack_to_bytes", [x.value]).result)


def unpack_from_bytes(x, /, dtype) -> Tile:
    """Reinterpret a 1-d uint8 tile as a 1-d tile of ``dtype`` (the inverse of ``pack_to_bytes``)."""
    from .values import static_dtype
    x = _tile(x, "unpack_from_bytes")
    d = static_dtype(dtype)
    if x.ndim != 1:
        raise TileTypeError(f"unpack_from_bytes requires a 1D tile, got {x.ndim}D tile with shape {x.shape}")
    if x.dtype is not dt.uint8:
        raise TileTypeError(f"unpack_from_bytes requires uint8 tile, got {x.dtype.name} tile")
    if d.is_bool:
        raise TileTypeError(f"unpack_from_bytes to a {d.name} tile is not supported")
    if (x.shape[0] * 8) % _storage_bits(d):
        raise TileTypeError(f"unpack_from_bytes: the total number of bits ({x.shape[0] * 8}) must be divisible by "
                            f"the bit width of {d.name} ({_storage_bits(d)})")
    return Tile(emit("unpack_from_bytes", [x.value], {"dtype": d}).result)
