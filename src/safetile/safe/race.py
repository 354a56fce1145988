"""The CPU race detector for unchecked kernels (opt-in).

While a kernel runs on the CPU backend, the detector records which elements every tile
block writes (through the store/scatter lowerings' ``record_tile``/``record_elements``
hooks) as byte addresses, so views of one buffer are compared correctly. Afterwards,
elements written by two different blocks are reported with both block coordinates, the
argument and the region (bounding box and count). Atomics are not races and are never
recorded; one block writing an element twice is program order, not a race.

``ct.detect_races(kernel, grid, args)`` runs a launch under the detector and raises
``RaceError`` (or returns the report with ``raise_on_race=False``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import RaceError


@dataclass
class Conflict:
    """Elements of one argument written by two blocks."""

    array: str
    block_a: tuple[int, int, int]
    block_b: tuple[int, int, int]
    lo: tuple[int, ...]  # bounding box of the shared elements (inclusive)
    hi: tuple[int, ...]
    count: int

    def describe(self) -> str:
        region = ", ".join(f"{a}:{b + 1}" for a, b in zip(self.lo, self.hi))
        return (f"blocks {self.block_a} and {self.block_b} both write {self.count} element(s) of "
                f"{self.array!r} in region [{region}]")


@dataclass
class RaceReport:
    """The races of one launch (empty when the launch is race-free)."""

    kernel: str
    grid: tuple[int, int, int]
    conflicts: list[Conflict] = field(default_factory=list)
    racy_elements: int = 0
    written_elements: int = 0

    def __bool__(self) -> bool:
        return bool(self.conflicts)

    @property
    def blocks(self) -> set[tuple[int, int, int]]:
        """Every block involved in a race."""
        return {c.block_a for c in self.conflicts} | {c.block_b for c in self.conflicts}

    def describe(self, limit: int = 8) -> str:
        if not self.conflicts:
            return f"kernel {self.kernel!r} over grid {self.grid}: no write-write races"
        lines = [f"data race in kernel {self.kernel!r} over grid {self.grid}: {self.racy_elements} of "
                 f"{self.written_elements} written element(s) are written by more than one tile block"]
        lines += ["  " + c.describe() for c in self.conflicts[:limit]]
        if len(self.conflicts) > limit:
            lines.append(f"  ... and {len(self.conflicts) - limit} more pair(s) of blocks")
        return "\n".join(lines)

    __str__ = describe


def _element_index(idx: np.ndarray, s: int, d: int, rank: int, nb: int) -> np.ndarray:
    lane = np.arange(s, dtype=np.int64).reshape((1,) * nb + tuple(s if a == d else 1 for a in range(rank)))
    return idx.astype(np.int64).reshape(idx.shape + (1,) * rank) * s + lane


class RaceDetector:
    """Collects (block, byte address) pairs of every write of one launch."""

    def __init__(self, kernel: str, grid: tuple[int, int, int], named: list[tuple[str, np.ndarray]]):
        self.kernel = kernel
        self.grid = grid
        self.named = named
        self._ids: list[np.ndarray] = []
        self._addr: list[np.ndarray] = []

    def _add(self, run, elems: list[np.ndarray], arr: np.ndarray, extra_mask=None, extra_shapes=()) -> None:
        nb = run.nb
        bs = run.blockset
        full = np.broadcast_shapes(*(e.shape for e in elems), *extra_shapes)
        rank = len(full) - nb
        ids = np.asarray(bs.ids, dtype=np.int64)
        ids = np.broadcast_to(ids, bs.batch_shape).reshape(bs.batch_shape + (1,) * rank)
        full = np.broadcast_shapes(full, ids.shape)
        valid = np.ones(full, dtype=bool)
        for e, n in zip(elems, arr.shape):
            valid &= (e >= 0) & (e < n)
        if extra_mask is not None:
            valid &= extra_mask
        base = arr.__array_interface__["data"][0]
        addr = np.zeros((), dtype=np.int64) + base
        for e, st in zip(elems, arr.strides):
            addr = addr + e * st
        addr = np.broadcast_to(addr, full)[valid]
        self._addr.append(addr.astype(np.int64, copy=False))
        self._ids.append(np.broadcast_to(ids, full)[valid])

    # hooks called by the CPU backend's store/scatter lowerings
    def record_tile(self, run, op, view, index, shape) -> None:
        rank = len(shape)
        elems = [_element_index(i, s, d, rank, run.nb) for d, (i, s) in enumerate(zip(index, shape))]
        self._add(run, elems, view)

    def record_elements(self, run, op, arr, elems, value, mask) -> None:
        elems = [np.asarray(e, dtype=np.int64) for e in elems]
        shapes = [np.shape(value)] + ([np.shape(mask)] if mask is not None else [])
        self._add(run, elems, arr, extra_mask=mask, extra_shapes=shapes)

    # ------------------------------------------------------------------ analysis

    def _coords(self, block: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (block % gx, (block // gx) % gy, block // (gx * gy))

    def _locate(self, addr: np.ndarray) -> tuple[str, np.ndarray]:
        """The argument holding these addresses and their element coordinates in it."""
        a0 = int(addr[0])
        for name, arr in self.named:
            if arr.size == 0:
                continue
            base = arr.__array_interface__["data"][0]
            span_lo = base + sum(min(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
            span_hi = base + sum(max(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides)) + arr.itemsize
            if span_lo <= a0 < span_hi and all(s > 0 for s in arr.strides if s):
                off = addr - base
                coords = np.zeros((len(addr), arr.ndim), dtype=np.int64)
                for axis in sorted(range(arr.ndim), key=lambda a: -arr.strides[a]):
                    st = arr.strides[axis]
                    if st == 0:
                        continue
                    coords[:, axis] = off // st
                    off = off - coords[:, axis] * st
                return name, coords
        return "<memory>", ((addr - a0)[:, None]).astype(np.int64)

    def finish(self) -> RaceReport:
        report = RaceReport(self.kernel, self.grid)
        if not self._addr:
            return report
        addr = np.concatenate(self._addr)
        ids = np.concatenate(self._ids)
        if not addr.size:  # stores ran, but every lane was masked off
            return report
        report.written_elements = int(np.unique(addr).size)
        order = np.lexsort((ids, addr))
        addr, ids = addr[order], ids[order]
        keep = np.r_[True, (addr[1:] != addr[:-1]) | (ids[1:] != ids[:-1])]
        addr, ids = addr[keep], ids[keep]  # unique (address, block) pairs
        starts = np.r_[True, addr[1:] != addr[:-1]]
        group = np.cumsum(starts) - 1
        counts = np.bincount(group)
        racy_groups = np.flatnonzero(counts > 1)
        report.racy_elements = int(racy_groups.size)
        if not racy_groups.size:
            return report
        # every later writer of a racy element pairs with the writer before it
        racy = np.isin(group, racy_groups) & ~starts
        pos = np.flatnonzero(racy)
        a_blk, b_blk, r_addr = ids[pos - 1], ids[pos], addr[pos]
        pairs: dict[tuple[int, int], list[int]] = {}
        for k, key in enumerate(zip(a_blk.tolist(), b_blk.tolist())):
            pairs.setdefault(key, []).append(k)
        for (a, b), ks in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
            name, coords = self._locate(r_addr[ks])
            report.conflicts.append(Conflict(name, self._coords(a), self._coords(b),
                                             tuple(int(v) for v in coords.min(axis=0)),
                                             tuple(int(v) for v in coords.max(axis=0)), len(ks)))
        return report


def detect_races(kernel: Any, grid: Any, args: Any, *, raise_on_race: bool = True) -> RaceReport:
    """Run a CPU launch under the race detector; raise ``RaceError`` if blocks' writes overlap.

    ``kernel`` is a ``@ct.kernel`` (``grid`` and ``args`` as for ``ct.launch``) or a
    ``@ct.entry`` kernel (``grid`` may be ``None``: inferred from the partitions).
    """
    from .entry import EntryKernel
    if isinstance(kernel, EntryKernel):
        from .launch import check_ownership, prepare, runtime_args
        k = kernel.grid(grid) if grid is not None else kernel
        args = tuple(args)
        check_ownership(k, args)
        plan = prepare(k, args)
        if plan.device != "cpu":
            raise ValueError("the race detector runs on the CPU backend (host memory)")
        runtime = runtime_args(args)
        named = [(n, a) for n, a in zip(kernel.param_names, runtime) if isinstance(a, np.ndarray)]
        det = RaceDetector(kernel.__name__, plan.grid3, named)
        from ..runtime.launch import run_cpu
        run_cpu(plan.compiled.fn, plan.grid3, plan.compiled.shim, runtime, det)
    else:
        from ..runtime.args import arg_specs, as_numpy, is_cuda
        from ..runtime.launch import check_args, normalize_grid, run_cpu
        args = check_args(kernel, args)
        grid3 = normalize_grid(grid)
        if any(is_cuda(a) for a, c in zip(args, kernel.constant_params) if not c):
            raise ValueError("the race detector runs on the CPU backend (host memory)")
        fn = kernel.specialize(arg_specs(kernel, args))
        named = [(p.name, as_numpy(a)) for p, a, c in zip(kernel.params, args, kernel.constant_params)
                 if not c and not isinstance(a, (bool, int, float, np.generic))]
        det = RaceDetector(kernel.__name__, grid3, named)
        run_cpu(fn, grid3, kernel, args, det)
    report = det.finish()
    if report and raise_on_race:
        raise RaceError(report)
    return report
