"""Where host values live in memory: byte extents, exact overlap, and the in-flight registry.

Aliasing checks compare byte extents computed from the data pointer, shape, strides and
item size (negative strides included: a reversed view's extent starts at its last
element). When two extents intersect (two views of one buffer), the exact sets of *bytes*
are compared, so disjoint interleaved views (``a[:, ::2]`` and ``a[:, 1::2]``) pass and
views that share part of an element (an ``f32`` and a ``u8`` view one byte apart) do not.
A mutable view must not overlap *itself* either: every element needs its own bytes
(``distinct_elements``), which zero strides (``expand``, broadcasting) and overlapping
``as_strided`` layouts break.

The in-flight registry records the memory every running terminal uses (read or written)
and every host access in progress. Claiming memory is one atomic step: under the
registry's lock, a claimant either finds no conflicting access being submitted and
registers itself (marked "submitting"), or waits for those and tries again. So two
threads can never both pass the conflict check for overlapping work, a host read never
runs while a launch on that memory runs, and work on the GPU is ordered by stream events
(recorded when someone needs them, and again after every new submission).
"""
from __future__ import annotations

import _thread
import functools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from ..runtime.interrupts import block
from .errors import ForkError
from .native import new_lock

EXACT_LIMIT = 1 << 22  # bytes per view compared exactly; beyond, intersecting extents count as overlap


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

    @property
    def count(self) -> int:
        """The number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def byte_set(self) -> np.ndarray:
        """Every byte address of every element, sorted, each once."""
        addr = np.zeros((), dtype=np.int64) + self.ptr
        for n, s in zip(self.shape, self.strides):
            addr = addr[..., None] + np.arange(n, dtype=np.int64) * s
        return np.unique((addr.reshape(-1)[:, None] + np.arange(self.itemsize, dtype=np.int64)).reshape(-1))


_device_names: dict[Any, str] = {}  # torch.device -> str(device)


def plain(a: Any) -> Any:
    """``a``, or for an ndarray subclass a plain ndarray view of the same memory (made by the base
    class's own method): a subclass may override ``__array_interface__``, ``shape``, ``strides``...
    to report memory it does not use, so facts and backends read only plain arrays."""
    if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
        return np.ndarray.view(a, np.ndarray)
    return a


_F = TypeVar("_F", bound=Callable[..., Any])


def untraced(fn: _F) -> _F:
    """Run ``fn`` with torch's ``__torch_function__`` handling off, subclasses' and modes' alike: the
    facts safetile reads of a torch tensor (pointer, layout, lazy bits) are the tensor's own, never
    what an active ``TorchFunctionMode`` answers for it (red team round 8, attacks 812 and 813).
    User code the wrapped checks call (callable preconditions, a Constant's ``__hash__``) runs so too."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is None or not (torch._C._is_torch_function_enabled() or torch._C._is_torch_function_mode_enabled()):
            return fn(*args, **kwargs)  # already off (nested: prepare_runtime -> torch_alias)
        with torch._C.DisableTorchFunction():
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def own_alias(a: Any) -> Any:
    """safetile's own alias of a raw NumPy array or torch tensor (None for anything else).

    Whoever passed the raw array keeps it and may re-point it in place at any time (``a.strides =
    ...``, ``a.shape = ...``, torch ``set_``, ``resize_``, ``as_strided_``), also from code that
    runs inside the checks (a precondition, a ``__hash__``). The checks read the facts of this
    alias and the backend gets this alias, so the memory a launch touches is the memory it was
    checked on: nobody else holds the alias, so nobody can re-point it, and it keeps the memory
    alive (a NumPy view holds its base; a torch alias holds its storage). What it cannot stop is a
    torch storage being *reallocated* (``resize_`` beyond its size, through any tensor on it):
    then its data pointer moves, which ``Plan.pins`` refuse before the launch runs."""
    if isinstance(a, np.ndarray):
        return np.ndarray.view(a, np.ndarray)  # the base class's method: a subclass cannot lie (``plain``)
    if type(a).__module__.startswith("torch"):
        import torch
        if isinstance(a, torch.Tensor):  # a subclass (nn.Parameter, ...): no __torch_function__ of its own runs
            with torch._C.DisableTorchFunctionSubclass():
                al = torch.Tensor.detach(a)
            if type(al) is not torch.Tensor:
                from .errors import LaunchTypeError
                raise LaunchTypeError(f"a {type(a).__name__} (a torch tensor subclass whose detach() is not a plain "
                                      "tensor) cannot be an argument of a safe launch; pass a plain torch tensor")
            return al
    return None


def moved_message(name: str, since: str) -> str:
    """Why work on an alias whose torch storage was reallocated is refused (see ``own_alias``)."""
    return (f"argument {name!r}: its torch storage was reallocated (resize_) since {since}, so the memory it "
            "now points to is not the memory the checks read; nothing was run: build it again")


def extent_of(data: Any) -> Extent:
    """The extent of a NumPy array or torch tensor."""
    device: str | None  # a torch device's name is looked up in a cache first (None: not there yet)
    if isinstance(data, np.ndarray):
        data = plain(data)
        ptr = data.__array_interface__["data"][0]
        shape, strides, itemsize, device = data.shape, data.strides, data.itemsize, "cpu"
    else:  # torch
        itemsize = data.element_size()
        ptr = data.data_ptr()
        shape = tuple(data.shape)
        strides = tuple([s * itemsize for s in data.stride()])
        dev = data.device
        device = _device_names.get(dev)  # pragma: no mutate (a cache: str(dev) below gives the same)
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
    if a.count * a.itemsize > EXACT_LIMIT or b.count * b.itemsize > EXACT_LIMIT:
        return True  # conservative for huge interleaved views
    return bool(np.intersect1d(a.byte_set(), b.byte_set(), assume_unique=True).size)


def distinct_elements(e: Extent) -> bool:
    """Whether every element of the view has bytes of its own (no zero or overlapping strides).

    Sufficient test first: with the axes sorted by |stride|, each stride at least the span
    of the axes below it. Otherwise the bytes are counted exactly (refused beyond
    ``EXACT_LIMIT``)."""
    if e.empty:
        return True
    span = e.itemsize
    for s, n in sorted((abs(s), n) for n, s in zip(e.shape, e.strides) if n > 1):
        if s < span:
            break
        span += s * (n - 1)
    else:
        return True
    if e.count * e.itemsize > EXACT_LIMIT:
        return False
    return int(e.byte_set().size) == e.count * e.itemsize


# ------------------------------------------------------------------------------ in flight

# Every in-flight state change wakes the threads waiting for one. Each waiter has a one-shot lock
# of its own, listed here, released by ``notify_all`` and blocked on outside this lock (in
# ``interrupts.block``, the only place a Ctrl-C interrupts a wait). The lock is re-entrant: a
# waiter's test runs under it, and anything that allocates there may run a finalizer (an unrun
# LaunchOp given back when it is dropped) that notifies from the same thread.
_FLAGS = threading.RLock()
_WAITERS: list = []  # the waiting threads' locks (changed under _FLAGS)


_RLOCK = type(threading.RLock())


def reinit_lock(lock: Any, keep: bool = False) -> None:
    """A lock (or condition) made fresh in place after a fork, unlocked, as the standard library
    does (``_at_fork_reinit``; in place: modules hold it by name); with ``keep`` (the forking thread
    held it before the fork: it forked inside a section under it, from user code safetile ran
    there) it stays held for that thread to leave (red team round 9, case 904): the C lock keeps
    its holder's depth and drops its queue of (gone) waiters, an ``RLock`` is left as it is."""
    if not keep:
        lock._at_fork_reinit()
    elif not isinstance(lock, _RLOCK):
        lock._at_fork_reinit(True)


def flags_after_fork_in_child() -> None:
    """Nobody waits (the waiting threads do not exist here; the lock: safe/forking.py)."""
    _WAITERS.clear()


def notify_all() -> None:
    """Wake waiting threads (the lock is taken only while some thread waits: a waiter lists itself
    under the lock before it tests its flag, so a change that saw no waiter happened before that test)."""
    if _WAITERS:
        with _FLAGS:
            for w in _WAITERS:
                if w.locked():
                    w.release()


def wait_until(test) -> None:
    """Block until ``test()`` is true (re-tested whenever an in-flight state changes). A Ctrl-C
    interrupts it only while it is blocked (``interrupts.block``), never in its bookkeeping."""
    if test():
        return
    waiter = _thread.allocate_lock()
    waiter.acquire()
    with _FLAGS:
        _WAITERS.append(waiter)
    try:
        while True:
            with _FLAGS:
                if test():
                    return
            block(waiter)  # released by a notify_all after (or during) the test
    finally:
        with _FLAGS:
            _WAITERS.remove(waiter)


def wait_uninterrupted(wait) -> BaseException | None:
    """Run the blocking ``wait()`` to its end even if an asynchronous exception (KeyboardInterrupt,
    SystemExit) arrives meanwhile; return the first such interrupt for the caller to raise once it
    has finished what must not be left half done. For waits on work that is already running."""
    pending: BaseException | None = None
    while True:
        try:
            wait()
            return pending
        except Exception:
            raise
        except BaseException as e:  # noqa: BLE001 - deferred, raised by the caller afterwards
            if pending is None:
                pending = e


def _named(label: Any) -> str:
    """An entry's label as text: an operation (a launch, a copy) by its own label, not its repr."""
    return str(getattr(label, "label", label))


class InFlight:
    """The memory one terminal's unfinished work uses (extents written and read).

    One entry covers everything a terminal (``sync``, ``await``, a graph replay, a host
    read) runs, not one entry per launch: launches on one stream are ordered by the stream,
    so outsiders only need "all of it so far". ``enqueued`` is false while work of the
    entry is being submitted; on the CPU (and for host accesses) work runs while it is
    submitted, so an enqueued CPU entry has nothing running. On the GPU, others wait on a
    CUDA event recorded on the entry's stream when someone first needs it after a
    submission. ``done`` is set when the terminal has waited for its work."""

    __slots__ = ("label", "stream", "writes", "reads", "done", "enqueued", "_event", "_added", "abandoned", "keep")

    def __init__(self, label: Any, stream: Any, writes=(), reads=()):
        self.label = label  # text, or an object formatted with str() only when shown
        self.stream = stream  # None: a host access
        self.writes: list = list(writes)
        self.reads: list = list(reads)
        self.done = False  # pragma: no mutate (read only for its truth: None would read the same)
        self.enqueued = True
        self._event = None
        # the sources whose extents were added, by id (held, so an id cannot be reused meanwhile):
        # a chain launching one cached plan again adds nothing
        self._added: dict[int, Any] = {}
        self.abandoned = False  # work of the parent process that was running when it forked (child only)
        # what GPU work of a failed terminal runs on (its arguments' memory), held until that work is over
        self.keep: list = []

    def add(self, key: Any, writes, reads) -> None:
        """Add the extents of one launch (once per distinct ``key``: its plan)."""
        if id(key) in self._added:
            return
        self._added[id(key)] = key
        self.writes += [e for e in writes if e not in self.writes]
        self.reads += [e for e in reads if e not in self.reads]

    def set_enqueued(self) -> None:
        """The work being submitted is submitted (CPU: it has run)."""
        self.enqueued = True
        if _WAITERS:
            notify_all()

    def set_done(self) -> None:
        self.done = True
        self.keep = []
        notify_all()

    def conflicts(self, ext: Extent, writing: bool) -> bool:
        if any(overlaps(ext, w) for w in self.writes):
            return True
        return writing and any(overlaps(ext, r) for r in self.reads)

    def conflicts_any(self, writes, reads) -> bool:
        return any(self.conflicts(x, True) for x in writes) or any(self.conflicts(x, False) for x in reads)

    @property
    def on_gpu(self) -> bool:
        return self.stream is not None and self.stream.is_cuda

    def event(self):
        """A CUDA event after all work submitted to the entry's stream so far (recorded on first
        use after each submission: ``Registry.claim`` forgets it when more work is submitted)."""
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
            self.keep = []
        return ok

    def submitted(self) -> bool:
        return self.enqueued or self.done

    def wait_host(self) -> None:
        """Block the host until this work has finished (CPU: enqueued means nothing is running)."""
        wait_until(self.submitted)
        if self.on_gpu and not self.done:
            self.event().synchronize()


class Registry:
    """The unfinished work. ``_entries`` is copy-on-write (a tuple replaced under the lock), so
    readers take it without locking. There is one entry per running terminal or host access,
    so the tuple stays short; finished GPU entries left behind (a terminal that failed
    midway) are pruned when the tuple has grown."""

    __slots__ = ("_lock", "_entries", "_prune_at")  # the C run reads the first two at their offsets

    def __init__(self):
        self._lock = new_lock()  # re-entrant, C-cheap when built: the C twin takes it every chained launch
        self._entries: tuple[InFlight, ...] = ()
        self._prune_at = 32

    def reclaim(self, entry: InFlight, key: Any) -> bool:
        """``claim`` for the common case, or False: ``entry`` is the only one registered and already
        holds ``key``'s extents (a chain launching one plan again), so there is nothing to wait for."""
        entries = self._entries
        if len(entries) != 1 or entries[0] is not entry or id(key) not in entry._added:
            return False
        lock = self._lock
        lock.acquire()
        try:  # (zero cost, unlike `with`: this is every chained launch's path)
            ok = self._entries is entries  # unchanged since read: nobody else claimed meanwhile
            if ok:
                entry.enqueued = False
                entry._event = None
        finally:
            lock.release()
        return ok

    def claim(self, entry: InFlight, key: Any, writes, reads) -> None:
        """Atomically: wait until no conflicting work of another entry is being submitted, then
        register ``entry`` (if new) with these extents, marked as submitting. Conflicting GPU work
        already submitted is ordered before ``entry``'s: its stream waits on an event (host
        accesses and CPU entries wait on the host, after registering). Call
        ``entry.set_enqueued()`` once the work is submitted (CPU: has run)."""
        if self.reclaim(entry, key):
            return
        if not self._entries:  # pragma: no mutate (a shortcut: nothing registered, the loop below does the same)
            lock = self._lock
            lock.acquire()
            try:  # released whatever happens: a lock left held would hang every later claim
                if not self._entries:  # pragma: no mutate (registered meanwhile: the loop below decides)
                    entry.enqueued = False
                    entry._event = None
                    entry.add(key, writes, reads)
                    self._entries = (entry,)
                    return
            finally:
                lock.release()
        while True:
            blockers, submitted = [], []
            with self._lock:
                for e in self._entries:
                    if e is entry or e.done or not e.conflicts_any(writes, reads):
                        continue
                    if e.abandoned:
                        raise ForkError(f"{_named(entry.label)} is refused: this memory was being written by "
                                        f"{_named(e.label)} in "
                                        "the parent process when it forked; its contents are undefined in this "
                                        "child (use memory made after the fork)")
                    if not e.enqueued:
                        blockers.append(e)
                    elif e.on_gpu and e.stream is not entry.stream and not e.finished():
                        submitted.append(e)
                if not blockers:
                    entry.enqueued = False
                    entry._event = None  # new work: an event recorded before it would not cover it
                    entry.add(key, writes, reads)
                    if entry not in self._entries:
                        entries = self._entries
                        if len(entries) >= self._prune_at:
                            entries = tuple(e for e in entries if not e.finished())
                            self._prune_at = max(32, 2 * len(entries))
                        self._entries = entries + (entry,)
                    if entry.on_gpu:
                        for e in submitted:  # device-side order, issued under the lock: cheap
                            entry.stream.torch_stream.wait_event(e.event())
                        submitted = []
                    else:
                        events = [e.event() for e in submitted]
                    break
            wait_until(lambda blockers=blockers: all(b.submitted() for b in blockers))
        if submitted:
            for ev in events:  # a host access or CPU entry after GPU work: wait on the host
                ev.synchronize()

    def remove(self, entry: InFlight) -> None:
        """The entry's work has finished: mark it done and forget it."""
        entry.set_done()
        with self._lock:
            entries = self._entries
            if entries and entries[-1] is entry:
                self._entries = entries[:-1]
            elif entry in entries:
                self._entries = tuple(e for e in entries if e is not entry)

    # os.fork(): safe/forking.py takes the lock before, releases it after in the parent, and in the child:
    def after_fork_in_child(self) -> None:
        """The work that was in flight in the parent is abandoned: its threads do not exist here
        (the lock is made fresh by safe/forking.py). Memory it was writing is refused (``ForkError``)
        to every later access, instead of waiting forever; reads in flight simply end; other memory
        stays usable."""
        kept = []
        for e in self._entries:
            if e.done or not e.writes:
                continue
            a = InFlight(_named(e.label), None, writes=e.writes)
            a.abandoned = True
            a.enqueued = False
            kept.append(a)
        self._entries = tuple(kept)
        self._prune_at = max(32, 2 * len(kept))

    def host_access(self, ext: Extent, writing: bool, label: Any) -> HostAccess:
        """``with REGISTRY.host_access(ext, writing, label):`` — the memory is not touched by running
        work while the block runs (launches claiming it meanwhile wait for the block to end);
        ``label`` names the access where it is refused (after ``os.fork()``, ``ForkError``)."""
        return HostAccess(self, ext, writing, label)

    def wait_for_host(self, ext: Extent, writing: bool, label: Any) -> None:
        """Wait until no unfinished work conflicts with ``ext`` (a snapshot: prefer ``host_access``)."""
        with self.host_access(ext, writing, label):
            pass


class HostAccess:
    """A host read or write of memory, registered for its duration (see ``Registry.host_access``)."""

    __slots__ = ("registry", "entry", "ext", "writing")

    def __init__(self, registry: Registry, ext: Extent, writing: bool, label: Any):
        self.registry, self.ext, self.writing = registry, ext, writing
        self.entry = InFlight(label, None)

    def __enter__(self) -> HostAccess:
        w, r = ([self.ext], []) if self.writing else ([], [self.ext])
        self.registry.claim(self.entry, self, w, r)
        return self

    def __exit__(self, *exc) -> Literal[False]:  # never swallows an exception
        self.registry.remove(self.entry)
        return False


REGISTRY = Registry()
