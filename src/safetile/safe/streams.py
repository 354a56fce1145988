"""Streams: ordered queues of device work, and the default round-robin stream pool.

On the GPU a ``Stream`` wraps a ``torch.cuda.Stream``. On the CPU backend a stream is an
ordered queue with one worker thread (used by ``await``); ``sync`` runs work inline when
nothing is queued on the stream, so results are the same in every mode. ``sync()`` takes
the next stream of the device's pool (4 streams, round robin).
"""
from __future__ import annotations

import _thread
import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..runtime import env
from ..runtime.interrupts import block

_default_device = env.default_device()
_ids = itertools.count()
_NULL_CONTEXT = contextlib.nullcontext()  # reusable: entering it does nothing


def default_device() -> str:
    """The device factories allocate on when none is given ('cpu' unless set)."""
    return _default_device


def set_default_device(device: str) -> None:
    """Set the device for factories without ``device=`` ('cpu', 'cuda', 'cuda:N')."""
    global _default_device
    from .tensor import normalize_device
    _default_device = normalize_device(device)


class _Queue:
    """A handle on device queues of this process: a copy is the object itself (it names the same
    queues); pickling is refused (another process has none of them)."""

    __slots__ = ()

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        raise ArgumentError(f"a {type(self).__name__} cannot be pickled: it names device queues of this process")


class Stream(_Queue):
    """An ordered queue of device work on one device."""

    # every live stream, for os.fork() (safe/forking.py): a child has none of their worker threads
    _live: weakref.WeakSet[Stream] = weakref.WeakSet()

    def __init__(self, device: str = "cpu", torch_stream: Any = None):
        from .tensor import normalize_device
        self.device = normalize_device(device)
        self.is_cuda = self.device.startswith("cuda")  # fixed for the stream's life
        self.id = next(_ids)
        self._lock = threading.Lock()
        self._queued = 0
        self._executor: ThreadPoolExecutor | None = None
        self.torch_stream: Any = None  # a torch.cuda.Stream on a CUDA device
        self.handle = 0  # the raw CUDA stream handle and its device (GPU)
        self.device_index = -1
        if self.is_cuda:
            import torch
            self.torch_stream = torch_stream if torch_stream is not None else torch.cuda.Stream(device=self.device)
            self.handle = self.torch_stream.cuda_stream
            self.device_index = self.torch_stream.device_index
        Stream._live.add(self)

    def __repr__(self) -> str:
        return f"<safetile stream {self.id} on {self.device}>"

    def after_fork_in_child(self, error: BaseException) -> None:
        """In a forked child: a fresh lock, no worker (made again on the next submission), nothing
        queued; jobs queued in the parent never run here, their futures fail with ``error``."""
        from .memory import reinit_lock
        reinit_lock(self._lock)
        old, self._executor, self._queued = self._executor, None, 0
        queue = getattr(old, "_work_queue", None)
        while queue is not None and not queue.empty():
            item = queue.get_nowait()
            fut = getattr(item, "future", None)
            if fut is not None and not fut.done():
                fut._condition = threading.Condition()  # its lock may have been held by a thread not here
                fut.set_exception(error)

    # ------------------------------------------------------------------ CPU ordering

    def _exec(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"safetile-stream{self.id}")
            return self._executor

    def submit(self, fn: Callable[[], Any]) -> Future:
        """Queue ``fn`` on this stream's worker (runs after everything queued before it)."""
        with self._lock:
            self._queued += 1

        def job():
            try:
                return fn()
            finally:
                with self._lock:
                    self._queued -= 1
        return self._exec().submit(job)

    def withdraw(self, fut: Future) -> bool:
        """Take a job queued by ``submit`` off the queue if it has not started (True: it never runs)."""
        if not fut.cancel():
            return False
        with self._lock:
            self._queued -= 1  # its own decrement (in the job) never runs
        return True

    def run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` in stream order and wait for it (inline when nothing is queued)."""
        if self.runs_inline():
            return fn()
        return wait_done(self.submit(fn))

    def runs_inline(self) -> bool:
        """Whether work driven on this stream runs on the calling thread: nothing is queued on this
        CPU stream, or the caller is its worker (GPU streams: always; the GPU orders the work)."""
        return self._queued == 0 or threading.current_thread().name.startswith(f"safetile-stream{self.id}_")

    def synchronize(self) -> None:
        """Wait until all work queued on this stream has finished."""
        if self.is_cuda:
            self.torch_stream.synchronize()
            return
        if self._queued:  # an int read is atomic; the count changes under the lock
            wait_done(self.submit(lambda: None))

    def context(self):
        """A context manager making this stream current for torch work (no-op on CPU)."""
        if self.is_cuda:
            return _CudaStreamContext(self.torch_stream)
        return _NULL_CONTEXT


class _CudaStreamContext:
    """``torch.cuda.stream(ts)`` for the common case, without its Python overhead (it builds two
    ``torch.cuda.Stream`` objects and several device queries per use, several us per terminal):
    when ``ts`` is on the current device, swap the current stream id directly, and not at all
    when ``ts`` is already current. Other cases (another device, an older torch) use
    ``torch.cuda.stream``."""

    __slots__ = ("ts", "prev", "fallback")

    def __init__(self, ts):
        self.ts = ts
        self.prev = None
        self.fallback = None

    def __enter__(self):
        import torch
        C = torch._C
        ts = self.ts
        get = getattr(C, "_cuda_getCurrentStream", None)
        if get is None or not hasattr(C, "_cuda_setStream") or C._cuda_getDevice() != ts.device_index:
            self.fallback = torch.cuda.stream(ts)
            return self.fallback.__enter__()
        cur = get(ts.device_index)  # (stream id, device index, device type)
        if cur[0] != ts.stream_id:
            self.prev = cur
            C._cuda_setStream(stream_id=ts.stream_id, device_index=ts.device_index, device_type=ts.device_type)
        return None

    def __exit__(self, *exc):
        if self.fallback is not None:
            return self.fallback.__exit__(*exc)
        prev = self.prev
        if prev is not None:
            import torch
            torch._C._cuda_setStream(stream_id=prev[0], device_index=prev[1], device_type=prev[2])
        return False


def wait_done(fut: Future) -> Any:
    """``fut.result()``, interrupted by Ctrl-C only while blocked (``interrupts.block``)."""
    if not fut.done():
        waiter = _thread.allocate_lock()
        waiter.acquire()
        fut.add_done_callback(lambda _: waiter.release())  # on the worker (or here, if done by now)
        block(waiter)
    return fut.result()


class StreamPool(_Queue):
    """A fixed set of streams handed out round robin."""

    MAX_SIZE = 1024  # more streams than any device runs at once: a larger count is a mistake

    def __init__(self, device: str = "cpu", size: int = 4):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise ArgumentError(f"a stream pool's size must be an integer, got {size!r}")
        size = int(size)
        if size < 1:
            raise ArgumentError(f"a stream pool needs at least one stream, got {size}")
        if size > self.MAX_SIZE:
            raise ArgumentError(f"a stream pool has at most {self.MAX_SIZE} streams, got {size}")
        self.device = device
        self.streams = [Stream(device) for _ in range(size)]
        self._count = itertools.count()  # next() on it is atomic (no lock needed)
        self._size = size

    def next(self) -> Stream:
        return self.streams[next(self._count) % self._size]


_pools: dict[str, StreamPool] = {}
_pool_lock = threading.Lock()


def default_pool(device: str | None = None) -> StreamPool:
    """The device's default pool of 4 streams."""
    if device is not None and not isinstance(device, str):
        from .tensor import normalize_device
        device = normalize_device(device)  # a torch.device, or refused
    pool = _pools.get(_default_device if device is None else device)  # common case: a name seen before
    if pool is not None:
        return pool
    from .tensor import normalize_device
    dev = normalize_device(device)
    with _pool_lock:
        pool = _pools.get(dev)  # pragma: no mutate (double-checked: another thread's new pool is as good)
        if pool is None:
            pool = _pools[dev] = StreamPool(dev)
        return pool


# ---------------------------------------------------------------------------- execution lock

_local = threading.local()


def executing() -> bool:
    """Whether this thread is inside the execution of a device operation."""
    return getattr(_local, "depth", 0) > 0


def current_context() -> Any:
    """The ExecContext this thread is executing (None outside a terminal)."""
    return getattr(_local, "ctx", None)


class execution:
    """Marks this thread as executing device work (terminals inside are errors), for ``ctx``."""

    __slots__ = ("ctx", "prev")

    def __init__(self, ctx: Any = None):
        self.ctx = ctx
        self.prev = None

    def __enter__(self):
        _local.depth = getattr(_local, "depth", 0) + 1
        self.prev = getattr(_local, "ctx", None)
        _local.ctx = self.ctx

    def __exit__(self, *exc):
        _local.depth -= 1
        _local.ctx = self.prev
        return False
