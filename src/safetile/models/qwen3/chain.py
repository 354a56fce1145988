"""A forward pass as one DeviceOp: launches chained over named buffers.

Safe-style launches move their tensors in and give them back. ``Chain`` keeps the model's
buffers by name and builds a left-deep ``then`` chain in which each step takes the
tensors it needs out of the pool (partitioning its outputs), launches one kernel, and
puts them back. The chain is an ordinary DeviceOp: ``sync()`` runs it once (the prefill),
``graph()`` captures it once to replay per token (the decode step); its host closures run
once, at capture.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import safetile as ct


@dataclass(frozen=True)
class Out:
    """A pool tensor passed as a mutable partition of ``shape`` (``prefix``: leading axes only)."""

    name: str
    shape: tuple[int, ...]
    prefix: bool = False


@dataclass(frozen=True)
class In:
    """A pool tensor passed read-only."""

    name: str


@dataclass(frozen=True)
class Own:
    """A pool tensor moved whole into an operation that writes it in place (a collective)."""

    name: str


class Chain:
    """Named tensors threaded through a chain of launches (see the module docstring)."""

    def __init__(self, pool: dict[str, ct.Tensor]):
        self.pool = pool
        self.op: ct.DeviceOp = ct.empty()
        self.launches: list[str] = []
        self._out: dict[str, Any] = {}  # what a running step has taken from the pool (see recover)

    def launch(self, kernel: Any, *args: Any) -> None:
        """Append ``kernel(*args)``: ``Out``/``In``/``Own`` name pool tensors, anything else passes as
        is. ``kernel`` returns a DeviceOp whose value gives its arguments back (a tuple in argument
        order, or the one argument)."""
        pool, out = self.pool, self._out

        def step(_):
            real: list[Any] = []  # the kernel's arguments: pool tensors, their partitions, anything else
            for a in args:
                if isinstance(a, (Out, In, Own)):
                    t = pool.pop(a.name)
                    out[a.name] = t
                    if isinstance(a, Out):
                        part = out[a.name] = t.partition_prefix(a.shape) if a.prefix else t.partition(a.shape)
                        real.append(part)
                    else:
                        real.append(t)
                else:
                    real.append(a)

            def give_back(values):
                for a, v in zip(args, values if isinstance(values, tuple) else (values,)):
                    if isinstance(a, (Out, In, Own)):
                        pool[a.name] = v.unpartition() if isinstance(a, Out) else v
                        out.pop(a.name, None)
            return kernel(*real).map(give_back)
        self.op = self.op.then(step)
        self.launches.append(kernel.__name__)

    def recover(self) -> None:
        """After a failed run: put back what the failing step took (a rejected launch gives its
        arguments back unchanged), so the buffers stay usable."""
        for name, v in list(self._out.items()):
            self.pool[name] = v.unpartition() if isinstance(v, (ct.Partition,)) else v
            del self._out[name]
