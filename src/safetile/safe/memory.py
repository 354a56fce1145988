"""Where host values live in memory: byte extents, exact overlap, and in-flight regions.

Aliasing checks compare byte extents computed from the data pointer, shape, strides and
item size; when two extents intersect (two views of one buffer), the exact sets of bytes
are compared so that disjoint interleaved views (``a[:, ::2]`` and ``a[:, 1::2]``) pass.

The in-flight registry records the memory every running launch uses (read or written).
A host read of memory an unfinished launch writes waits for it; a launch that conflicts
with an unfinished launch on another stream waits for it (GPU: the stream waits on an
event; CPU: the worker waits on a threading event). So host code never races a launch.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

EXACT_LIMIT = 1 << 22  # elements per view compared exactly; beyond, intersecting extents are overlap


@dataclass(frozen=True)
class Extent:
    """The memory one array view touches: device, [lo, hi) bytes, and its layout."""

    device: str
    lo: int
    hi: int
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # bytes
    itemsize: int

    @property
    def empty(self) -> bool:
        return self.hi <= self.lo

    def byte_set(self) -> np.ndarray:
        addr = np.zeros((), dtype=np.int64) + self.ptr
        for n, s in zip(self.shape, self.strides):
            addr = addr[..., None] + np.arange(n, dtype=np.int64) * s
        return np.unique((addr.reshape(-1)[:, None] + np.arange(self.itemsize, dtype=np.int64)).reshape(-1))


_device_names: dict[Any, str] = {}  # torch.device -> str(device)


def extent_of(data: Any) -> Extent:
    """The extent of a NumPy array or torch tensor."""
    if isinstance(data, np.ndarray):
        ptr = data.__array_interface__["data"][0]
        shape, strides, itemsize, device = data.shape, data.strides, data.itemsize, "cpu"
    else:  # torch
        itemsize = data.element_size()
        ptr = data.data_ptr()
        shape = tuple(data.shape)
        strides = tuple([s * itemsize for s in data.stride()])
        dev = data.device
        device = _device_names.get(dev)
        if device is None:
            device = str(dev)
            if len(_device_names) < 64:
                _device_names[dev] = device
    lo = hi = ptr
    for n, s in zip(shape, strides):
        if n == 0:
            return Extent(device, ptr, ptr, ptr, tuple(shape), tuple(strides), itemsize)
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return Extent(device, lo, hi + itemsize, ptr, tuple(shape), tuple(strides), itemsize)


def overlaps(a: Extent, b: Extent) -> bool:
    """Whether two views share at least one byte."""
    if a.hi <= b.lo or b.hi <= a.lo:  # disjoint byte ranges: the common case, tested first
        return False
    if a.device != b.device or a.hi <= a.lo or b.hi <= b.lo:  # other device, or an empty view
        return False
    if a.shape == b.shape and a.strides == b.strides and a.ptr == b.ptr:
        return True
    if int(np.prod(a.shape)) > EXACT_LIMIT or int(np.prod(b.shape)) > EXACT_LIMIT:
        return True  # conservative for huge interleaved views
    return bool(np.intersect1d(a.byte_set(), b.byte_set(), assume_unique=True).size)


# ------------------------------------------------------------------------------ in flight

_FLAGS = threading.Condition(threading.Lock())  # one condition for every in-flight flag
_WAITERS = [0]  # threads waiting on _FLAGS (changed under it)


class Flag:
    """A one-way flag with ``threading.Event``'s interface (``set``, ``is_set``, ``wait``).

    Every launch makes two; an Event allocates a lock and a condition each (several us per
    launch), these share one module-level condition. Setting is a bit flip; the condition is
    taken (to notify) only while some thread waits. A waiter counts itself under the lock
    before it tests the flag, so a ``set`` that saw no waiter happened before that test."""

    __slots__ = ("_set",)

    def __init__(self):
        self._set = False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        if _WAITERS[0]:
            with _FLAGS:
                _FLAGS.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        with _FLAGS:
            _WAITERS[0] += 1
            try:
                return _FLAGS.wait_for(self.is_set, timeout)
            finally:
                _WAITERS[0] -= 1


@dataclass(eq=False)
class InFlight:
    """Memory an unfinished launch uses: extents it writes and extents it reads."""

    label: Any  # text, or the operation (formatted with str() only when shown)
    stream: Any
    writes: list[Extent]
    reads: list[Extent]
    done: Flag = field(default_factory=Flag)
    enqueued: Flag = field(default_factory=Flag)
    cuda_event: Any = None  # on GPU: recorded after the work, set before ``enqueued``

    def conflicts(self, ext: Extent, writing: bool) -> bool:
        if any(overlaps(ext, w) for w in self.writes):
            return True
        return writing and any(overlaps(ext, r) for r in self.reads)

    def wait_host(self) -> None:
        """Block the host until this work has finished."""
        self.enqueued.wait()
        if self.cuda_event is not None:
            self.cuda_event.synchronize()
            return
        self.done.wait()

    def wait_on(self, stream) -> None:
        """Make ``stream``'s later work wait for this work (device-side on GPU)."""
        self.enqueued.wait()
        if self.cuda_event is not None and stream is not None and stream.is_cuda:
            stream.torch_stream.wait_event(self.cuda_event)
        else:
            self.wait_host()


class Registry:
    """The unfinished launches. ``_entries`` is copy-on-write (a tuple replaced under the lock),
    so readers take it without locking; finished entries are pruned when the tuple has grown
    (amortised), not on every launch, so a launch does not query every CUDA event each time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: tuple[InFlight, ...] = ()
        self._prune_at = 32

    def conflicting(self, ext: Extent, writing: bool, exclude: Any = None) -> list[InFlight]:
        entries = self._entries
        if not entries:
            return []
        # the cheap tests first: the done flag and the extents; a CUDA event is queried only
        # for an entry that really conflicts
        return [e for e in entries if e is not exclude and not e.done._set and e.conflicts(ext, writing)
                and not self._finished(e)]

    @staticmethod
    def _finished(e: InFlight) -> bool:
        if e.done._set:
            return True
        if e.enqueued._set and e.cuda_event is not None and e.cuda_event.query():
            e.done.set()  # remembered: the event is not queried again
            return True
        return False

    def add(self, entry: InFlight) -> None:
        with self._lock:
            entries = self._entries
            if len(entries) >= self._prune_at:
                entries = tuple(e for e in entries if not self._finished(e))
                self._prune_at = max(32, 2 * len(entries))
            self._entries = entries + (entry,)

    def remove(self, entry: InFlight) -> None:
        entry.done.set()
        if entry.cuda_event is not None:
            return
        with self._lock:
            entries = self._entries
            if entries and entries[-1] is entry:
                self._entries = entries[:-1]
            elif entry in entries:
                self._entries = tuple(e for e in entries if e is not entry)

    def wait_for_host(self, ext: Extent, writing: bool) -> None:
        """Host access to ``ext``: wait until no unfinished launch conflicts with it."""
        for e in self.conflicting(ext, writing):
            e.wait_host()


REGISTRY = Registry()
