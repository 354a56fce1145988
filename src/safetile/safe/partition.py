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

import gc
import math
import weakref
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..ir.types import MAX_TILE_ELEMENTS  # a sub-tensor is one tile
from .claims import CLAIMS, EXPORTED, FROZEN, WRITABLE
from .errors import AliasError, OwnershipError, PartitionError, TensorError
from .memory import wait_uninterrupted
from .ownership import OWNERSHIP, LazyText, Owned, Unique, caller_site, warn_at_caller
from .tensor import Tensor, numpy_protocol

if TYPE_CHECKING:  # facts.py imports this module
    from .facts import ArgFacts

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

    __slots__ = ("_tensor", "_pshape", "_prefix", "_borrowed", "_released", "_facts", "_claim", "_mapped")
    _claim: int  # its writable claim on the memory (claims.py), set with the move that makes it

    _kind = "partition"

    def __new__(cls, tensor: Tensor, shape: Any, prefix: bool = False, borrowed: bool = False) -> Partition:
        """``ct.Partition(t, shape)`` is ``t.partition(shape)`` (``prefix=True``: ``t.partition_prefix``):
        it moves ``t``. A borrowed partition is made only by ``ct.borrow_mut(t).partition(shape)``."""
        for flag, v in (("prefix", prefix), ("borrowed", borrowed)):
            if not isinstance(v, (bool, np.bool_)):
                raise PartitionError(f"ct.Partition(..., {flag}=...): a flag is True or False, got {type(v).__name__}")
        if borrowed:
            raise PartitionError("ct.Partition(..., borrowed=True): a borrowed partition is made by "
                                 "ct.borrow_mut(t).partition(shape), which ends the borrow when its block ends")
        if not isinstance(tensor, Tensor):
            raise PartitionError(f"ct.Partition partitions a Tensor, got {type(tensor).__name__}")
        return cls._take(tensor, shape, bool(prefix))

    def __init__(self, *args, **kwargs):
        """Made by ``_take`` (see ``__new__``)."""

    def _setup(self, tensor: Tensor, shape: tuple[int, ...], prefix: bool,
               borrowed: weakref.ref[MutBorrow] | None) -> None:
        Owned.__init__(self, tensor._name)
        self._tensor = tensor
        self._pshape = shape
        self._prefix = prefix
        self._borrowed = borrowed  # (weakly) the borrow it was made by (MutBorrow.partition), if any
        self._released = False
        self._facts: ArgFacts | None = None  # what launch checks read of it (facts.facts_of), made on first use
        self._mapped: MappedPartition | None = None  # the mapped partition it was moved into, if any

    @classmethod
    def _take(cls, tensor: Tensor, shape: Any, prefix: bool,
              borrowed: weakref.ref[MutBorrow] | None = None) -> Partition:
        what = f"{'partition_prefix' if prefix else 'partition'} of {tensor.label}"
        site = caller_site()
        with OWNERSHIP:  # usable, not aliasing shared memory, then moved: one step
            tensor._check("partitioned")
            pshape = cls._checked_shape(tensor, shape, prefix, what)
            p = object.__new__(cls)
            p._setup(tensor, pshape, prefix, borrowed)
            p._claim = CLAIMS.claim(p, WRITABLE, [tensor._extent()], LazyText(_label_of, weakref.ref(p)),
                                    f"{what} is refused")
            if borrowed:
                tensor._borrow = p
            else:
                tensor._move(f"{p.label} (by .partition() at {site}); get it back with .unpartition()")
        return p

    @staticmethod
    def _checked_shape(tensor: Tensor, shape: Any, prefix: bool, what: str) -> tuple[int, ...]:
        """The partition shape, checked against the tensor (touches nothing)."""
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
        sub = pshape + tuple(int(n) for n in tensor._data.shape[len(pshape):])
        if math.prod(sub) > MAX_TILE_ELEMENTS:
            raise PartitionError(f"{what}: a sub-tensor of shape {sub} has {math.prod(sub)} elements; a sub-tensor "
                                 f"is one tile, at most {MAX_TILE_ELEMENTS} (2**24) elements")
        return pshape

    def _brief(self) -> str:
        return f"[{self._tensor._dtype.name} {'x'.join(map(str, self._tensor._data.shape))} / " \
               f"{'x'.join(map(str, self._pshape))}]"

    def _check(self, action: str | LazyText) -> None:
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
        return self._tensor._host_copy()

    # ------------------------------------------------------------------ transfers

    def unpartition(self) -> Tensor:
        """Give the tensor back (the partition is consumed; a borrow ends)."""
        return self._end("unpartitioned")

    def _end(self, action: str) -> Tensor:
        site = caller_site()
        with OWNERSHIP:
            if isinstance(self._moved, GivenBack):
                return self._tensor
            self._check(action)
            t = self._tensor
            if self._borrowed:
                self._released = True
                t._borrow = None
            else:
                self._move(f"the tensor returned by .unpartition() at {site}")
                t._give_back()
            CLAIMS.release(self._claim)
        return t

    def release(self) -> Tensor:
        """End a borrow (``ct.borrow_mut(t).partition(...)``): ``t`` is usable again."""
        if not self._borrowed:
            raise OwnershipError(f"{self.label} owns its tensor; use .unpartition() to get it back")
        return self._end("released")

    def map(self, num_tile_blocks: int) -> MappedPartition:
        """A mapped partition for persistent kernels: ``num_tile_blocks`` blocks walk all sub-tensors."""
        site = caller_site()
        with OWNERSHIP:  # usable, then moved: one step
            self._check("mapped")
            n = num_tile_blocks
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
                raise PartitionError(f"map: num_tile_blocks must be an integer, got {n!r}")
            total = math.prod(self._grid())
            if not 1 <= int(n) <= total:
                raise PartitionError(f"map of {self.label}: num_tile_blocks={int(n)} is out of range; it must be "
                                     f"between 1 and the number of sub-tensors ({total})")
            m = object.__new__(MappedPartition)
            m._setup(self, int(n))
            self._move(f"{m.label} (by .map() at {site}); get it back with .unmap()")
            self._mapped = m
        return m


class MappedPartition(Owned):
    """A partition walked by ``num_tile_blocks`` persistent blocks (grid ``(n, 1, 1)``).

    Pass it for a ``ct.MappedMut[...]`` parameter; each block visits the sub-tensors
    ``bid, bid + n, bid + 2n, ...`` through ``iter_indices()`` — disjoint across blocks.
    """

    __slots__ = ("_partition", "_n", "_facts")

    _kind = "mapped partition"

    def __new__(cls, partition: Partition, num_tile_blocks: int) -> MappedPartition:
        """``ct.MappedPartition(p, n)`` is ``p.map(n)``: it moves ``p``."""
        if not isinstance(partition, Partition):
            raise PartitionError(f"ct.MappedPartition maps a Partition, got {type(partition).__name__}")
        return partition.map(num_tile_blocks)

    def __init__(self, *args, **kwargs):
        """Made by ``Partition.map`` (see ``__new__``)."""

    def _setup(self, partition: Partition, num_tile_blocks: int) -> None:
        Owned.__init__(self, partition._name)
        self._partition = partition
        self._n = num_tile_blocks
        self._facts: ArgFacts | None = None  # what launch checks read of it (facts.facts_of), made on first use

    def _check(self, action: str | LazyText) -> None:
        if self._partition._released:
            raise OwnershipError(f"{self.label} cannot be {action}: its partition was released (its borrow ended)")
        super()._check(action)

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
        return self._partition._tensor._host_copy()

    def show(self, path=None):
        """Like ``Partition.show``, with each block's sequence of sub-tensors."""
        from .picture import show
        self._check("shown")
        return show(self, path)

    def unmap(self) -> Partition:
        site = caller_site()
        with OWNERSHIP:
            if isinstance(self._moved, GivenBack):
                return self._partition
            self._check("unmapped")
            self._move(f"the partition returned by .unmap() at {site}")
            self._partition._mapped = None
            self._partition._give_back()
        return self._partition

    def unpartition(self) -> Tensor:
        return self.unmap().unpartition()


class GivenBack:
    """What a partition (mapped partition) was moved into when a failed terminal gave its tensor
    (partition) back (``deviceop._unshare``): whoever holds the tensor or the partition gets it
    back, ``unpartition()`` (``unmap()``) still returns it; it cannot be used as a partition."""

    __slots__ = ("what", "method")

    def __init__(self, what: str, method: str):
        self.what, self.method = what, method

    def __str__(self) -> str:
        return f"{self.what}, given back by a failed terminal (.{self.method}() returns it)"


class Shared(Unique):
    """A read-only handle on a tensor (the ``Arc`` analogue): any number of readers at once.

    Launches read it for ``ct.Ref[...]`` parameters and give it back as a ``Shared``;
    host code may read it at any time. ``try_unwrap()`` gives the tensor back when no
    launch (or live graph) holds the handle any more. ``ct.Shared(t)`` is ``t.shared()``
    (it moves ``t``); a copy of a handle (``clone()``, ``copy.copy``) is the handle itself.
    """

    __slots__ = ("_tensor", "_holders", "_unwrapped", "_facts", "_claim", "__weakref__")
    _claim: int  # its frozen claim on the memory (claims.py), set with the move that makes it

    def __new__(cls, tensor: Tensor) -> Shared:
        if isinstance(tensor, Shared):
            return tensor.clone()
        if not isinstance(tensor, Tensor):
            raise TensorError(f"ct.Shared shares a Tensor, got {type(tensor).__name__}")
        return cls._take(tensor)

    def __init__(self, *args, **kwargs):
        """Made by ``_take`` (see ``__new__``)."""

    def _setup(self, tensor: Tensor) -> None:
        self._tensor = tensor
        self._holders = 0  # launches built but not finished that read this handle (under OWNERSHIP)
        self._unwrapped: str | None = None
        self._facts: ArgFacts | None = None  # what launch checks read of it (facts.facts_of), made on first use

    @classmethod
    def _take(cls, tensor: Tensor) -> Shared:
        s = object.__new__(cls)
        s._setup(tensor)
        site = caller_site()
        try:
            s._freeze(tensor, site)
            return s
        except AliasError as e:
            if getattr(e, "conflict", None) != EXPORTED:
                raise
        # a DLPack export kept alive only by a reference cycle (a stored traceback; Triton's
        # interpreter keeps a launch's arguments in one) ends when the cycle is collected; collected
        # outside the except block, whose refusal's traceback may itself reach the export
        gc.collect()
        s._freeze(tensor, site)
        return s

    def _freeze(self, tensor: Tensor, site: str) -> None:
        with OWNERSHIP:  # usable, no writable alias, then moved: one step
            tensor._check("shared")
            self._claim = CLAIMS.claim(self, FROZEN, [tensor._extent()], LazyText(_label_of, weakref.ref(self)),
                                       f".shared() of {tensor.label} is refused")
            tensor._move(f"{self.label} (by .shared() at {site}); get it back with .try_unwrap()")

    def _hold(self) -> None:
        """A launch reads this handle until it finishes (``try_unwrap`` waits for none)."""
        with OWNERSHIP:
            self._check("passed to a launch")
            self._holders += 1

    def _release(self) -> None:
        with OWNERSHIP:
            self._holders -= 1

    @property
    def label(self) -> str:
        return f"shared {self._tensor.label}"

    def _check(self, action: str | LazyText) -> None:
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
        return self._tensor._host_copy()

    def __array__(self, dtype=None, copy=None):
        return numpy_protocol(self.to_numpy, dtype, copy, self.label)

    def clone(self) -> Shared:
        """Another reference to the same read-only tensor (the handle itself is shared)."""
        self._check("cloned")
        return self

    def __copy__(self) -> Shared:
        return self.clone()

    def __deepcopy__(self, memo) -> Shared:
        return self.clone()

    def shared(self) -> Shared:
        return self.clone()

    def try_unwrap(self) -> Tensor:
        """The tensor back, if no launch still holds this handle (else ``OwnershipError``)."""
        site = caller_site()
        with OWNERSHIP:
            self._check("unwrapped")
            if self._holders:
                raise OwnershipError(f"{self.label} is still held by {self._holders} launch(es) or live graph(s); "
                                     "run or cancel those launches, close those graphs (g.close()), first")
            self._unwrapped = site
            CLAIMS.release(self._claim)
            self._tensor._give_back()
        return self._tensor

    def try_partition(self, shape) -> Partition:
        """``try_unwrap().partition(shape)``: only when no launch holds the handle. All or nothing:
        a refused partition leaves this handle as it was."""
        Partition._checked_shape(self._tensor, shape, False, f"try_partition of {self.label}")
        with OWNERSHIP:
            tensor = self.try_unwrap()
            try:
                return tensor.partition(shape)
            except BaseException:
                # the partition was refused (its memory is claimed elsewhere): share the tensor again
                self._claim = CLAIMS.claim(self, FROZEN, [tensor._extent()], LazyText(_label_of, weakref.ref(self)),
                                           f"restoring {self.label} is refused")
                tensor._move(f"{self.label} (restored after a refused try_partition); get it back with "
                             ".try_unwrap()")
                self._unwrapped = None
                raise

    def __repr__(self) -> str:
        return f"<safetile {self.label}>"


def _label_of(ref) -> str:
    x = ref()
    return x.label if x is not None else "a value that no longer exists"


def shared(x):
    """Read-only sharing: ``ct.shared(tensor)`` → ``Shared``; on a DeviceOp, ``op.shared()``."""
    from .deviceop import DeviceOp
    if isinstance(x, DeviceOp):
        return x.shared()
    if isinstance(x, Shared):
        return x.clone()
    if isinstance(x, Tensor):
        return x.shared()
    raise TensorError(f"ct.shared expects a Tensor or a DeviceOp, got {type(x).__name__}")


class MutBorrow(Unique):
    """``ct.borrow_mut(t)``: partition ``t`` in place; ``t`` is unusable until the borrow ends.

    As a context manager, leaving the block (normally or by an exception) waits for launches
    still running on the partitions made from it, cancels those that never ran, and ends the
    borrow::

        with ct.borrow_mut(t) as b:
            p, x = kernel(b.partition(128), x).sync()
        t.to_numpy()   # usable again
    """

    def __init__(self, tensor: Tensor):
        if not isinstance(tensor, Tensor):
            raise TensorError(f"ct.borrow_mut expects a Tensor, got {type(tensor).__name__}")
        tensor._check("borrowed")
        self._tensor = tensor
        self._parts: list[Partition] = []
        # graphs captured with a partition of it (Graph._setup adds them, under OWNERSHIP): the exit
        # ends what they hold, since none can replay once its partitions are released
        self._graphs: weakref.WeakSet = weakref.WeakSet()

    @property
    def label(self) -> str:
        return f"the borrow of {self._tensor.label}"

    def partition(self, shape) -> Partition:
        p = Partition._take(self._tensor, shape, prefix=False, borrowed=weakref.ref(self))
        self._parts.append(p)
        return p

    def partition_prefix(self, shape) -> Partition:
        p = Partition._take(self._tensor, shape, prefix=True, borrowed=weakref.ref(self))
        self._parts.append(p)
        return p

    def __enter__(self) -> MutBorrow:
        return self

    def __exit__(self, et, ev, tb) -> Literal[False]:  # never swallows an exception
        """End the borrow, always (an exception leaving the block too): a launch built in the
        block that has not run is cancelled (it never will: ``LaunchDroppedWarning`` when the
        block ended normally); one running elsewhere is waited for, to its end even when a
        KeyboardInterrupt arrives meanwhile (raised once the borrow has ended)."""
        from .errors import LaunchDroppedWarning
        cancelled = []
        interrupt = None  # a KeyboardInterrupt while waiting: raised once the borrow has ended
        # No launch may take a partition once the exit has looked at it (another thread may be launching it
        # right now): one that is free or in an unrun launch is released at once; one lent to a running
        # terminal (a chain using it), or in a running launch (which gives it back to its terminal), is
        # released when that launch and then that terminal have ended: a chain keeps it to its end. Then
        # the launch that took it last, if any, is cancelled when unrun, else waited for.
        with OWNERSHIP:
            ending = [p for p in self._parts if not p._released]
            for p in ending:
                top = p._mapped if p._mapped is not None else p
                if top._lent is None and not _running(top.holder):
                    p._released = True  # and a mapped partition of it with it (MappedPartition._check)
        for p in ending:
            top = p._mapped if p._mapped is not None else p
            holder = top.holder
            if not p._released and _running(holder):
                interrupt = wait_uninterrupted(holder._wait_finished) or interrupt
            ctx = top._lent
            if ctx is not None:
                interrupt = wait_uninterrupted(ctx.wait_ended) or interrupt
            with OWNERSHIP:
                p._released = True
            holder = top.holder
            if holder is not None:
                if holder.cancel_unrun():
                    cancelled.append(holder.label)
                else:
                    interrupt = wait_uninterrupted(holder._wait_finished) or interrupt
            ctx = top._lent  # given back to the terminal that ran that launch
            if ctx is not None:
                interrupt = wait_uninterrupted(ctx.wait_ended) or interrupt
            with OWNERSHIP:
                CLAIMS.release(p._claim)
        with OWNERSHIP:
            graphs = list(self._graphs)
        for g in graphs:
            g._borrow_ended()
        self._tensor._borrow = None
        if cancelled and et is None:
            warn_at_caller(f"leaving the borrow of {self._tensor.label}: {', '.join(cancelled)} had not run; it was "
                           "cancelled and will never run (run launches inside the block)", LaunchDroppedWarning)
        if interrupt is not None:
            raise interrupt
        return False


def base_partition(v: Any) -> Partition | None:
    """The partition ``v`` is, or that a mapped partition ``v`` was made from (None otherwise):
    where a borrow and its release are recorded."""
    if isinstance(v, MappedPartition):
        return v._partition
    return v if isinstance(v, Partition) else None


def _running(holder: Any) -> bool:
    """Whether ``holder`` (a launch or memcpy holding a partition, a graph replaying it) is running."""
    return getattr(holder, "_state", None) == "running"


def borrow_mut(tensor: Tensor) -> MutBorrow:
    """Borrow ``tensor`` mutably to partition it in place (see ``MutBorrow``)."""
    return MutBorrow(tensor)
