"""Host partitions (mutable outputs), mapped partitions, read-only sharing, borrowing.

``t.partition(shape)`` moves ``t`` into a ``Partition``: the tensor split into disjoint
sub-tensors of ``shape`` (edge sub-tensors are partial). Launching an entry kernel
gives each tile block exactly one sub-tensor, so the block→sub-tensor map is injective
by construction. ``grid()`` is the ceil-division of the tensor shape by ``shape``.
``ct.borrow_mut(t).partition(shape)`` partitions in place: ``t`` is unusable until the
partition is released. ``t.shared()`` / ``ct.shared(t)`` make a read-only handle that any
number of launches and host readers may use at once (the ``Arc`` analogue).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import BorrowError, OwnershipError, PartitionError
from .ownership import Owned, caller_site
from .tensor import Tensor

MAX_MUT_RANK = 3


def _shape_arg(shape: Any, what: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise PartitionError(f"{what}: the partition shape must be a positive integer or a tuple of them, "
                             f"got {shape!r}")
    out = []
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < 1:
            raise PartitionError(f"{what}: partition sizes must be positive integers, got {shape!r}")
        out.append(int(n))
    return tuple(out)


class Partition(Owned):
    """A tensor divided into disjoint sub-tensors of ``partition_shape``, one per tile block.

    Pass it for a ``ct.Mut[...]`` parameter; the launch grid is inferred from ``grid()``.
    """

    _kind = "partition"

    def __init__(self, tensor: Tensor, shape: tuple[int, ...], prefix: bool, borrowed: bool):
        super().__init__(tensor._name)
        self._tensor = tensor
        self._pshape = shape
        self._prefix = prefix
        self._borrowed = borrowed
        self._released = False

    @classmethod
    def _take(cls, tensor: Tensor, shape: Any, prefix: bool, borrowed: bool = False) -> "Partition":
        what = f"{'partition_prefix' if prefix else 'partition'} of {tensor.label}"
        tensor._check("partitioned")
        pshape = _shape_arg(shape, what)
        ndim = tensor._data.ndim
        if len(pshape) > MAX_MUT_RANK:
            raise PartitionError(f"{what}: a mutable partition has rank at most {MAX_MUT_RANK} (the launch "
                                 f"grid is 3-D), got rank {len(pshape)} {pshape}; partition a prefix of the "
                                 "axes with partition_prefix(...) instead")
        if prefix:
            if len(pshape) > ndim:
                raise PartitionError(f"{what}: {len(pshape)} partition sizes for a tensor of rank {ndim}")
        elif len(pshape) != ndim:
            if ndim > MAX_MUT_RANK:
                raise PartitionError(f"{what}: a mutable partition has rank at most {MAX_MUT_RANK} (the launch "
                                     f"grid is 3-D) but the tensor has rank {ndim}; use partition_prefix(...)")
            raise PartitionError(f"{what}: the partition shape {pshape} has rank {len(pshape)} but the tensor "
                                 f"has rank {ndim}")
        p = cls(tensor, pshape, prefix, borrowed)
        if borrowed:
            tensor._borrow = p
        else:
            tensor._move(f"{p.label} (by .partition() at {caller_site()}); get it back with .unpartition()")
        return p

    def _brief(self) -> str:
        return f"[{self._tensor._dtype.name} {'x'.join(map(str, self._tensor._data.shape))} / " \
               f"{'x'.join(map(str, self._pshape))}]"

    def _check(self, action: str = "used") -> None:
        if self._released:
            raise OwnershipError(f"{self.label} cannot be {action}: it was released (its borrow ended)")
        super()._check(action)

    # ------------------------------------------------------------------ metadata

    @property
    def partition_shape(self) -> tuple[int, ...]:
        """The partition sizes as given (leading axes only for partition_prefix)."""
        self._check("inspected")
        return self._pshape

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """The shape of one sub-tensor (for partition_prefix: partition sizes + trailing axes)."""
        self._check("inspected")
        return self._sub_shape()

    def _sub_shape(self) -> tuple[int, ...]:
        return self._pshape + tuple(int(n) for n in self._tensor._data.shape[len(self._pshape):])

    @property
    def is_prefix(self) -> bool:
        return self._prefix

    @property
    def tensor_shape(self) -> tuple[int, ...]:
        self._check("inspected")
        return tuple(int(n) for n in self._tensor._data.shape)

    shape = tensor_shape

    @property
    def dtype(self):
        self._check("inspected")
        return self._tensor._dtype

    @property
    def device(self) -> str:
        self._check("inspected")
        return self._tensor._device

    def grid(self) -> tuple[int, ...]:
        """Sub-tensors per partitioned axis: ceil(tensor_shape[i] / partition_shape[i])."""
        self._check("inspected")
        return self._grid()

    def _grid(self) -> tuple[int, ...]:
        return tuple(-(-int(n) // s) for n, s in zip(self._tensor._data.shape, self._pshape))

    def _grid3(self) -> tuple[int, int, int]:
        g = self._grid()
        return tuple(g + (1,) * (3 - len(g)))  # type: ignore[return-value]

    @property
    def num_tiles(self) -> int:
        self._check("inspected")
        return math.prod(self._grid())

    def __repr__(self) -> str:
        state = f", moved into {self._moved}" if self._moved else ""
        return f"<safetile {self.label} grid={self._grid()}{state}>"

    def show(self, path=None):
        """A picture: which tile block owns which sub-tensor, edge sub-tensors, the launch grid.
        Without ``path`` a text picture (printed and returned); with one an image (``.png``,
        ``.svg``: needs matplotlib) or text (``.txt``). See ``safe/picture.py``."""
        from .picture import show
        self._check("shown")
        return show(self, path)

    # ------------------------------------------------------------------ host access

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the whole partitioned tensor."""
        self._check("read")
        t = self._tensor
        saved, t._moved, b, t._borrow = t._moved, None, t._borrow, None
        try:
            return t.to_numpy()
        finally:
            t._moved, t._borrow = saved, b

    # ------------------------------------------------------------------ transfers

    def unpartition(self) -> Tensor:
        """Give the tensor back (the partition is consumed; a borrow ends)."""
        self._check("unpartitioned")
        t = self._tensor
        if self._borrowed:
            self._released = True
            t._borrow = None
        else:
            self._move(f"the tensor returned by .unpartition() at {caller_site()}")
            t._give_back()
        return t

    def release(self) -> Tensor:
        """End a borrow (``ct.borrow_mut(t).partition(...)``): ``t`` is usable again."""
        if not self._borrowed:
            raise OwnershipError(f"{self.label} owns its tensor; use .unpartition() to get it back")
        return self.unpartition()

    def map(self, num_tile_blocks: int) -> "MappedPartition":
        """A mapped partition for persistent kernels: ``num_tile_blocks`` blocks walk all sub-tensors."""
        self._check("mapped")
        n = num_tile_blocks
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise PartitionError(f"map: num_tile_blocks must be an integer, got {n!r}")
        total = math.prod(self._grid())
        if not 1 <= int(n) <= total:
            raise PartitionError(f"map of {self.label}: num_tile_blocks={int(n)} is out of range; it must be "
                                 f"between 1 and the number of sub-tensors ({total})")
        m = MappedPartition(self, int(n))
        self._move(f"{m.label} (by .map() at {caller_site()}); get it back with .unmap()")
        return m


class MappedPartition(Owned):
    """A partition walked by ``num_tile_blocks`` persistent blocks (grid ``(n, 1, 1)``).

    Pass it for a ``ct.MappedMut[...]`` parameter; each block visits the sub-tensors
    ``bid, bid + n, bid + 2n, ...`` through ``iter_indices()`` — disjoint across blocks.
    """

    _kind = "mapped partition"

    def __init__(self, partition: Partition, num_tile_blocks: int):
        super().__init__(partition._name)
        self._partition = partition
        self._n = num_tile_blocks

    @property
    def _tensor(self) -> Tensor:
        return self._partition._tensor

    @property
    def num_tile_blocks(self) -> int:
        return self._n

    def _grid3(self) -> tuple[int, int, int]:
        return (self._n, 1, 1)

    def grid(self) -> tuple[int, int, int]:
        self._check("inspected")
        return self._grid3()

    @property
    def tile_shape(self) -> tuple[int, ...]:
        self._check("inspected")
        return self._partition._sub_shape()

    @property
    def dtype(self):
        return self._partition._tensor._dtype

    def to_numpy(self) -> np.ndarray:
        self._check("read")
        p = self._partition
        saved, p._moved = p._moved, None
        try:
            return p.to_numpy()
        finally:
            p._moved = saved

    def show(self, path=None):
        """Like ``Partition.show``, with each block's sequence of sub-tensors."""
        from .picture import show
        self._check("shown")
        return show(self, path)

    def unmap(self) -> Partition:
        self._check("unmapped")
        self._move(f"the partition returned by .unmap() at {caller_site()}")
        self._partition._give_back()
        return self._partition

    def unpartition(self) -> Tensor:
        return self.unmap().unpartition()


class Shared:
    """A read-only handle on a tensor (the ``Arc`` analogue): any number of readers at once.

    Launches read it for ``ct.Ref[...]`` parameters and give it back as a ``Shared``;
    host code may read it at any time. ``try_unwrap()`` gives the tensor back when no
    launch holds the handle any more.
    """

    def __init__(self, tensor: Tensor):
        self._tensor = tensor
        self._holders = 0  # launches built but not finished that read this handle
        self._unwrapped: str | None = None

    @classmethod
    def _take(cls, tensor: Tensor) -> "Shared":
        tensor._check("shared")
        s = cls(tensor)
        tensor._move(f"{s.label} (by .shared() at {caller_site()}); get it back with .try_unwrap()")
        return s

    @property
    def label(self) -> str:
        return f"shared {self._tensor.label}"

    def _check(self, action: str = "used") -> None:
        if self._unwrapped is not None:
            raise OwnershipError(f"{self.label} cannot be {action}: it was unwrapped at {self._unwrapped}")

    @property
    def shape(self):
        self._check("inspected")
        return tuple(int(n) for n in self._tensor._data.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self):
        self._check("inspected")
        return self._tensor._dtype

    @property
    def device(self) -> str:
        self._check("inspected")
        return self._tensor._device

    @property
    def strides(self):
        from .tensor import _strides
        self._check("inspected")
        return _strides(self._tensor._data)

    def to_numpy(self) -> np.ndarray:
        self._check("read")
        from .memory import REGISTRY, extent_of
        REGISTRY.wait_for_host(extent_of(self._tensor._data), False)
        t = self._tensor
        saved, t._moved = t._moved, None
        try:
            return t.to_numpy()
        finally:
            t._moved = saved

    def __array__(self, dtype=None, copy=None):
        a = self.to_numpy()
        return a.astype(dtype) if dtype is not None else a

    def clone(self) -> "Shared":
        """Another reference to the same read-only tensor (the handle itself is shared)."""
        self._check("cloned")
        return self

    def shared(self) -> "Shared":
        return self.clone()

    def try_unwrap(self) -> Tensor:
        """The tensor back, if no launch still holds this handle (else ``OwnershipError``)."""
        self._check("unwrapped")
        if self._holders:
            raise OwnershipError(f"{self.label} is still held by {self._holders} launch(es) that have not "
                                 "finished; sync them first")
        self._unwrapped = caller_site()
        self._tensor._give_back()
        return self._tensor

    def try_partition(self, shape) -> Partition:
        """``try_unwrap().partition(shape)``: only when no launch holds the handle."""
        return self.try_unwrap().partition(shape)

    def __repr__(self) -> str:
        return f"<safetile {self.label}>"


def shared(x):
    """Read-only sharing: ``ct.shared(tensor)`` → ``Shared``; on a DeviceOp, ``op.shared()``."""
    from .deviceop import DeviceOp
    if isinstance(x, DeviceOp):
        return x.shared()
    if isinstance(x, Shared):
        return x.clone()
    if isinstance(x, Tensor):
        return x.shared()
    raise TypeError(f"ct.shared expects a Tensor or a DeviceOp, got {type(x).__name__}")


class MutBorrow:
    """``ct.borrow_mut(t)``: partition ``t`` in place; ``t`` is unusable until the borrow ends.

    As a context manager, leaving the block waits for launches still using the
    partitions made from it and ends the borrow::

        with ct.borrow_mut(t) as b:
            p, x = kernel(b.partition(128), x).sync()
        t.to_numpy()   # usable again
    """

    def __init__(self, tensor: Tensor):
        tensor._check("borrowed")
        self._tensor = tensor
        self._parts: list[Partition] = []

    def partition(self, shape) -> Partition:
        p = Partition._take(self._tensor, shape, prefix=False, borrowed=True)
        self._parts.append(p)
        return p

    def partition_prefix(self, shape) -> Partition:
        p = Partition._take(self._tensor, shape, prefix=True, borrowed=True)
        self._parts.append(p)
        return p

    def __enter__(self) -> "MutBorrow":
        return self

    def __exit__(self, et, ev, tb) -> bool:
        for p in self._parts:
            if p._released:
                continue
            holder = p._holder
            if holder is not None:
                if not holder._wait_done():
                    raise BorrowError(f"leaving the borrow of {self._tensor.label}: {p.label} is still held by "
                                      f"{holder.label}, which has not run; sync it inside the block")
                p._give_back()
            if p._moved is None:
                p._released = True
                self._tensor._borrow = None
        return False


def borrow_mut(tensor: Tensor) -> MutBorrow:
    """Borrow ``tensor`` mutably to partition it in place (see ``MutBorrow``)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"ct.borrow_mut expects a Tensor, got {type(tensor).__name__}")
    return MutBorrow(tensor)
