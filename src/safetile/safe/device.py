"""Device-side values of ``@ct.entry`` kernels: sub-tensors, read-only tensors, partitions.

Inside an entry kernel a ``ct.Mut`` parameter is this block's sub-tensor (``MutTensor``):
``z.load()`` reads it (zero padding past the tensor's edge) and ``z.store(tile)`` writes
a tile of exactly its shape (edge parts are dropped); ``z.partition(shape)`` tiles it for
stores at run-time indices that stay inside it. It is lowered onto the ordinary
tile-space ``load``/``store`` ops at the block's own grid index, so no other block can
reach it. A ``ct.Ref`` parameter (``RefTensor``) is a read-only array: ``ct.load``,
``ct.gather``, ``x.partition(shape).load(index)`` and ``ct.load_tile_like(x, z)`` read it,
and every store to it is a compile-time error. A ``ct.MappedMut`` parameter
(``MappedMutTensor``) stores only at indices produced by its own ``iter_indices()``.
"""
from __future__ import annotations

import math

from .. import dtypes as dt
from ..errors import TileSafetyError, TileTypeError
from ..ops import memory as mem
from ..ops.grid import bid, num_blocks
from ..ops.memory import PaddingMode
from ..ops.values import Array, Tile, describe, is_const
from .tile_api import tile_api, tile_api_class


def _load(array, index, shape) -> Tile:
    """Every load of the device surface: a partial edge tile reads 0 past the tensor's edge. (Both
    backends pad ``UNDETERMINED`` with 0 as well, so no test tells the two apart: not mutated.)"""
    return mem.load(array, index, shape, padding_mode=PaddingMode.ZERO)  # pragma: no mutate


def _check_store_tile(name: str, tile, shape, dtype, what: str) -> Tile:
    if not isinstance(tile, Tile):
        raise TileTypeError(f"{what}: expected a tile of shape {shape} to store to {name!r}, got {describe(tile)}")
    if tile.shape != tuple(shape):
        raise TileSafetyError(f"{what}: {name!r} is a sub-tensor of shape {tuple(shape)}; a store writes it "
                              f"whole, so the tile must have that shape, got {tile.shape}")
    if tile.dtype is not dtype:
        raise TileTypeError(f"{what}: tile dtype {tile.dtype.name} does not match {name!r} ({dtype.name}); "
                            f"convert it with .astype(ct.{dtype.name})")
    return tile


class _OwnedTensor:
    """A mutable parameter: the partitioned array, the sub-tensor shape and the grid rank."""

    def __init__(self, name: str, array: Array, shape: tuple[int, ...], grid_rank: int):
        self._name = name
        self._array = array
        self._shape = tuple(shape)
        self._grid_rank = grid_rank

    @property
    def shape(self) -> tuple[int, ...]:
        """The sub-tensor's static shape (the partition shape)."""
        return self._shape

    @property
    def dtype(self) -> dt.DType:
        return self._array.dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)


@tile_api_class
class MutTensor(_OwnedTensor):
    """``ct.Mut[...]`` inside the kernel: this block's exclusive sub-tensor."""

    __tile_surface__ = frozenset({"shape", "dtype", "ndim", "load", "store", "partition"})

    def _index(self) -> tuple:
        return tuple(bid(a) for a in range(self._grid_rank)) + (0,) * (len(self._shape) - self._grid_rank)

    def load(self) -> Tile:
        """This block's sub-tensor as a tile (elements past the tensor's edge read 0)."""
        return _load(self._array, self._index(), self._shape)

    def store(self, tile, *index) -> None:
        """Write ``tile`` (exactly the sub-tensor's shape) to this block's sub-tensor."""
        if index:
            raise TileSafetyError(f"store to {self._name!r} takes no index: a ct.Mut parameter is one "
                                  f"sub-tensor and is always written whole ({self._name}.store(tile))")
        tile = _check_store_tile(self._name, tile, self._shape, self.dtype, f"{self._name}.store")
        mem.store(self._array, self._index(), tile)

    def partition(self, shape) -> OwnedPartition:
        """This block's sub-tensor seen as a grid of ``shape`` tiles (an in-block partition).

        ``p.store(tile, index)`` writes the tile at any (run-time) tile index *inside this
        block's sub-tensor*: parts outside it are dropped, so the store can never reach
        another block's sub-tensor (a KV-cache row at a run-time position, say). ``p.load``
        reads back (zero outside the sub-tensor).
        """
        return OwnedPartition(self, shape)

    def __repr__(self) -> str:
        return f"MutTensor({self._name}: {self.dtype.name}{list(self._shape)})"


@tile_api_class
class OwnedPartition:
    """``z.partition(shape)`` inside the kernel: this block's own sub-tensor seen as ``shape`` tiles.

    ``store(tile, index)`` writes the tile at a tile index that may be known only at run time
    (a KV-cache row at the current position, say). It is a masked scatter: on each partitioned
    axis the element index is ``bid(axis) · P + r`` with the lane kept only where
    ``0 <= r < P`` (P the sub-tensor's size), so no lane can leave the block's sub-tensor;
    trailing axes of a prefix partition are whole and bounded by the tensor. The compiled-IR
    check (``verify.py``) accepts a scatter to a ``ct.Mut`` parameter only in this form.
    """

    def __init__(self, owner: MutTensor, shape):
        from ..ops.values import static_shape
        self._owner = owner
        self._shape = static_shape(shape, "partition shape")
        if len(self._shape) != owner.ndim:
            raise TileTypeError(f"{owner._name}.partition: shape {self._shape} has rank {len(self._shape)} but "
                                f"{owner._name!r} has rank {owner.ndim}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self):
        return self._owner.dtype

    def store(self, tile, index) -> None:
        """Write ``tile`` (exactly the partition shape) at tile ``index``; lanes outside this block's
        sub-tensor are dropped."""
        from ..ops.factories import arange
        from ..ops.memory import scatter
        from ..ops.shape import reshape
        o = self._owner
        name = o._name
        tile = _check_store_tile(f"{name}.partition({self._shape})", tile, self._shape, self.dtype,
                                 f"{name}.partition(...).store")
        index = tuple(index) if isinstance(index, tuple) else (index,)
        if len(index) != len(self._shape):
            raise TileTypeError(f"{name}.partition(...).store: index {describe(index)} needs {len(self._shape)} "
                                "coordinates")
        n = len(self._shape)
        indices, mask = [], None
        for axis, (i, s) in enumerate(zip(index, self._shape)):
            p = o._shape[axis]  # the sub-tensor's size on this axis (whole trailing axes included)
            tiles = -(-p // s)  # pragma: no mutate (i < p / s and i < ceil(p / s) agree for every integer i)
            # the tile index is range-checked before it is multiplied, so ``i * s`` cannot wrap round
            # (an int32 index of 2**28 times 16 would be 0) into the sub-tensor
            if isinstance(i, Tile):
                valid = (i >= 0) & (i < tiles)
                mask = valid if mask is None else mask & valid
            elif not 0 <= int(i) < tiles:
                return  # a constant index past the sub-tensor: nothing is written
            lane = reshape(arange(s, dtype=dt.int32), tuple(s if a == axis else 1 for a in range(n)))
            r = lane + i * s  # the element index inside the sub-tensor along this axis
            if axis < o._grid_rank:
                inside = (r >= 0) & (r < p)
                mask = inside if mask is None else mask & inside
                indices.append(bid(axis) * p + r)
            else:
                indices.append(r)
        scatter(o._array, tuple(indices), tile, mask=mask)


class PartitionIndex(tuple):
    """An index into a mapped partition, produced only by its ``iter_indices()`` loop.

    It unpacks like a tuple of grid coordinates (``i, j = idx``) to load inputs; only the
    original object (not a rebuilt tuple) is accepted by ``store(tile, idx)``.
    """

    _owner: MappedMutTensor  # the mapped parameter whose iter_indices() produced it

    def __new__(cls, coords: tuple, owner: MappedMutTensor):
        obj = super().__new__(cls, coords)
        obj._owner = owner
        return obj

    @property
    def coords(self) -> tuple:
        return tuple(self)


class _IndexRange:
    """What ``for idx in z.iter_indices():`` iterates: the block's share of the sub-tensors."""

    __tile_surface__: frozenset[str] = frozenset()

    def __init__(self, owner: MappedMutTensor):
        self.owner = owner

    def __tile_range__(self):
        o = self.owner
        counts = o._counts()
        total = counts[0]
        for c in counts[1:]:
            total = total * c

        def bind(iv):
            coords = []
            rest = iv
            for c in reversed(counts[1:]):
                coords.append(rest % c)
                rest = rest // c
            coords.append(rest)
            return PartitionIndex(tuple(reversed(coords)), o)
        return bid(0), total, num_blocks(0), bind


@tile_api_class
class MappedMutTensor(_OwnedTensor):
    """``ct.MappedMut[...]`` inside the kernel: a bounded, disjoint walk over sub-tensors."""

    __tile_surface__ = frozenset({"shape", "dtype", "ndim", "num_tiles", "iter_indices", "load", "store"})

    def _counts(self) -> list:
        return [mem.num_tiles(self._array, a, self._full_tile_shape()) for a in range(self._grid_rank)]

    def _full_tile_shape(self):
        return self._shape

    def num_tiles(self, axis=None):
        """Sub-tensors along ``axis`` (or in total)."""
        counts = self._counts()
        if axis is None:
            return math.prod(counts) if all(is_const(c) for c in counts) else _prod(counts)
        return counts[axis]

    def iter_indices(self) -> _IndexRange:
        """``for idx in z.iter_indices():`` visits sub-tensors bid, bid + n, ... (n = blocks)."""
        return _IndexRange(self)

    def _check_index(self, idx, what: str) -> tuple:
        if not isinstance(idx, PartitionIndex):
            raise TileSafetyError(f"{what}: the index must come from {self._name}.iter_indices(); got "
                                  f"{describe(idx)} (indices cannot be built by hand, so no two blocks can "
                                  "write the same sub-tensor)")
        if idx._owner is not self:
            raise TileSafetyError(f"{what}: this index was produced by {idx._owner._name}.iter_indices(), not "
                                  f"{self._name}.iter_indices()")
        return tuple(idx) + (0,) * (len(self._shape) - self._grid_rank)

    def load(self, idx) -> Tile:
        index = self._check_index(idx, f"{self._name}.load")
        return _load(self._array, index, self._shape)

    def store(self, tile, idx=None) -> None:
        """Write ``tile`` to the sub-tensor at ``idx`` (an index from ``iter_indices()``)."""
        if idx is None:
            raise TileSafetyError(f"{self._name}.store(tile, idx) needs an index from {self._name}.iter_indices()")
        index = self._check_index(idx, f"{self._name}.store")
        tile = _check_store_tile(self._name, tile, self._shape, self.dtype, f"{self._name}.store")
        mem.store(self._array, index, tile)

    def __repr__(self) -> str:
        return f"MappedMutTensor({self._name}: {self.dtype.name}{list(self._shape)})"


def _prod(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out * x
    return out


@tile_api_class
class RefTensor(Array):
    """``ct.Ref[...]`` inside the kernel: a read-only array (any load, never a store)."""

    __slots__ = ("_static",)
    __tile_surface__ = frozenset({"shape", "dtype", "ndim", "strides", "name", "load", "partition", "store",
                                  "tiled_view", "slice"})

    def __init__(self, value, name: str, static_shape: tuple):
        super().__init__(value, name)
        self._static = tuple(static_shape)

    @property
    def shape(self) -> tuple:
        """Static sizes where the annotation fixes them, run-time sizes elsewhere."""
        return tuple(s if s is not None else mem.array_dim(self, a) for a, s in enumerate(self._static))

    def partition(self, shape) -> RefPartition:
        """A read-only device-side partition into ``shape`` tiles (zero-padded at edges)."""
        return RefPartition(self, shape)

    def load(self, index=None, shape=None) -> Tile:
        """The whole tensor as one tile (static power-of-two shape), or ``load(index, shape)``."""
        if index is None:
            if any(s is None for s in self._static):
                raise TileTypeError(f"{self.name}.load() needs a static shape; use "
                                    f"{self.name}.partition(shape).load(index)")
            return _load(self, (0,) * self.ndim, self._static)
        return _load(self, index, shape)

    def store(self, *a, **k):
        raise TileSafetyError(f"cannot store to {self.name!r}: it is a read-only parameter (ct.Ref); "
                              "declare it ct.Mut[...] and pass a partition to write it")

    def __repr__(self) -> str:
        return f"RefTensor({self.name}: {self.dtype.name}{list(self._static)})"


@tile_api_class
class RefPartition:
    """A read-only tensor seen as a grid of ``shape`` tiles inside the kernel."""

    __tile_surface__ = frozenset({"shape", "dtype", "load", "num_tiles", "store"})

    def __init__(self, ref: RefTensor, shape):
        from ..ops.values import static_shape
        if not isinstance(ref, RefTensor):
            raise TileTypeError(f"partition: expected a read-only tensor parameter, got {describe(ref)}")
        self._ref = ref
        self._shape = static_shape(shape, "partition shape")
        if len(self._shape) != ref.ndim:
            raise TileTypeError(f"{ref.name}.partition: shape {self._shape} has rank {len(self._shape)} but "
                                f"{ref.name!r} has rank {ref.ndim}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self):
        return self._ref.dtype

    def load(self, index) -> Tile:
        """The tile at grid ``index`` (a tuple of integers or scalar tiles)."""
        return _load(self._ref, index, self._shape)

    def num_tiles(self, axis):
        """How many tiles along ``axis`` (a run-time int32 unless the size is static)."""
        size = self._ref._static[axis]
        if size is not None:
            return -(-size // self._shape[axis])
        return mem.num_tiles(self._ref, axis, self._shape)

    def store(self, *a, **k):
        raise TileSafetyError(f"cannot store through a partition of {self._ref.name!r}: it is a read-only "
                              "parameter (ct.Ref)")


@tile_api
def load_tile_like(src, like) -> Tile:
    """Load the tile of ``src`` at ``like``'s position and shape (``like`` a ct.Mut sub-tensor)."""
    if not isinstance(like, MutTensor):
        raise TileTypeError(f"load_tile_like: the second argument must be a ct.Mut parameter (this block's "
                            f"sub-tensor), got {describe(like)}")
    if isinstance(src, MutTensor):
        if src is like:
            return like.load()
        raise TileSafetyError("load_tile_like: the source must be a read-only (ct.Ref) parameter")
    if not isinstance(src, Array):
        raise TileTypeError(f"load_tile_like: the source must be a tensor parameter, got {describe(src)}")
    if src.ndim != like.ndim:
        raise TileTypeError(f"load_tile_like: {src.name!r} has rank {src.ndim} but {like._name!r} has rank "
                            f"{like.ndim}")
    return _load(src, like._index(), like.shape)


load_tile_like_1d = load_tile_like_2d = load_tile_like_3d = load_tile_like


@tile_api
def num_tiles(x, axis, shape=None, order="C"):
    """Tiles along ``axis``: of a device partition (``num_tiles(p, axis)``) or ``num_tiles(array, axis, shape)``."""
    if isinstance(x, (RefPartition, MappedMutTensor)) and shape is None:
        return x.num_tiles(axis)
    return mem.num_tiles(x, axis, shape, order)
