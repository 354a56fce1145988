"""DeviceOp: lazy device work (launches, allocations, copies) and its combinators.

Nothing runs when a DeviceOp is built. Combinators build bigger operations:
``then(f)`` (``f`` gets the value and may return another DeviceOp, run on the same
stream), ``map(f)``, ``inspect(f)``, ``ct.zip(a, b, ...)`` / ``unzip()``, ``first()`` /
``last()``, ``shared()`` (runs at most once; tensors in its value become read-only
``Shared`` handles). Terminals drive it: ``sync()`` (next stream of the default pool),
``sync_on(stream)``, ``await op`` (asyncio; CPU work runs on the stream's worker thread,
GPU work is polled through a CUDA event, so the event loop never blocks) and
``graph()`` (capture once, replay many). Calling a terminal while a DeviceOp executes
(e.g. ``sync()`` inside a ``then`` closure) raises ``NestedSyncError``.
"""
from __future__ import annotations

import asyncio
from typing import Any
from collections.abc import Callable

from .errors import DeviceOpError, LaunchTypeError, NestedSyncError
from .memory import REGISTRY, InFlight, notify_all, wait_until
from .ownership import OWNERSHIP, Handle, LazyText
from ..runtime.interrupts import interruptible
from .streams import Stream, default_pool, executing, execution, wait_done
from ..locks import FORK_LOCKS


class ExecContext:
    """Where an operation runs: its stream, the graph recorder while capturing, and the
    in-flight entry covering the memory its launches use (one per terminal).

    A terminal that was not given a stream (``sync()``, ``await``) starts on a stream of the
    operation's device; when that is not known (a chain starting with ``ct.empty()``) it starts
    on the CPU and moves to a stream of the device of the first GPU work it drives (``switch``).
    A stream given by the caller (``sync_on``) is kept: GPU work of another device is refused."""

    __slots__ = ("stream", "recorder", "entry", "lent", "label", "ended", "pinned", "_entered", "undo", "keep",
                 "aliases", "stream_facts")

    def __init__(self, stream: Stream, recorder: Any = None, *, label: Any, pinned: bool = True):
        self.stream = stream
        self.recorder = recorder  # graph.Recorder while capturing
        self.entry: InFlight | None = None
        self.lent: list = []  # values given back while it runs (see Owned._give_back)
        self.label = label
        self.ended = False
        self.pinned = pinned  # the stream was chosen by the caller
        self._entered: list = []  # stream contexts entered by switch(), left by leave()
        # what undoes the moves safetile's combinators made while it ran (``op.shared()`` turning values
        # into Shared handles, ``op.partition()``): run if the terminal fails or its capture is refused,
        # so no argument stays moved into a handle nobody holds (``rollback``)
        self.undo: list[Callable[[], None]] = []
        # the memory of the GPU work it submitted (each launch's runtime arguments, each step): a launch's
        # arguments may be dropped by the next step while the GPU still runs it, and torch's allocator
        # would hand their memory to work on another stream; held until the terminal's work is over
        self.keep: list = []
        # the C launch path's alias of each raw torch tensor passed to its launches, made once per
        # terminal and reused while the tensor shows the same facts (safe/native_source.py)
        self.aliases: dict = {}
        self.stream_facts: tuple | None = None  # the C run's (stream, device, device_index, handle) of its stream

    @property
    def capturing(self) -> bool:
        return self.recorder is not None

    def begin(self, what: Any, key: Any, writes, reads, device: str | None = None) -> InFlight:
        """Before submitting the work ``what`` on these extents (on ``device``): claim them for this
        terminal's in-flight entry (made by its first launch), atomically with ordering the work after
        conflicting work of other terminals (``Registry.claim``). Call ``set_enqueued()`` on the
        returned entry once the work is submitted."""
        if device is not None and device != self.stream.device:
            self.switch(device, what)
        e = self.entry
        if e is None:
            e = self.entry = InFlight(what, self.stream)
        REGISTRY.claim(e, key, writes, reads)
        return e

    def keep_runtime(self, runtime: tuple) -> None:
        """Keep a launch's runtime arguments until the work is over; not again when the last kept
        are the same objects (a chain launching one kernel on the same memory keeps one tuple, not
        one per launch: fewer objects for the cyclic collector to walk). The C run does the same."""
        keep = self.keep
        if keep:
            last = keep[-1]
            if last is runtime or (type(last) is tuple and len(last) == len(runtime)
                                   and all(last[i] is runtime[i] for i in range(len(runtime)))):
                return
        keep.append(runtime)

    def submit(self, op: Any, step: Callable[[Stream], None], writes, reads, device: str,
               values=(), raw=(), pins=()) -> None:
        """Run a host-built step (a copy, a collective) on this terminal's stream after claiming its
        extents, or record it into the graph being captured (``values``/``raw``/``pins`` as for
        ``Recorder.record``)."""
        if self.capturing:
            self.recorder.record(op.label, step, writes, reads, device, values, raw, pins)
            return
        entry = self.begin(op, op, writes, reads, device)
        if self.stream.is_cuda:
            self.keep.append(step)  # what the step runs on, alive until the work is over
        try:
            step(self.stream)
        finally:
            entry.set_enqueued()

    def switch(self, device: str, what: Any) -> None:
        """Work of ``what`` runs on ``device``, not on this terminal's stream's device. Host work in
        a GPU terminal runs where it is (synchronously); a terminal on a CPU stream it was not given
        moves to a stream of ``device`` (its CPU work so far has all run: CPU work runs while it
        is submitted); anything else is refused: one terminal never drives GPU work from a CPU
        stream, or work of one GPU from another's stream."""
        s = self.stream
        if device == "cpu" and s.is_cuda:
            return
        if s.is_cuda or self.pinned:
            raise DeviceOpError(f"{what} runs on {device}, but this terminal drives {s!r}"
                                + (" (the stream given to it)" if self.pinned else "")
                                + f"; drive it on a stream of {device} (ct.Stream({device!r}))")
        if self.entry is not None:
            REGISTRY.remove(self.entry)
            self.entry = None
        self.stream = default_pool(device).next()
        cm = self.stream.context()
        cm.__enter__()
        self._entered.append(cm)

    def leave(self) -> None:
        """Leave the stream contexts ``switch`` entered (the terminal's execution ends)."""
        while self._entered:
            self._entered.pop().__exit__(None, None, None)

    def finish(self, completed: bool) -> None:
        """The terminal has ended: ``retire`` its in-flight entry and ``end`` its hold on the values."""
        self.retire(completed)
        self.end()

    def retire(self, completed: bool) -> None:
        """The terminal's work has ended: its in-flight entry goes when that work is known to be over:
        the terminal waited for it (``completed``), or on the CPU, where nothing outlives the
        terminal's own thread. (After a failure on the GPU the entry stays until its stream is seen
        idle: host reads of that memory wait.) A failed terminal delivers no value: what its
        combinators moved is given back (``rollback``)."""
        if not completed:
            self.rollback()
        self.aliases.clear()
        keep, self.keep = self.keep, []
        e = self.entry
        if e is None:
            return
        if not e.enqueued:  # interrupted between a claim and its submission: nothing of it was submitted,
            e.set_enqueued()  # and what was submitted before is covered by the stream's event
        if completed or not self.stream.is_cuda:
            REGISTRY.remove(e)
        elif keep:
            e.keep = e.keep + keep  # GPU work that may still run: its memory lives until it is seen over

    def rollback(self) -> None:
        """Undo the combinators' moves (latest first): the terminal failed, or its capture was refused."""
        undo, self.undo = self.undo, []
        for step in reversed(undo):
            step()

    def end(self) -> None:
        """What the terminal gave back is free for everyone (its result has been handed over)."""
        lent = self.lent
        if lent:
            with OWNERSHIP:
                for v in lent:
                    if v._lent is self:
                        v._lent = None
                lent.clear()
        self.ended = True
        notify_all()

    def wait_ended(self) -> None:
        """Block until this terminal has ended (not when called from inside it)."""
        from .streams import current_context
        if current_context() is not self:
            wait_until(lambda: self.ended)


def _await_of(op: DeviceOp) -> str:
    return f"an unfinished await of {op.label}"


def _check_terminal(what: str) -> None:
    if executing():
        raise NestedSyncError(f"{what} called while a device operation is executing (e.g. inside a then() "
                              "closure): return the DeviceOp from the closure instead, and it runs on the "
                              "same stream")


class DeviceOp(Handle):
    """A lazy unit of device work producing a value (``copy.copy(op)`` is ``op``: it still runs once)."""

    __slots__ = ("__dict__", "__weakref__")  # subclasses may declare slots of their own (LaunchOp)
    arity: int | None = None  # the length of the tuple it produces, when known

    # ------------------------------------------------------------------ to implement

    def _run(self, ctx: ExecContext) -> Any:
        raise NotImplementedError

    def _device(self) -> str | None:
        """The device this work runs on, if it knows (used to pick the stream pool)."""
        return None

    def _abandon(self) -> None:
        """A terminal refused to drive this op: give back whatever it holds (nothing ran)."""
        for child in self._children():
            child._abandon()

    def _children(self) -> tuple[DeviceOp, ...]:
        return ()

    def _refuse(self, what: str) -> None:
        if executing():
            self._abandon()
            _check_terminal(what)

    @property
    def label(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<safetile DeviceOp {self.label}>"

    # ------------------------------------------------------------------ combinators

    def then(self, f: Callable[[Any], Any]) -> DeviceOp:
        """Run ``f(value)`` after this op; if it returns a DeviceOp, run that on the same stream."""
        return Then(self, f)

    def map(self, f: Callable[[Any], Any]) -> DeviceOp:
        """Transform the value on the host: ``f(value)``."""
        return Map(self, f, "map")

    def inspect(self, f: Callable[[Any], Any]) -> DeviceOp:
        """Call ``f(value)`` for its side effect and pass the value on unchanged."""
        return Map(self, f, "inspect")

    def first(self) -> DeviceOp:
        """The first element of a tuple value."""
        return Map(self, lambda v: _item(v, 0, "first"), "first")

    def last(self) -> DeviceOp:
        """The last element of a tuple value."""
        return Map(self, lambda v: _item(v, -1, "last"), "last")

    def unzip(self, n: int | None = None) -> tuple[DeviceOp, ...]:
        """Split an op producing an ``n``-tuple into ``n`` ops (the work still runs once)."""
        if n is None:
            n = self.arity
            if n is None:
                raise DeviceOpError("unzip(): the number of outputs is not known; pass it: op.unzip(n)")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise DeviceOpError(f"unzip(n): n is the number of outputs (an integer >= 0), got {n!r}")
        if self.arity not in (None, n):
            raise DeviceOpError(f"unzip({n}): the operation produces {self.arity} values, not {n}")
        memo = Memo(self, wrap_shared=False)  # pragma: no mutate (None: as falsy as False)
        return tuple(Map(memo, (lambda v, i=i: _item(v, i, "unzip", n)), f"unzip[{i}]") for i in range(n))

    def shared(self) -> DeviceOp:
        """Runs at most once however many consumers drive it; tensors come out as ``Shared``."""
        return Memo(self, wrap_shared=True)

    def partition(self, shape) -> DeviceOp:
        """``op.map(lambda t: t.partition(shape))`` for ops producing a tensor (undone if the terminal fails)."""
        return PartitionStep(self, shape)

    def boxed(self) -> DeviceOp:
        return self

    # ------------------------------------------------------------------ terminals

    def _pick_stream(self) -> Stream:
        return default_pool(self._device()).next()

    def _execute_on(self, ctx: ExecContext) -> Any:
        with execution(ctx), ctx.stream.context():
            try:
                return self._run(ctx)
            finally:
                ctx.leave()

    def sync(self) -> Any:
        """Run on the next stream of the default pool (of the op's device) and wait for the result."""
        self._refuse("sync()")
        return self._drive(self._pick_stream(), False)  # pragma: no mutate (None: as falsy as False)

    def sync_on(self, stream: Stream) -> Any:
        """Run on ``stream`` and wait for the result."""
        self._refuse("sync_on()")
        if not isinstance(stream, Stream):
            raise LaunchTypeError(f"sync_on expects a ct.Stream, got {type(stream).__name__}")
        return self._drive(stream, True)

    def _drive(self, stream: Stream, pinned: bool) -> Any:
        ctx = ExecContext(stream, label="a running sync_on()" if pinned else "a running sync()", pinned=pinned)
        if not stream.runs_inline():  # behind other work on a CPU stream: its worker runs it
            fut = stream.submit(lambda: self._job(ctx))
            try:
                value = wait_done(fut)
            except BaseException:
                _let_go(stream, fut, ctx)
                raise
            ctx.end()
            return value
        completed = False  # pragma: no mutate (read only for its truth: None would read the same)
        try:
            value = self._execute_on(ctx)
            ctx.stream.synchronize()  # the stream it ended on (a chain may move to its GPU's stream)
            completed = True
        finally:
            ctx.finish(completed)
        return value

    def _job(self, ctx: ExecContext) -> Any:
        """The terminal's work, run on its CPU stream's worker thread: it retires the in-flight entry
        itself when the work is over, whoever waits for it (the waiter may have been interrupted)."""
        completed = False  # pragma: no mutate (read only for its truth: None would read the same)
        try:
            v = self._execute_on(ctx)
            if ctx.stream.is_cuda:  # the chain moved to its GPU's stream: wait here, not in the waiter
                ctx.stream.synchronize()
            completed = True
            return v
        finally:
            ctx.retire(completed)

    def _job_for_asyncio(self, ctx: ExecContext) -> Any:
        """``_job`` with a StopIteration from a closure raised as a DeviceOpError: an asyncio future
        cannot hold a StopIteration (asyncio refuses it in a callback), so the awaiting coroutine
        would never resume (a coroutine's own StopIteration becomes a RuntimeError the same way)."""
        try:
            return self._job(ctx)
        except StopIteration as e:
            raise DeviceOpError(f"a closure of {self.label} raised StopIteration, which an awaited "
                                "operation cannot pass on") from e

    def __await__(self):
        return self._await().__await__()

    async def _await(self) -> Any:
        self._refuse("await")
        stream = self._pick_stream()
        ctx = ExecContext(stream, label=LazyText(_await_of, self), pinned=False)
        if not stream.is_cuda:
            loop = asyncio.get_running_loop()
            fut = stream.submit(lambda: self._job_for_asyncio(ctx))

            def end_if_closed(_: Any) -> None:
                # a loop closed before the work ends never resumes this coroutine: the values are free then
                if loop.is_closed():
                    ctx.end()
            fut.add_done_callback(end_if_closed)
            try:
                value = await asyncio.wrap_future(fut)
            except BaseException:
                _let_go(stream, fut, ctx)
                raise
            # resumed: the values the work gave back belong to this coroutine from now on (until
            # here no other coroutine could take them, even after the work ended)
            ctx.end()
            return value
        import torch
        completed = False  # pragma: no mutate (read only for its truth: None would read the same)
        try:
            value = self._execute_on(ctx)
            event = torch.cuda.Event()
            event.record(ctx.stream.torch_stream)
            while not event.query():
                await asyncio.sleep(2e-5)
            completed = True
            return value
        finally:
            ctx.finish(completed)

    def graph(self, stream: Stream | None = None):
        """Capture this operation into a replayable graph (see ``ct.Graph``)."""
        self._refuse("graph()")
        from .graph import Graph
        return Graph.capture(self, stream)

    graph_on = graph


def _let_go(stream: Stream, fut: Any, ctx: ExecContext) -> None:
    """The waiter of a terminal's job on a stream worker stops waiting (KeyboardInterrupt, a cancelled
    task, a failure of the work): a job that has not started never runs (the op keeps its arguments:
    ``op.cancel()`` or another terminal); one that has started finishes, retiring its in-flight entry
    itself, and the values it gave back are free once it has ended, not before. Its value reaches no
    one, so a job that succeeds is rolled back like a failed one."""
    stream.withdraw(fut)

    def ended(f: Any) -> None:
        if not f.cancelled() and f.exception() is None:
            # the work succeeded but its value reaches nobody: the combinators' moves (a Shared made,
            # a partition unpartitioned or made) are undone, as for a failed terminal (``rollback``)
            ctx.rollback()
        ctx.end()
    fut.add_done_callback(ended)


def _seq(v, what):
    if not isinstance(v, (tuple, list)):
        raise DeviceOpError(f"{what}() needs an operation producing a tuple, got {type(v).__name__}")
    return v


def _item(v, i: int, what: str, n: int | None = None):
    """Element ``i`` of a tuple value (of length ``n`` where the caller said so)."""
    v = _seq(v, what)
    if (n is not None and len(v) != n) or not -len(v) <= i < len(v):
        raise DeviceOpError(f"{what}(): the operation produced {len(v)} values"
                            + (f", not {n}" if n is not None else ""))
    return v[i]


class Value(DeviceOp):
    """``ct.value(x)``: an operation producing ``x`` (no device work)."""

    def __init__(self, value: Any):
        self.value = value

    def _run(self, ctx):
        return self.value

    @property
    def label(self) -> str:
        return f"value({type(self.value).__name__})"


def value(x: Any) -> DeviceOp:
    """A DeviceOp producing ``x``."""
    return Value(x)


def empty() -> DeviceOp:
    """A DeviceOp producing ``None`` (no work)."""
    return Value(None)


def _spine(op: DeviceOp) -> tuple[DeviceOp, list[Then | Map]]:
    """The innermost non-chain op under a left-deep chain of then/map, and the chain (outer first).

    Chains of thousands of ``then`` calls are walked iteratively, never recursively.
    """
    chain: list[Then | Map] = []
    while isinstance(op, (Then, Map)):
        chain.append(op)
        op = op.op
    return op, chain


class _Chained(DeviceOp):
    op: DeviceOp

    def _device(self):
        base, _ = _spine(self)
        return base._device()

    def _children(self):
        return (_spine(self)[0],)

    def _run(self, ctx):
        # iterative: the steps still to apply are one stack, and an op returned by a then closure
        # (the asynchronous-loop idiom) pushes its own steps on top of it instead of recursing
        steps: list[Then | Map] = []
        op: DeviceOp = self
        while True:
            base, chain = _spine(op)
            steps.extend(chain)  # outer first: the innermost step is popped first
            v = base._run(ctx)
            while steps:
                node = steps.pop()
                v = node._apply(v, ctx)  # through _apply: a Ctrl-C in the user's closure is raised there at once
                if isinstance(v, DeviceOp):  # only Then returns an op: run it, then the remaining steps
                    if isinstance(v, _Chained):
                        op = v
                        break
                    v = v._run(ctx)  # a launch (the chained-launch idiom): no spine to walk
            else:
                return v

    @property
    def label(self) -> str:
        base, chain = _spine(self)
        return f"{base.label} followed by {len(chain)} step(s)"


def _callable(f: Any, what: str) -> Callable:
    if not callable(f):
        raise DeviceOpError(f"{what}() takes a function of the value, got {type(f).__name__}")
    return f


class Then(_Chained):
    def __init__(self, op: DeviceOp, f: Callable):
        # the chained-launch idiom's hot path: no call when f is callable (issue 9's host cost); the C
        # twin's ``then`` (safe/native_methods.py) makes a Then as this does: ``op`` and ``f`` set, nothing else
        self.op, self.f = op, f if callable(f) else _callable(f, "then")  # pragma: no mutate

    @interruptible  # the user's closure: its callers handle any exception from it
    def _apply(self, v, ctx):
        return self.f(v)  # a DeviceOp returned here is run by _Chained._run


class Map(_Chained):
    def __init__(self, op: DeviceOp, f: Callable, name: str):
        self.op, self.f, self.name = op, _callable(f, name), name
        if name == "inspect":
            self.arity = op.arity

    @interruptible  # the user's closure: its callers handle any exception from it
    def _apply(self, v, ctx):
        r = self.f(v)
        if self.name == "inspect":  # called for its side effect: the value passes on unchanged
            return v
        if isinstance(r, DeviceOp):
            raise DeviceOpError(f"{self.name}() closure returned a DeviceOp; use then() to chain device work")
        return r


class PartitionStep(Map):
    """``op.partition(shape)``: the partition is given back to a tensor if the terminal fails."""

    def __init__(self, op: DeviceOp, shape: Any):
        super().__init__(op, lambda t: t, "partition")
        self.shape = shape

    def _apply(self, v, ctx):
        return _partition(v, self.shape, ctx)


class Zip(DeviceOp):
    def __init__(self, ops: tuple[DeviceOp, ...]):
        self.ops = ops
        self.arity = len(ops)

    def _children(self):
        return self.ops

    def _device(self):
        for op in self.ops:
            d = op._device()
            if d is not None:
                return d
        return None

    def _run(self, ctx):
        return tuple(op._run(ctx) for op in self.ops)

    @property
    def label(self) -> str:
        return f"zip({', '.join(op.label for op in self.ops)})"


def zip(*ops: Any) -> DeviceOp:  # noqa: A001 - ct.zip, like cuTile Rust's zip!
    """Combine operations (or plain values) into one producing the tuple of their values."""
    return Zip(tuple(o if isinstance(o, DeviceOp) else Value(o) for o in ops))


def _partition(t: Any, shape: Any, ctx: ExecContext) -> Any:
    """``t.partition(shape)`` for ``op.partition``: undone (the tensor given back) if the terminal fails."""
    from .partition import Partition
    p = t.partition(shape)
    if isinstance(p, Partition):
        ctx.undo.append(lambda: _unpartition_unused(p))
    return p


def _unpartition_unused(p: Any) -> None:
    from .claims import CLAIMS
    from .partition import GivenBack
    with OWNERSHIP:
        if p._moved is None and not p._released and not p._borrowed:  # nobody has taken it further
            p._move(GivenBack(f"its {p._tensor.label}", "unpartition"))
            CLAIMS.release(p._claim)
            p._tensor._give_back()


def _share(v: Any, undo: list) -> Any:
    """The value every consumer of ``op.shared()`` gets: read-only. Tensors become ``Shared``; a
    partition gives its tensor back first (one mutable partition handed to several consumers
    would be a writable alias); a borrowed partition cannot be shared (its borrow must end).
    Every move is written to ``undo`` (latest last), so that ``_unshare`` can give it all back."""
    from .partition import MappedPartition, Partition, Shared
    from .tensor import Tensor
    if isinstance(v, Tensor):
        s = Shared._take(v)
        undo.append(("shared", s))
        return s
    if isinstance(v, MappedPartition):
        p = v.unmap()
        undo.append(("unmapped", v))
        v = p
    if isinstance(v, Partition):
        if v._borrowed:
            raise DeviceOpError(f".shared(): {v.label} is borrowed (ct.borrow_mut); a borrowed partition cannot "
                                "become shared: release it and share the tensor")
        t = v.unpartition()
        undo.append(("unpartitioned", v))
        return _share(t, undo)
    if isinstance(v, tuple):
        return tuple(_share(x, undo) for x in v)
    if isinstance(v, list):
        return [_share(x, undo) for x in v]
    if isinstance(v, dict):
        return {k: _share(x, undo) for k, x in v.items()}
    return v


def _unshare(undo: list) -> bool:
    """Give back what ``_share`` moved: every ``Shared`` it made is unwrapped (its tensor usable
    again), and a partition it unpartitioned (unmapped) keeps its tensor (partition) given back:
    its ``unpartition()`` (``unmap()``) returns it, for whichever of the two the caller holds. All
    or nothing: False (nothing changed) if a ``Shared`` it made is held or was unwrapped since
    (its value is in use)."""
    from .claims import CLAIMS
    from .partition import GivenBack
    with OWNERSHIP:
        if any(kind == "shared" and (x._holders or x._unwrapped is not None) for kind, x in undo):
            return False
        for kind, x in reversed(undo):
            if kind == "shared":
                x._unwrapped = "the failed terminal that made it (its tensor was given back)"
                CLAIMS.release(x._claim)
                x._tensor._give_back()
            elif kind == "unpartitioned":
                x._moved = GivenBack(f"its {x._tensor.label}", "unpartition")
            else:  # "unmapped"
                x._moved = GivenBack(f"its {x._partition.label}", "unmap")
    return True


class Memo(DeviceOp):
    """Runs the inner operation at most once; later runs return the same value."""

    def __init__(self, op: DeviceOp, wrap_shared: bool):
        self.op = op
        self.wrap_shared = wrap_shared
        self.arity = op.arity
        self._lock = FORK_LOCKS.new(reentrant=True)
        self._done = False
        self._value: Any  # set with _done
        # (a torch.cuda.Event after the producing stream's work, that stream): the value is ready on a GPU
        self._ready: tuple[Any, Stream] | None = None
        self._error: BaseException | None = None

    def _children(self):
        return () if self._done else (self.op,)

    def _device(self):
        return self.op._device()

    def _run(self, ctx):
        with self._lock:
            if self._error is not None:
                raise DeviceOpError(f"{self.label} failed earlier: {self._error}") from self._error
            if not self._done:
                undo: list = []
                try:
                    v = self.op._run(ctx)
                    if self.wrap_shared:
                        v = _share(v, undo)
                except BaseException as e:
                    _unshare(undo)  # a refusal midway: what was already shared is given back
                    self._error = e
                    raise
                self._value = v
                self._done = True
                if undo:
                    ctx.undo.append(lambda: self._rollback(undo))
                if ctx.stream.is_cuda and not ctx.capturing:
                    import torch
                    event = torch.cuda.Event()
                    event.record(ctx.stream.torch_stream)
                    self._ready = (event, ctx.stream)
                return self._value
        if self._ready is not None and ctx.stream is not self._ready[1]:
            ctx.stream.torch_stream.wait_event(self._ready[0])
        return self._value

    def _rollback(self, undo: list) -> None:
        """The terminal that ran it failed, or its capture was refused: the value was never delivered,
        so the values it made shared go back to their owners (unless the value is in use meanwhile)."""
        with self._lock:
            if self._done and _unshare(undo):
                self._done = False
                self._value = None
                self._error = DeviceOpError("the terminal that ran it failed (or its graph capture was refused), "
                                            "and the values it had made shared were given back")

    @property
    def label(self) -> str:
        return f"{self.op.label}.shared()"
