"""Graphs: capture a DeviceOp once, replay it many times.

Capturing walks the operation without running device work and records every launch and
copy with its concrete arguments; operations that allocate memory (factories, ``dup``,
host→device copies) are rejected, so a replay never depends on fresh addresses. Host
closures (``map``, ``then``, ``inspect``) run once, at capture. Refresh inputs between
replays with ``ct.memcpy(dst, src)``. On the GPU the recorded work is captured into a
``torch.cuda.CUDAGraph`` (after one warm-up run that compiles the kernels); on the CPU a
replay runs the recorded sequence.

``with ct.graph_scope() as g: g.record(op1); g.record(op2)`` records several operations
(each sees the values the previous ones produced) into one graph, ``g.graph``.
"""
from __future__ import annotations

import weakref
from typing import Any, Literal
from collections.abc import Callable

from ..errors import ArgumentError
from .claims import CLAIMS, WRITABLE
from .deviceop import DeviceOp, ExecContext, _check_terminal
from .errors import DeviceOpError, GraphCaptureError, LaunchTypeError
from .memory import REGISTRY, Extent, InFlight, moved_message, notify_all, wait_until
from .ownership import OWNERSHIP, Handle, LazyText, NoCopy, Owned, Unique
from .partition import Shared, base_partition
from .streams import Stream, default_pool, execution, wait_done
from ..locks import FORK_LOCKS


class Recorder:
    """Collects the steps of a capture, and the values its steps were recorded with."""

    def __init__(self):
        self.steps: list[tuple[str, Callable[[Stream], None]]] = []
        # distinct extents, in first-use order (a chain of N launches on the same tensors has as many
        # extents as one launch, so per-replay bookkeeping does not grow with N)
        self.writes: dict[Extent, None] = {}
        self.reads: dict[Extent, None] = {}
        self.device: str | None = None
        self.values: dict[int, Any] = {}  # id -> every host value a recorded step uses
        self.guards: list[tuple[str, str, Any, Any]] = []  # (step, argument, raw array, its facts)
        self.undo: list[Callable[[], None]] = []  # what gives back the captured combinators' moves (ExecContext)
        self.pins: list[tuple[str, str, Any, int]] = []  # (step, argument, torch tensor a step uses, its pointer)

    def record(self, label: str, fn: Callable[[Stream], None], writes: list[Extent], reads: list[Extent],
               device: str, values=(), raw=(), pins=()) -> None:
        """Record one step; ``raw`` names its raw NumPy/torch arguments ``(name, array)``: a replay
        is refused if any of them changed (pointer, shape, strides, dtype) since the capture.
        ``pins`` names the torch tensors the step runs on ``(name, tensor, data pointer)``: a replay
        is refused if the storage of any was reallocated since (a GPU graph holds the pointers)."""
        from .facts import facts_of
        for name, a in raw:
            f = facts_of(a)
            if f is not None and not isinstance(a, (Owned, Shared)):
                self.guards.append((label, name, a, f))
        for name, t, ptr in pins:
            self.pins.append((label, name, t, ptr))
        if self.device is not None and device != self.device:
            raise GraphCaptureError(f"{label}: a graph runs on one device ({self.device}), not {device}")
        self.device = device
        self.steps.append((label, fn))
        self.writes.update(dict.fromkeys(writes))  # ordered sets: each extent once, in first-use order
        self.reads.update(dict.fromkeys(reads))
        for v in values:
            if isinstance(v, (Owned, Shared)):
                self.values[id(v)] = v

    def rollback(self) -> None:
        """The capture was refused: give back what its combinators moved (``ExecContext.rollback``)."""
        undo, self.undo = self.undo, []
        for step in reversed(undo):
            step()

    def reject(self, label: str, why: str = "it allocates memory") -> None:
        raise GraphCaptureError(f"{label} cannot be recorded into a graph: {why}; allocate before capturing "
                                "and refresh inputs with ct.memcpy(dst, src)")


def _host_values(v: Any, out: dict[int, Any]) -> None:
    """The safetile host values in a captured value (tuples, lists and dicts walked)."""
    if isinstance(v, (Owned, Shared)):
        out[id(v)] = v
    elif isinstance(v, (tuple, list)):
        for x in v:
            _host_values(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _host_values(x, out)


def _borrow_of(v: Owned):
    """The borrow (``MutBorrow``) a partition, or a mapped partition of one, was made from, if any."""
    p = base_partition(v)
    return p._borrowed() if p is not None and p._borrowed is not None else None


def _release(claim: int, shared: list) -> None:
    """End what a graph holds (``Graph.close``, or the graph collected)."""
    CLAIMS.release(claim)
    for s in shared:
        s._release()


def _replay_label(g: Graph) -> str:
    return f"a replay of {g.label}; it is given back when the replay ends"


def _used_by(g: Graph) -> str:
    return f"used by a replay of {g.label}"


def _stream_for(device: str | None, stream: Stream | None, what: str) -> Stream:
    """The stream a graph of work on ``device`` replays on: ``stream`` if given (it must be on that
    device: a CPU stream never drives GPU work), else the next of the device's pool."""
    if stream is None:
        return default_pool(device).next()
    if device is not None and stream.device != device:
        raise GraphCaptureError(f"{what}: the recorded work runs on {device} but the stream is on {stream.device}; "
                                f"capture on a stream of {device} (or leave the stream out)")
    return stream


def _record(op: DeviceOp, stream: Stream | None) -> tuple[Recorder, Any, Stream]:
    """Capture ``op``: its steps, its value and the stream to replay on."""
    if not isinstance(op, DeviceOp):
        raise DeviceOpError(f"a graph captures a DeviceOp, got {type(op).__name__}")
    op._refuse("graph()")
    if stream is not None and not isinstance(stream, Stream):
        raise LaunchTypeError(f"graph() expects a ct.Stream or None, got {type(stream).__name__}")
    rec = Recorder()
    # the stream is chosen once the recorded work's device is known: a chain that starts with an op
    # of no device (ct.empty(), ct.value(...)) replays on the device of its launches
    ctx = ExecContext(stream or default_pool(op._device()).next(), rec, label="a graph capture")
    try:
        with execution(ctx):
            value = op._run(ctx)
    except BaseException:
        ctx.rollback()  # a refused capture gives every argument back, whatever step refused it
        raise
    finally:
        ctx.finish(True)
    rec.undo = ctx.undo  # a fresh recorder: the capture's undo steps are all it holds
    try:
        return rec, value, _stream_for(rec.device, stream, "graph()")
    except BaseException:
        rec.rollback()
        raise


class Graph(Handle, Unique):
    """A captured sequence of device work; ``launch()`` replays it and returns its value
    (``copy.copy(g)`` is ``g``).

    While it lives (until ``close()``) a graph holds what its replays use: the memory they
    write has a writable claim (it cannot become ``Shared``), every ``Shared`` they read is
    held (``try_unwrap`` refuses), and each replay first takes every tensor and partition it
    was captured with, as a launch does: one moved elsewhere, borrowed, released or in use
    by a running terminal refuses the replay, naming where it is. A graph captured with a
    partition of ``ct.borrow_mut(t)`` is closed when that borrow ends (it could never replay)."""

    def __init__(self, recorder: Recorder, value: Any, stream: Stream):
        self._lock = FORK_LOCKS.new()  # replays, close() and update() one at a time
        self._ref = weakref.ref(self)  # what the values a replay took point back to (Owned.holder)
        self._replaying = False  # a replay holds the values (from _take to _end), under OWNERSHIP
        self._setup(recorder, value, stream)

    def _setup(self, recorder: Recorder, value: Any, stream: Stream) -> None:
        self._steps = recorder.steps
        self._writes = list(recorder.writes)
        self._reads = [e for e in recorder.reads if e not in recorder.writes]
        self._label = f"graph replay ({len(self._steps)} ops)"
        self._guards = recorder.guards
        self._pins = recorder.pins
        self.value = value
        self.stream = stream
        self._cuda_graph = None
        self.replays = 0
        self._closed = False
        self._borrow_closed = False  # closed when a borrow whose partition it replays ended
        # the values a replay uses: those still usable when the capture ended (what a host closure
        # consumed during the capture lives on in what it became, which the captured value returns)
        values = dict(recorder.values)
        _host_values(value, values)
        self._owned = tuple(v for v in values.values() if isinstance(v, Owned) and not v.is_moved)
        with OWNERSHIP:  # a borrow's exit ends this graph's holds (_borrow_ended)
            for v in self._owned:
                borrow = _borrow_of(v)
                if borrow is not None:
                    borrow._graphs.add(self)
        shared = [v for v in values.values() if isinstance(v, Shared)]
        self._hold(shared)
        if stream.is_cuda and self._steps:
            self._capture_cuda()

    def _hold(self, shared: list) -> None:
        """Claim the written memory and hold every Shared read, until ``close()`` or collection."""
        with OWNERSHIP:
            for s in shared:
                s._check("held by a graph")
            # while the graph lives its replays may write this memory: it can never become Shared meanwhile
            claim = CLAIMS.claim(self, WRITABLE, self._writes, f"a graph ({len(self._steps)} ops) whose replays "
                                 "write it (close it with g.close())", "capturing the graph is refused")
            for s in shared:
                s._holders += 1
        self._held = weakref.finalize(self, _release, claim, shared)

    @classmethod
    def capture(cls, op: DeviceOp, stream: Stream | None = None) -> Graph:
        rec, value, stream = _record(op, stream)
        try:
            return cls(rec, value, stream)
        except BaseException:  # refused (e.g. its memory is Shared): the capture gives everything back
            rec.rollback()
            raise

    @property
    def num_ops(self) -> int:
        """How many launches and copies a replay runs."""
        return len(self._steps)

    @property
    def ops(self) -> list[str]:
        return [label for label, _ in self._steps]

    def _capture_cuda(self) -> None:
        import torch
        ts = self.stream.torch_stream
        with torch.cuda.stream(ts):  # warm-up run: compiles every kernel before the capture
            for _, fn in self._steps:
                fn(self.stream)
        ts.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=ts):
            for _, fn in self._steps:
                fn(self.stream)
        self._cuda_graph = g

    def launch(self) -> Any:
        """Replay the graph on its stream, wait for it, and return the captured value.

        The replay takes the values it was captured with for its duration, as a launch does
        (refused, naming where one is, if any is not usable), and claims its memory in the
        in-flight registry (CPU and GPU alike): conflicting launches, replays and host reads
        wait for it. On a CPU stream with work queued, the stream's worker runs the replay and
        claims the memory when it starts (never while queued: a claim is made by the thread that
        runs the work, so no worker waits for work queued behind it). Interrupted while waiting
        (KeyboardInterrupt): a replay that has not started never runs; one that has goes on,
        stays registered, and gives the values back (and the graph free) when it ends."""
        _check_terminal("Graph.launch()")
        self._lock.acquire()  # replays of one graph run one at a time; released when the replay ends
        try:
            owned, label = self._take()
        except BaseException:
            self._lock.release()
            raise
        stream = self.stream
        if stream.is_cuda or stream.runs_inline():
            self._replay(owned, label)
            return self.value
        fut = stream.submit(lambda: self._replay(owned, label))
        try:
            wait_done(fut)
        except BaseException:
            if stream.withdraw(fut):  # not started: it never will
                self._end(owned, label)
            raise
        return self.value

    def _take(self) -> tuple[tuple, LazyText]:
        """Take the values the graph was captured with (refused if closed or any is not usable)."""
        label = LazyText(_replay_label, self)
        if self._guards or self._pins:
            self._check_raw()
        with OWNERSHIP:
            owned = self._owned
            if self._closed and not self._borrow_closed:
                raise GraphCaptureError(f"{self!r} was closed; it cannot be replayed")
            for v in owned:  # closed by a borrow's end: its released partition refuses, naming the borrow
                v._check(LazyText(_used_by, self))
            for v in owned:
                v._moved = label
                v._holder = self._ref  # a borrow's exit waits for the replay (_wait_finished)
            self._replaying = True
        return owned, label

    def cancel_unrun(self) -> bool:
        """A replay that took its values is queued or running: it is never cancelled (a borrow's
        exit asks each holder of its partitions, then waits for it)."""
        return False

    def _wait_finished(self) -> None:
        """Block until the replay that took the values has ended and given them back."""
        wait_until(lambda: not self._replaying)

    def _check_raw(self) -> None:
        """Raw NumPy/torch arguments are foreign objects: their owner can re-point or reshape them in
        place (``set_``, ``a.shape = ...``). The capture's checks (aliasing, shapes, strides) hold
        for the facts they read then, so a replay with any of them changed is refused."""
        from .facts import facts_of
        for step, name, t, ptr in self._pins:
            if t.data_ptr() != ptr:
                raise GraphCaptureError(f"{self.label}: {step}: {moved_message(name, 'the capture')}")
        for step, name, a, f in self._guards:
            if facts_of(a) is not f:
                raise GraphCaptureError(f"{self.label}: argument {name!r} of {step} is a raw {type(a).__name__} whose "
                                        "data pointer, shape, strides or dtype changed since the capture; a replay "
                                        "runs the captured work unchecked: capture again (g.update(op)), or pass a "
                                        "safetile tensor (ct.from_dlpack)")

    def _end(self, owned: tuple, label: LazyText) -> None:
        """The replay is over: give its values back and let the next replay (or close) in."""
        try:
            with OWNERSHIP:
                for v in owned:
                    if v._moved is label:
                        v._moved = None
                        v._holder = None
                self._replaying = False
            notify_all()
        finally:
            self._lock.release()  # last: close() and update() may go on from here

    def _replay(self, owned: tuple, label: LazyText) -> None:
        """Claim the memory, run the recorded work, wait for it; then ``_end`` (on the thread that ran it)."""
        try:
            stream = self.stream
            entry = InFlight(self._label, stream)
            completed = False  # pragma: no mutate (read only for its truth: None would read the same)
            try:
                REGISTRY.claim(entry, self, self._writes, self._reads)
                if self._cuda_graph is not None:
                    try:
                        with stream.context():
                            self._cuda_graph.replay()
                    finally:
                        entry.set_enqueued()
                    stream.synchronize()
                else:
                    with execution():
                        for _, fn in self._steps:
                            fn(stream)
                completed = True
            finally:
                # on the GPU, work submitted but not waited for (an interrupted wait) leaves the entry
                # until the stream is seen idle
                if completed or not entry.on_gpu or not entry.enqueued:
                    REGISTRY.remove(entry)
            self.replays += 1
        finally:
            self._end(owned, label)

    def close(self) -> None:
        """Release the graph: it can no longer be replayed, its memory may become Shared, and the
        Shared handles it read may be unwrapped (waits for a replay running in another thread)."""
        with self._lock:
            self._close()

    def _close(self, by_borrow: bool = False) -> None:
        with OWNERSHIP:
            self._closed = True
            self._borrow_closed = by_borrow
            self._cuda_graph = None
        self._held()

    def _borrow_ended(self) -> None:
        """A borrow whose partition it replays has ended (``MutBorrow.__exit__``): no replay can
        run again, so it is closed, as ``close()`` would, and its memory may become Shared (a
        replay is refused by the released partition, naming the borrow)."""
        with self._lock:
            if not self._closed and any((p := base_partition(v)) is not None and p._released for v in self._owned):
                self._close(by_borrow=True)

    replay = launch

    def update(self, op: DeviceOp) -> Graph:
        """Re-capture from ``op`` on the same stream (returns self); what the old capture held is released."""
        captured = _record(op, self.stream)
        with self._lock:
            self._close()
            try:
                self._setup(*captured)
            except BaseException:
                captured[0].rollback()
                raise
        return self

    @property
    def label(self) -> str:
        return f"a graph of {self.num_ops} op(s) on {self.stream.device}"

    def __repr__(self) -> str:
        return f"<safetile Graph: {self.num_ops} op(s) on {self.stream.device}>"


class GraphScope(NoCopy):
    """Records several operations into one graph (see ``ct.graph_scope``)."""

    label = "a graph scope"

    def __init__(self, stream: Stream | None = None):
        self._given = stream  # the stream asked for, if any
        self._stream = stream
        self._rec = Recorder()
        self._values: list[Any] = []
        self.graph: Graph | None = None
        self._open = False  # pragma: no mutate (read only for its truth: None would read the same)

    def __enter__(self) -> GraphScope:
        _check_terminal("graph_scope()")
        self._open = True
        return self

    def record(self, op: DeviceOp) -> Any:
        """Record ``op`` and return its value (tensors and partitions to build the next op with)."""
        if not self._open:
            raise GraphCaptureError("record() is only possible inside `with ct.graph_scope() as g:`")
        if not isinstance(op, DeviceOp):
            raise ArgumentError(f"record expects a DeviceOp, got {type(op).__name__}")
        if self._stream is None:
            self._stream = default_pool(op._device()).next()
        ctx = ExecContext(self._stream, self._rec, label="a graph scope's record()")
        try:
            with execution(ctx):
                v = op._run(ctx)
        except BaseException:
            ctx.rollback()
            raise
        finally:
            ctx.finish(True)
        self._rec.undo += ctx.undo
        self._values.append(v)
        return v

    def __exit__(self, et, ev, tb) -> Literal[False]:  # never swallows an exception
        self._open = False  # pragma: no mutate (read only for its truth: None would read the same)
        if et is not None:  # no graph: what the records moved goes back
            self._rec.rollback()
        else:
            try:
                stream = _stream_for(self._rec.device, self._given, "graph_scope()")
                self.graph = Graph(self._rec, tuple(self._values), stream)
            except BaseException:
                self._rec.rollback()
                raise
        return False  # one return: the exception of the block (if any) goes on

    def launch(self) -> Any:
        if self.graph is None:
            raise GraphCaptureError("the graph scope is still open (or failed); launch after the with-block")
        return self.graph.launch()


def graph_scope(stream: Stream | None = None) -> GraphScope:
    """``with ct.graph_scope() as g: g.record(op)...`` then ``g.graph.launch()``."""
    return GraphScope(stream)
