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

import threading
from typing import Any, Callable

from .claims import CLAIMS, WRITABLE
from .deviceop import DeviceOp, ExecContext, _check_terminal
from .errors import GraphCaptureError
from .memory import REGISTRY, Extent, InFlight
from .streams import Stream, default_pool, execution


class Recorder:
    """Collects the steps of a capture."""

    def __init__(self):
        self.steps: list[tuple[str, Callable[[Stream], None]]] = []
        # distinct extents, in first-use order (a chain of N launches on the same tensors has as many
        # extents as one launch, so per-replay bookkeeping does not grow with N)
        self.writes: dict[Extent, None] = {}
        self.reads: dict[Extent, None] = {}
        self.device: str | None = None

    def record(self, label: str, fn: Callable[[Stream], None], writes: list[Extent], reads: list[Extent],
               device: str) -> None:
        if self.device is not None and device != self.device:
            raise GraphCaptureError(f"{label}: a graph runs on one device ({self.device}), not {device}")
        self.device = device
        self.steps.append((label, fn))
        for e in writes:
            self.writes[e] = None
        for e in reads:
            self.reads[e] = None

    def reject(self, label: str, why: str = "it allocates memory") -> None:
        raise GraphCaptureError(f"{label} cannot be recorded into a graph: {why}; allocate before capturing "
                                "and refresh inputs with ct.memcpy(dst, src)")


class Graph:
    """A captured sequence of device work; ``launch()`` replays it and returns its value."""

    def __init__(self, recorder: Recorder, value: Any, stream: Stream):
        self._steps = recorder.steps
        self._writes = list(recorder.writes)
        self._reads = [e for e in recorder.reads if e not in recorder.writes]
        self._label = f"graph replay ({len(self._steps)} ops)"
        self.value = value
        self.stream = stream
        self._cuda_graph = None
        self._lock = threading.Lock()
        self.replays = 0
        # while the graph lives its replays may write this memory: it can never become Shared meanwhile
        self._claim = CLAIMS.claim(self, WRITABLE, self._writes, f"a graph ({len(self._steps)} ops) whose replays "
                                   "write it (close it with g.close())", "capturing the graph is refused")
        self._closed = False
        if stream.is_cuda and self._steps:
            self._capture_cuda()

    @classmethod
    def capture(cls, op: DeviceOp, stream: Stream | None = None) -> "Graph":
        op._refuse("graph()")
        if stream is None:
            stream = default_pool(op._device()).next()
        rec = Recorder()
        ctx = ExecContext(stream, rec, label="a graph capture")
        try:
            with execution(ctx):
                value = op._run(ctx)
        finally:
            ctx.finish(True)
        return cls(rec, value, stream)

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

        The replay claims its memory in the in-flight registry for its whole duration (CPU
        and GPU alike): conflicting launches, replays and host reads wait for it."""
        _check_terminal("Graph.launch()")
        if self._closed:
            raise GraphCaptureError(f"{self!r} was closed; it cannot be replayed")
        stream = self.stream
        entry = InFlight(self._label, stream)
        REGISTRY.claim(entry, self, self._writes, self._reads)
        try:
            if self._cuda_graph is not None:
                with stream.context():
                    self._cuda_graph.replay()
                entry.set_enqueued()
                stream.synchronize()
            else:
                def replay():
                    with execution():
                        for _, fn in self._steps:
                            fn(stream)
                stream.run(replay)
        finally:
            REGISTRY.remove(entry)
        with self._lock:
            self.replays += 1
        return self.value

    def close(self) -> None:
        """Release the graph: it can no longer be replayed, and its memory may become Shared."""
        self._closed = True
        CLAIMS.release(self._claim)
        self._cuda_graph = None

    replay = launch

    def update(self, op: DeviceOp) -> "Graph":
        """Re-capture from ``op`` on the same stream (returns self)."""
        g = Graph.capture(op, self.stream)
        self.close()
        self.__dict__.update(g.__dict__)
        self._claim = CLAIMS.claim(self, WRITABLE, self._writes, "a graph whose replays write it",
                                   "updating the graph is refused")
        g.close()
        return self

    def __repr__(self) -> str:
        return f"<safetile Graph: {self.num_ops} op(s) on {self.stream.device}>"


class GraphScope:
    """Records several operations into one graph (see ``ct.graph_scope``)."""

    def __init__(self, stream: Stream | None = None):
        self._stream = stream
        self._rec = Recorder()
        self._values: list[Any] = []
        self.graph: Graph | None = None
        self._open = False

    def __enter__(self) -> "GraphScope":
        _check_terminal("graph_scope()")
        self._open = True
        return self

    def record(self, op: DeviceOp) -> Any:
        """Record ``op`` and return its value (tensors and partitions to build the next op with)."""
        if not self._open:
            raise GraphCaptureError("record() is only possible inside `with ct.graph_scope() as g:`")
        if not isinstance(op, DeviceOp):
            raise TypeError(f"record expects a DeviceOp, got {type(op).__name__}")
        if self._stream is None:
            self._stream = default_pool(op._device()).next()
        ctx = ExecContext(self._stream, self._rec, label="a graph scope's record()")
        try:
            with execution(ctx):
                v = op._run(ctx)
        finally:
            ctx.finish(True)
        self._values.append(v)
        return v

    def __exit__(self, et, ev, tb) -> bool:
        self._open = False
        if et is None:
            stream = self._stream or default_pool(None).next()
            self.graph = Graph(self._rec, tuple(self._values), stream)
        return False

    def launch(self) -> Any:
        if self.graph is None:
            raise GraphCaptureError("the graph scope is still open (or failed); launch after the with-block")
        return self.graph.launch()


def graph_scope(stream: Stream | None = None) -> GraphScope:
    """``with ct.graph_scope() as g: g.record(op)...`` then ``g.graph.launch()``."""
    return GraphScope(stream)
