"""What the launch checks read of each argument: its facts, and the key they make.

The checks of a launch (``checks.py``) are a pure function of these facts, so their result
is cached keyed on exactly them (``launch.prepare``) and nothing a check reads can change
without changing the key:

* a tensor-like argument's ``ArgFacts``: its kind (partition, mapped partition, shared
  handle, tensor, raw NumPy array, raw torch tensor), element type, shape, memory extent
  (device, data pointer, strides, item size), whether it may be written (read-only NumPy
  memory may not), partition shape and mapped block count (a ``partition_prefix`` needs no flag of
  its own: its partition shape is shorter than the shape, or, at full length, it is a partition). A safetile ``Tensor``
  owns a private view of its memory (``tensor.py``),
  so its layout cannot change under it and its facts are computed once; a torch-backed
  one re-reads its data pointer on every launch (a foreign ``resize_`` of the storage
  moves the memory). Raw arrays are read in full on every launch;
* a scalar's type and value, a constant's type and value.

``type_key`` keeps only what the type-level checks read (no data pointer, no scalar
values), so new memory with the same types reuses the compiled specialisation.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from .. import dtypes as dt
from .memory import Extent, extent_of, plain
from .partition import MappedPartition, Partition, Shared
from .tensor import Tensor, _is_torch

SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)
_SCALAR = "S"  # the tag of a scalar's type key


class ArgFacts:
    """The facts of one tensor-like argument (immutable). Interned: equal facts are one object
    (``intern``), so a launch key hashes and compares them by identity, at C speed."""

    __slots__ = ("kind", "dtype", "dtype_error", "shape", "extent", "device", "writeable", "pshape", "n",
                 "type_key", "key", "__weakref__")
    kind: str
    dtype: dt.DType | None  # None when the element type is not one safetile has (dtype_error says why)
    dtype_error: str | None
    shape: tuple[int, ...]
    extent: Extent
    device: str
    writeable: bool
    pshape: tuple[int, ...] | None  # partitions and mapped partitions only
    n: int | None  # mapped partitions only: the block count
    type_key: tuple
    key: tuple

    def __init__(self, kind: str, data: Any, extent: Extent):
        self.kind = kind
        try:
            self.dtype, self.dtype_error = dt.as_dtype(data.dtype), None
        except TypeError as e:
            self.dtype, self.dtype_error = None, str(e)
        self.shape = tuple(int(d) for d in data.shape)
        self.extent = extent
        self.device = extent.device
        self.writeable = bool(data.flags.writeable) if isinstance(data, np.ndarray) else True
        self.pshape = None
        self.n = None
        self.type_key = (kind, self.dtype or self.dtype_error, self.shape, None, None, self.device, self.writeable)
        self.key = (self.type_key, extent)

    @property
    def sub_shape(self) -> tuple[int, ...]:
        """The shape of one sub-tensor (partitions): the partition sizes, then the trailing axes."""
        assert self.pshape is not None  # read only for partition kinds (checks.py: ct.Mut / ct.MappedMut)
        return self.pshape + self.shape[len(self.pshape):]

    def grid(self) -> tuple[int, ...]:
        assert self.pshape is not None  # read only for partition kinds (checks.py: ct.Mut / ct.MappedMut)
        return tuple(-(-n // s) for n, s in zip(self.shape, self.pshape))

    def grid3(self) -> tuple[int, int, int]:
        if self.kind == "mapped":
            assert self.n is not None  # a mapped partition's facts always carry its block count
            return (self.n, 1, 1)
        g = self.grid()
        return tuple(g + (1,) * (3 - len(g)))  # type: ignore[return-value]


_INTERNED: weakref.WeakValueDictionary[tuple, ArgFacts] = weakref.WeakValueDictionary()
# re-entrant: a collection inside the dictionary's lookup may run a finalizer that launches or
# partitions, which interns facts again on this thread
_INTERN_LOCK = threading.RLock()


def intern(f: ArgFacts) -> ArgFacts:
    """The one live ``ArgFacts`` object equal to ``f`` (``f`` itself if it is the first)."""
    with _INTERN_LOCK:
        g = _INTERNED.get(f.key)
        if g is None:
            _INTERNED[f.key] = g = f
        return g


def tensor_facts(t: Tensor) -> ArgFacts:
    """A tensor's facts, cached on it (torch-backed: the data pointer is checked every time)."""
    f = t._facts
    data = t._data
    if f is None or (t._torch and data.data_ptr() != f.extent.ptr):
        f = t._facts = intern(ArgFacts("tensor", data, extent_of(data)))
    return f


def facts_of(a: Any) -> ArgFacts | None:
    """The facts of a tensor-like argument; None for anything else (scalars, constants, junk)."""
    if isinstance(a, Tensor):
        return tensor_facts(a)
    if isinstance(a, Partition):
        tf = tensor_facts(a._tensor)
        f = a._facts  # pragma: no mutate (a cache: wrapper_facts interns, so it gives the same object again)
        if f is None or f.extent is not tf.extent:
            f = a._facts = wrapper_facts("partition", tf, a._pshape)
        return f
    if isinstance(a, Shared):
        tf = tensor_facts(a._tensor)
        f = a._facts  # pragma: no mutate (a cache: wrapper_facts interns, so it gives the same object again)
        if f is None or f.extent is not tf.extent:
            f = a._facts = wrapper_facts("shared", tf)
        return f
    if isinstance(a, MappedPartition):
        p = a._partition
        tf = tensor_facts(p._tensor)
        f = a._facts  # pragma: no mutate (a cache: wrapper_facts interns, so it gives the same object again)
        if f is None or f.extent is not tf.extent:
            f = a._facts = wrapper_facts("mapped", tf, p._pshape, a._n)
        return f
    if isinstance(a, np.ndarray):
        a = plain(a)
        return intern(ArgFacts("array", a, extent_of(a)))
    if _is_torch(a) and hasattr(a, "data_ptr"):
        return intern(ArgFacts("torch", a, extent_of(a)))
    return None


def wrapper_facts(kind: str, tf: ArgFacts, pshape: tuple[int, ...] | None = None,
                  n: int | None = None) -> ArgFacts:
    """The facts of a partition / mapped partition / shared handle over a tensor with facts ``tf``."""
    f = object.__new__(ArgFacts)
    f.kind, f.dtype, f.dtype_error, f.shape, f.extent, f.device = kind, tf.dtype, tf.dtype_error, tf.shape, \
        tf.extent, tf.device
    f.writeable, f.pshape, f.n = tf.writeable, pshape, n
    f.type_key = (kind, tf.dtype or tf.dtype_error, tf.shape, pshape, n, tf.device, tf.writeable)
    f.key = (f.type_key, tf.extent)
    return intern(f)


def scalar_key(a: Any) -> tuple:
    """A scalar's full key (its value matters to preconditions and to resolved GPU arguments)."""
    return (type(a), a)


def scalar_type_key(a: Any) -> tuple:
    """What the type-level checks read of a scalar: its type (ints: whether they fit int32)."""
    t = type(a)
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
        return (_SCALAR, t, -2147483648 <= int(a) < 2147483648)
    return (_SCALAR, t)
