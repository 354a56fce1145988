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


class Chain:
    """Named tensors threaded through a chain of launches (see the module docstring)."""

    def __init__(self, pool: dict[str, ct.Tensor]):
        self.pool = pool
        self.op: ct.DeviceOp = ct.empty()
        self.launches: list[str] = []

    def launch(self, kernel: Any, *args: Any) -> None:
        """Append ``kernel(*args)``: ``Out``/``In`` name pool tensors, anything else passes as is."""
        pool = self.pool

        def step(_):
            real = []
            for a in args:
                if isinstance(a, Out):
                    t = pool.pop(a.name)
                    real.append(t.partition_prefix(a.shape) if a.prefix else t.partition(a.shape))
                elif isinstance(a, In):
                    real.append(pool.pop(a.name))
                else:
                    real.append(a)

            def give_back(values):
                for a, v in zip(args, values):
                    if isinstance(a, Out):
                        pool[a.name] = v.unpartition()
                    elif isinstance(a, In):
                        pool[a.name] = v
            return kernel(*real).map(give_back)
        self.op = self.op.then(step)
        self.launches.append(kernel.__name__)
