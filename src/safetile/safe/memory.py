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
from dataclasses import dataclass
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

_FLAGS = threading.Condition(threading.Lock())  # one condition for every in-flight entry
_WAITERS = [0]  # threads waiting on _FLAGS (changed under it)


def _notify() -> None:
    """Wake waiting threads (the condition is taken only while some thread waits: a waiter
    counts itself under the lock before it tests its flag, so a change that saw no waiter
    happened before that test)."""
    if _WAITERS[0]:
        with _FLAGS:
            _FLAGS.notify_all()


def _wait_until(test) -> None:
    if test():
        return
    with _FLAGS:
        _WAITERS[0] += 1
        try:
            _FLAGS.wait_for(test)
        finally:
            _WAITERS[0] -= 1


class InFlight:
    """The memory one terminal's unfinished work uses (extents written and read).

    One entry covers everything a terminal (``sync``, ``await``, a graph replay) runs on its
    stream, not one entry per launch: launches on one stream are ordered by the stream, so
    outsiders only need "all of it so far". ``enqueued`` is false while a launch of the
    entry is being submitted; on the CPU a launch runs while it is submitted, so an enqueued
    CPU entry has no work running. On the GPU, waiting uses a CUDA event recorded on the
    entry's stream when someone first needs it (it follows all work submitted so far), so a
    launch costs no event. ``done`` is set when the terminal has waited for its work."""

    __slots__ = ("label", "stream", "writes", "reads", "done", "enqueued", "_event", "_added")

    def __init__(self, label: Any, stream: Any, writes=(), reads=()):
        self.label = label  # text, or an object formatted with str() only when shown
        self.stream = stream
        self.writes: list = list(writes)
        self.reads: list = list(reads)
        self.done = False
        self.enqueued = True
        self._event = None
        # the sources whose extents were added, by id (held, so an id cannot be reused meanwhile):
        # a chain launching one cached plan again adds nothing
        self._added: dict[int, Any] = {}

    def add(self, key: Any, writes, reads) -> None:
        """Add the extents of one launch (once per distinct ``key``: its plan)."""
        if id(key) in self._added:
            return
        self._added[id(key)] = key
        self.writes += [e for e in writes if e not in self.writes]
        self.reads += [e for e in reads if e not in self.reads]

    def set_enqueued(self) -> None:
        self.enqueued = True
        _notify()

    def set_done(self) -> None:
        self.done = True
        _notify()

    def conflicts(self, ext: Extent, writing: bool) -> bool:
        if any(overlaps(ext, w) for w in self.writes):
            return True
        return writing and any(overlaps(ext, r) for r in self.reads)

    @property
    def on_gpu(self) -> bool:
        return self.stream is not None and self.stream.is_cuda

    def event(self):
        """A CUDA event after all work submitted to the entry's stream so far (made on first use)."""
        ev = self._event
        if ev is None:
            import torch
            ev = torch.cuda.Event()
            ev.record(self.stream.torch_stream)
            self._event = ev
        return ev

    def finished(self) -> bool:
        """Whether the work has completed (remembered once true)."""
        if self.done:
            return True
        if not self.enqueued or not self.on_gpu:
            return False
        if self._event is not None:
            ok = self._event.query()
        else:
            ok = self.stream.torch_stream.query()  # the whole stream idle: no event needed
        if ok:
            self.done = True
        return ok

    def _submitted(self) -> bool:
        return self.enqueued or self.done

    def wait_host(self) -> None:
        """Block the host until this work has finished (CPU: enqueued means nothing is running)."""
        _wait_until(self._submitted)
        if self.on_gpu and not self.done:
            self.event().synchronize()

    def wait_on(self, stream) -> None:
        """Make ``stream``'s later work wait for this work (device-side on GPU)."""
        if not (self.on_gpu and stream is not None and stream.is_cuda):
            return self.wait_host()
        _wait_until(self._submitted)
        if not self.done:
            stream.torch_stream.wait_event(self.event())


class Registry:
    """The unfinished work. ``_entries`` is copy-on-write (a tuple replaced under the lock), so
    readers take it without locking. There is one entry per running terminal, so the tuple
    stays short; finished GPU entries left behind (a terminal that failed midway) are pruned
    when the tuple has grown."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: tuple[InFlight, ...] = ()
        self._prune_at = 32

    def conflicting(self, ext: Extent, writing: bool, exclude: Any = None) -> list[InFlight]:
        entries = self._entries
        if not entries:
            return []
        # the cheap tests first: the done flag and the extents; the device is asked only
        # for an entry that really conflicts
        return [e for e in entries if e is not exclude and not e.done and e.conflicts(ext, writing)
                and not e.finished()]

    def add(self, entry: InFlight) -> None:
        with self._lock:
            entries = self._entries
            if len(entries) >= self._prune_at:
                entries = tuple(e for e in entries if not e.finished())
                self._prune_at = max(32, 2 * len(entries))
            self._entries = entries + (entry,)

    def remove(self, entry: InFlight) -> None:
        """The entry's work has finished: mark it done and forget it."""
        entry.set_done()
        with self._lock:
            entries = self._entries
            if entries and entries[-1] is entry:
                self._entries = entries[:-1]
            elif entry in entries:
                self._entries = tuple(e for e in entries if e is not entry)

    def wait_for_host(self, ext: Extent, writing: bool) -> None:
        """Host access to ``ext``: wait until no unfinished work conflicts with it."""
        for e in self.conflicting(ext, writing):
            e.wait_host()

    def wait_for_launch(self, entry: InFlight, writes, reads) -> None:
        """Before ``entry``'s stream runs work on these extents: order it after conflicting
        unfinished work of other entries (same-stream work is ordered by the stream)."""
        stream = entry.stream
        for e in self._entries:
            if e is entry or e.done or (e.stream is stream and e.enqueued):
                continue
            if (any(e.conflicts(x, True) for x in writes) or any(e.conflicts(x, False) for x in reads)) \
                    and not e.finished():
                e.wait_on(stream)


REGISTRY = Registry()
