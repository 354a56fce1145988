"""The CPU race detector for unchecked kernels (opt-in).

While a kernel runs on the CPU backend, the detector records every access of every tile
block (through the memory lowerings' ``record_tile``/``record_elements`` hooks): plain
writes (store, scatter), plain reads (load, gather) and atomic updates, each as the byte
range of the element it touches, so views of one buffer and views of other element types
(an ``f32`` and a ``u8`` view of the same bytes) are compared correctly. Afterwards, a
byte touched by two different blocks is a race when

* both write it (**write-write**);
* one writes it and the other reads it (**write-read**: the read sees either value);
* one updates it atomically and the other reads or writes it plainly (**atomic-plain**).

Atomic updates from several blocks are not races, nor are reads by several blocks; one
block touching a byte several times is program order. Races are reported with both block
coordinates, the argument and the region (bounding box and count of elements).

``ct.detect_races(kernel, grid, args)`` runs a launch under the detector and raises
``RaceError`` (or returns the report with ``raise_on_race=False``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ArgumentError
from .errors import RaceError

READ, WRITE, ATOMIC = 0, 1, 2
_KINDS = {"read": READ, "write": WRITE, "atomic": ATOMIC}
_PAIR_TEXT = {
    "write-write": "both write",
    "write-read": "write and read (one writes what the other reads)",
    "atomic-plain": "update atomically and access plainly (one atomic, one plain)",
}


@dataclass
class Conflict:
    """Elements of one argument accessed by two blocks in a racing way (``kind``)."""

    array: str
    block_a: tuple[int, int, int]
    block_b: tuple[int, int, int]
    lo: tuple[int, ...]  # bounding box of the shared elements (inclusive)
    hi: tuple[int, ...]
    count: int
    kind: str = "write-write"  # 'write-write' | 'write-read' | 'atomic-plain'

    def describe(self) -> str:
        region = ", ".join(f"{a}:{b + 1}" for a, b in zip(self.lo, self.hi))
        return (f"blocks {self.block_a} and {self.block_b} {_PAIR_TEXT[self.kind]} {self.count} element(s) of "
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

    @property
    def kinds(self) -> set[str]:
        return {c.kind for c in self.conflicts}

    def describe(self, limit: int = 8) -> str:
        if not self.conflicts:
            return f"kernel {self.kernel!r} over grid {self.grid}: no data races"
        lines = [f"data race in kernel {self.kernel!r} over grid {self.grid}: {self.racy_elements} element(s) are "
                 f"accessed by more than one tile block in a racing way ({', '.join(sorted(self.kinds))}; "
                 f"{self.written_elements} element(s) written)"]
        lines += ["  " + c.describe() for c in self.conflicts[:limit]]
        if len(self.conflicts) > limit:
            lines.append(f"  ... and {len(self.conflicts) - limit} more pair(s) of blocks")
        return "\n".join(lines)

    __str__ = describe


class RaceDetector:
    """Collects (block, element address, item size, kind) of every access of one launch."""

    def __init__(self, kernel: str, grid: tuple[int, int, int], named: list[tuple[str, np.ndarray]]):
        self.kernel = kernel
        self.grid = grid
        self.named = named
        self._ids: list[np.ndarray] = []
        self._addr: list[np.ndarray] = []
        self._size: list[int] = []
        self._kind: list[int] = []

    def record(self, run, arr: np.ndarray, elems: list[np.ndarray], mask: np.ndarray | None, kind: str) -> None:
        """The hook the CPU backend's memory lowerings call: each block of ``run`` accesses (``kind``) the
        elements of ``arr`` at the int64 indices ``elems`` (batch axes first) where ``mask`` is set. A mask
        or a stored value broadcasts to its indices' shape (the front end's rule), so only the indices and
        the blocks say which elements are touched."""
        bs = run.blockset
        full = np.broadcast_shapes(*(e.shape for e in elems))
        ids = np.asarray(bs.ids, dtype=np.int64)  # pragma: no mutate (Python ints: int64 here by default)
        ids = np.broadcast_to(ids, bs.batch_shape).reshape(bs.batch_shape + (1,) * (len(full) - run.nb))
        full = np.broadcast_shapes(full, ids.shape)
        valid = np.ones(full, dtype=bool)
        for e, n in zip(elems, arr.shape):
            valid &= (e >= 0) & (e < n)
        if mask is not None:
            valid &= mask
        addr = np.asarray(np.int64(arr.__array_interface__["data"][0]))  # a 0-d int64 array (an exact address)
        for e, st in zip(elems, arr.strides):
            addr = addr + e * st
        self._addr.append(np.broadcast_to(addr, full)[valid])
        self._ids.append(np.broadcast_to(ids, full)[valid])
        self._size.append(arr.itemsize)
        self._kind.append(_KINDS[kind])

    # ------------------------------------------------------------------ analysis

    def _coords(self, block: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (block % gx, (block // gx) % gy, block // (gx * gy))

    def _tables(self) -> list[tuple[str, np.ndarray, np.ndarray, tuple]]:
        """Per argument: its distinct element start addresses (sorted), the flat index of the
        first element at each (several share one in a self-overlapping view), its shape."""
        out = []
        for name, arr in self.named:
            if arr.size == 0:
                continue
            addr = np.asarray(np.int64(arr.__array_interface__["data"][0]))
            for n, st in zip(arr.shape, arr.strides):
                # explicit: the default integer is int64 on 64-bit NumPy 2 but int32 on NumPy 1 on Windows
                addr = addr[..., None] + np.arange(n, dtype=np.int64) * st  # pragma: no mutate
            starts, first = np.unique(addr.ravel(), return_index=True)
            out.append((name, starts, first, arr.shape))
        return out

    def _locate(self, starts: np.ndarray, tables) -> tuple[str, np.ndarray]:
        """The argument holding elements starting at these addresses, and their coordinates in it
        (any strides: reversed, permuted, broadcast views included)."""
        for name, sorted_addr, order, shape in tables:
            pos = np.searchsorted(sorted_addr, starts)
            if (sorted_addr[np.minimum(pos, len(sorted_addr) - 1)] == starts).all():  # every one found
                coords = np.stack(np.unravel_index(order[pos], shape), axis=1).astype(np.int64)  # pragma: no mutate
                return name, coords
        a0 = int(starts.min())
        return "<memory>", ((starts - a0)[:, None]).astype(np.int64)

    def _bytes(self):
        """Every accessed byte: (byte address, block, kind, element start address), one row each."""
        rows = []
        for addr, ids, size, kind in zip(self._addr, self._ids, self._size, self._kind):
            if addr.size == 0:
                continue
            lane = np.arange(size, dtype=np.int64)
            rows.append(((addr[:, None] + lane).reshape(-1), np.repeat(ids, size), np.full(addr.size * size, kind),
                         np.repeat(addr, size)))
        if not rows:
            return None
        return tuple(np.concatenate(c) for c in zip(*rows))

    def finish(self) -> RaceReport:
        report = RaceReport(self.kernel, self.grid)
        got = self._bytes()
        if got is None:
            return report
        addr, ids, kind, start = got
        report.written_elements = int(np.unique(start[kind == WRITE]).size)
        # reads of a byte nothing writes or updates atomically race with nothing: dropped, a read left
        # below is of a byte another access changes
        keep = (kind != READ) | np.isin(addr, addr[kind != READ])
        addr, ids, kind, start = addr[keep], ids[keep], kind[keep], start[keep]
        if not addr.size:
            return report
        order = np.lexsort((kind, ids, addr))
        addr, ids, kind, start = addr[order], ids[order], kind[order], start[order]
        first = np.r_[True, (addr[1:] != addr[:-1]) | (ids[1:] != ids[:-1]) | (kind[1:] != kind[:-1])]
        addr, ids, kind, start = addr[first], ids[first], kind[first], start[first]  # unique (byte, block, kind)
        group = np.cumsum(np.r_[True, addr[1:] != addr[:-1]]) - 1
        blocks = np.bincount(group, weights=np.r_[True, (addr[1:] != addr[:-1]) | (ids[1:] != ids[:-1])])
        # several blocks touch the byte and one of them plainly: what is left of reads is of changed bytes
        racy = (blocks >= 2) & (np.bincount(group, weights=kind != ATOMIC) > 0)
        if not racy.any():
            return report
        sel = racy[group]
        addr, ids, kind, start, group = addr[sel], ids[sel], kind[sel], start[sel], group[sel]
        report.racy_elements = int(np.unique(start).size)
        pairs: dict[tuple[str, int, int], list[int]] = {}
        bounds = np.flatnonzero(np.r_[True, group[1:] != group[:-1], True])
        ids_l, kind_l, start_l = ids.tolist(), kind.tolist(), start.tolist()
        for g0, g1 in zip(bounds[:-1], bounds[1:]):
            for key in _racing_pairs(ids_l[g0:g1], kind_l[g0:g1]):
                pairs.setdefault(key, []).append(start_l[g0])  # the element (of the first access) holding the byte
        tables = self._tables()
        for (what, a, b), starts in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
            # distinct element starts, each located at one coordinate (the first element at it)
            name, coords = self._locate(np.unique(np.asarray(starts, dtype=np.int64)), tables)
            report.conflicts.append(Conflict(name, self._coords(a), self._coords(b),
                                             tuple(int(v) for v in coords.min(axis=0)),
                                             tuple(int(v) for v in coords.max(axis=0)), len(coords), what))
        return report


def _racing_pairs(ids: list[int], kinds: list[int]):
    """The racing (kind, block, block) pairs on one byte: consecutive writers; each reader with a
    writer of another block; each atomic block with a plain access of another block."""
    writers = [b for b, k in zip(ids, kinds) if k == WRITE]
    readers = [b for b, k in zip(ids, kinds) if k == READ]
    atomics = [b for b, k in zip(ids, kinds) if k == ATOMIC]
    out = [("write-write", a, b) for a, b in zip(writers, writers[1:])]
    for r in readers:
        w = next((w for w in writers if w != r), None)
        if w is not None:
            out.append(("write-read", w, r))
    plain = writers + readers
    for a in atomics:
        p = next((p for p in plain if p != a), None)
        if p is not None:
            out.append(("atomic-plain", a, p))
    return out


def detect_races(kernel: Any, grid: Any, args: Any, *, raise_on_race: bool = True) -> RaceReport:
    """Run a CPU launch under the race detector; raise ``RaceError`` if blocks' writes overlap.

    ``kernel`` is a ``@ct.kernel`` (``grid`` and ``args`` as for ``ct.launch``) or a
    ``@ct.entry`` kernel (``grid`` may be ``None``: inferred from the partitions).
    """
    from .entry import EntryKernel
    if isinstance(kernel, EntryKernel):
        from ..runtime.launch import run_cpu
        from .memory import REGISTRY, InFlight
        k = kernel.grid(grid) if grid is not None else kernel
        op = k(*args)  # a launch like any other: checked, and its arguments taken, before it runs
        try:
            plan, runtime = op._plan, op._runtime
            if plan is None:
                raise ArgumentError("detect_races runs a launch of host values: resolve DeviceOp arguments first")
            if plan.device != "cpu":
                raise ArgumentError("the race detector runs on the CPU backend (host memory)")
            named = [(n, a) for n, a in zip(kernel.param_names, runtime) if isinstance(a, np.ndarray)]
            det = RaceDetector(kernel.__name__, plan.grid3, named)
            entry = InFlight(f"the race detector's run of {op.label}", None)
            REGISTRY.claim(entry, plan, plan.writes, plan.reads)  # other launches and host reads wait
            try:
                run_cpu(plan.compiled.fn, plan.grid3, plan.compiled.shim, runtime, det)
            finally:
                REGISTRY.remove(entry)
        finally:
            op.cancel_unrun()  # the arguments come back (the op itself never runs)
    else:
        from ..runtime.args import arg_specs, as_numpy, is_cuda
        from ..runtime.launch import check_args, normalize_grid, run_cpu
        args = check_args(kernel, args)
        grid3 = normalize_grid(grid)
        if any(is_cuda(a) for a, c in zip(args, kernel.constant_params) if not c):
            raise ArgumentError("the race detector runs on the CPU backend (host memory)")
        fn = kernel.specialize(arg_specs(kernel, args))
        named = [(p.name, as_numpy(a)) for p, a, c in zip(kernel.params, args, kernel.constant_params)
                 if not c and not isinstance(a, (bool, int, float, np.generic))]
        det = RaceDetector(kernel.__name__, grid3, named)
        run_cpu(fn, grid3, kernel, args, det)
    report = det.finish()
    if report and raise_on_race:
        raise RaceError(report)
    return report
