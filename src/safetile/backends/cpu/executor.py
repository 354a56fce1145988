"""The CPU backend: runs tile IR with NumPy, all blocks of the grid at once.

Ops are executed one at a time over every block (see ``context.BlockSet`` for the value
layout). Structured control flow whose condition or bounds are the same for all blocks
runs once; where it diverges, the blocks are split into subsets that run each path and
their results are merged. Per-op lowerings live in this package's family modules, one
function per catalogue op, registered in ``LOWERINGS``.

A launch's fixed cost matters for small kernels (a one-tile launch is a few microseconds
of NumPy work), so what depends only on the compiled Function is resolved once, in its
``Plan``: each block's ops with their lowerings bound, value use counts and the
parameters the kernel may write. A launch then only looks values up and calls lowerings.
"""
from __future__ import annotations

import math
import sys
from typing import Any, NamedTuple, cast
from collections.abc import Callable

import numpy as np

from ...errors import GridError, TileInternalError, TileRuntimeError
from ...ir.catalogue import OPS
from ...ir.core import Block, Function, Op, Value, tile_type, walk
from ...ir.types import TileType
from ...ops.debug import Printer
from ...runtime.interrupts import interruptible
from .context import BlockSet

Lowering = Callable[["Run", Op, list[Any]], Any]
Binder = Callable[[Op], Lowering]
Control = Callable[["Run", Op, "Env"], list[Any]]
LOWERINGS: dict[str, Lowering | Binder] = {}
BOUND: set[str] = set()  # ops whose LOWERINGS entry is a Binder


def lowers(*names: str, bind: bool = False):
    """Register the CPU lowering of catalogue ops ``names``.

    With ``bind=True`` the decorated function is a binder ``(op) -> lowering``: the plan
    calls it once per op of a compiled function, so work that depends only on the op
    (decoding attributes, building constant values) is not repeated at every launch.
    """
    def deco(fn):
        for n in names:
            if n in LOWERINGS:
                raise RuntimeError(f"CPU lowering of {n!r} registered twice")
            LOWERINGS[n] = fn
            if bind:
                BOUND.add(n)
        return fn
    return deco


def tile_ndim(v: Value) -> int:
    return len(v.type.shape) if isinstance(v.type, TileType) else 0


class Step(NamedTuple):
    """One op of a block with its handler resolved: ``control`` for if/for/while, else ``lower``."""

    lower: Lowering | None
    control: Control | None
    op: Op
    operands: tuple[int, ...]  # value ids
    results: tuple[int, ...]


class BlockPlan(NamedTuple):
    """A block's ops up to its terminator, ready to run."""

    steps: tuple[Step, ...]
    yields: tuple[Value, ...]  # what the block's terminator yields


class Plan:
    """Everything a launch of one compiled Function needs that does not depend on its data.

    Built on the first launch and kept on the Function (compiled IR is never modified
    afterwards; every specialisation is a Function of its own), so a launch does no
    handler lookup, op walk or attribute decoding of its own.
    """

    def __init__(self, fn: Function):
        from . import lowerings  # noqa: F401 - registers every family's lowerings
        self.blocks: dict[int, BlockPlan] = {}  # id(Block) -> plan; the Function keeps the blocks alive
        self.uses: dict[int, int] = {}  # how many ops use each value: dead results skip work
        written: set[int] = set()
        for op in walk(fn.body):
            for v in op.operands:
                self.uses[v.id] = self.uses.get(v.id, 0) + 1
            if OPS[op.name].effect == "write":
                written.add(op.operands[0].id)
        self.written = frozenset(written)  # array parameters some op may write (store, scatter, atomics)
        # a while loop around an atomic (a spin lock) waits for other blocks: run blocks one by one
        self.serial = any(op.name == "while" and any(
            inner.name in ("atomic_rmw", "atomic_cas") for region in op.regions for inner in walk(region))
            for op in walk(fn.body))
        # the most elements one block's tile value has: sizes the chunks of a large grid
        self.max_tile = max((math.prod(r.type.shape) for op in walk(fn.body) for r in op.results
                             if isinstance(r.type, TileType)), default=1)
        self._add(fn.body)

    def _add(self, block: Block) -> None:
        steps = []
        yields: tuple[Value, ...] = ()
        for op in block.ops:
            if op.name == "yield":
                yields = tuple(op.operands)
                break
            for region in op.regions:
                self._add(region)
            steps.append(Step(_bind(op) if op.name not in _CONTROL else None, _CONTROL.get(op.name), op,
                              tuple(v.id for v in op.operands), tuple(r.id for r in op.results)))
        self.blocks[id(block)] = BlockPlan(tuple(steps), yields)


def _bind(op: Op) -> Lowering:
    """The op's lowering; a binder's is made for this op."""
    fn = LOWERINGS.get(op.name)
    if fn is None:
        raise TileInternalError(f"the CPU backend has no lowering for {op.name!r}", op.loc)
    return cast(Binder, fn)(op) if op.name in BOUND else cast(Lowering, fn)


def plan_of(fn: Function) -> Plan:
    """The Function's plan, built once."""
    plan = fn.__dict__.get("_cpu_plan")
    if plan is None:
        plan = fn._cpu_plan = Plan(fn)  # type: ignore[attr-defined]
    return plan


class Env:
    """Values of one region execution; misses fall back to the parent, re-laid for this set."""

    __slots__ = ("blocks", "parent", "subset_idx", "extra_axes", "values")

    def __init__(self, blocks: BlockSet, parent: Env | None = None, subset_idx: np.ndarray | None = None,
                 extra_axes: int = 0):
        self.blocks = blocks
        self.parent = parent
        self.subset_idx = subset_idx  # positions in parent.blocks, or None when the same set
        # element-wise regions (reduce/scan combiners) run with ``extra_axes`` tile axes
        # appended to the parent's batch: outer values get unit axes there
        self.extra_axes = extra_axes
        self.values: dict[int, Any] = {}

    def get(self, v: Value) -> Any:
        try:
            return self.values[v.id]
        except KeyError:
            pass
        if self.parent is None:
            raise TileInternalError(f"value {v!r} has no runtime value")
        x = self.parent.get(v)
        if self.subset_idx is not None and isinstance(v.type, TileType):
            x = self.parent.blocks.to_subset(x, self.subset_idx, tile_ndim(v))
        if self.extra_axes and isinstance(v.type, TileType):
            nb = self.parent.blocks.nb
            x = x.reshape(x.shape[:nb] + (1,) * self.extra_axes + x.shape[nb:])
        self.values[v.id] = x
        return x

    def set(self, v: Value, x: Any) -> None:
        self.values[v.id] = x


class Run:
    """One launch of one kernel on the CPU."""

    def __init__(self, fn: Function, grid: tuple[int, int, int], arrays: dict[int, np.ndarray],
                 scalars: dict[int, Any], race_detector=None, blocks: BlockSet | None = None):
        self.fn = fn
        self.plan = plan_of(fn)
        self.fn_uses = self.plan.uses
        self.grid = grid
        self.arrays = arrays
        self.blocks = blocks if blocks is not None else BlockSet.full_grid(grid)
        self.prints: dict[int, list[tuple[dict, list]]] = {}  # block -> (print attrs, operand values)
        self.printer = Printer()
        self.race_detector = race_detector
        self.scalars = scalars
        self._may_change: dict[int, bool] = {}
        self.env = self.cur_env = self._top_env()

    def _top_env(self) -> Env:
        env = Env(self.blocks)
        env.values.update(self.arrays)
        shape1 = (1,) * self.blocks.nb
        for vid, x in self.scalars.items():
            env.values[vid] = np.asarray(x).reshape(shape1)
        return env

    # ------------------------------------------------------------------ driving

    def execute(self) -> None:
        with np.errstate(all="ignore"):
            if self.plan.serial and self.blocks.size > 1:
                # blocks one after another, in linear order (a block spinning on a lock another
                # block holds could never finish in lock step)
                full = self.blocks
                for i in range(full.size):
                    self.blocks = full.subset(np.array([i]))
                    self.env = self.cur_env = self._top_env()
                    self.run_block(self.fn.body, self.env, [])
                self.blocks = full
            else:
                self.run_block(self.fn.body, self.env, [])
        self.flush_prints()

    def flush_prints(self) -> None:
        if self.prints:
            printer = self.printer
            for bid in sorted(self.prints):
                printer.write("".join(printer.text(attrs, values) for attrs, values in self.prints[bid]))
            self.prints.clear()
            sys.stdout.flush()

    def run_block(self, block: Block, env: Env, args: list[Any]) -> list[Any]:
        plan = self.plan.blocks[id(block)]
        values = env.values
        for a, x in zip(block.args, args):
            values[a.id] = x
        self.cur_env = env
        for lower, control, op, operands, results in plan.steps:
            if control is not None:
                out = control(self, op, env)
                self.cur_env = env
            else:
                try:
                    ins = [values[i] for i in operands]
                except KeyError:  # defined outside this region: fetched through the parent
                    ins = [env.get(v) for v in op.operands]
                out = lower(self, op, ins)  # type: ignore[misc]  # set whenever control is None; no assert in this loop
                if type(out) is not list:
                    if out is not None and results:
                        values[results[0]] = out
                    continue
            for r, x in zip(results, out):
                values[r] = x
        return [env.get(v) for v in plan.yields]

    # ------------------------------------------------------------------ helpers for lowerings

    def may_change(self, array: Value) -> bool:
        """Whether the memory of array parameter ``array`` can change during this launch.

        True when a store, scatter or atomic of the kernel may write it or another argument
        overlapping it; a loaded view of it would change too. Depends on the launch's
        arguments (aliasing), so it is computed per launch, once per parameter.
        """
        vid = array.id
        if vid in self.plan.written:
            return True
        known = self._may_change.get(vid)
        if known is None:
            a = self.arrays[vid]
            known = self._may_change[vid] = any(
                np.may_share_memory(a, w) for wid, w in self.arrays.items() if wid in self.plan.written)
        return known

    @property
    def nb(self) -> int:
        return self.cur_env.blocks.nb

    @property
    def blockset(self) -> BlockSet:
        return self.cur_env.blocks

    def fail(self, op: Op, message: str, failing_ids: np.ndarray) -> None:
        self.flush_prints()
        self.printer.write(self.printer.failure_text(op.attrs))
        sys.stdout.flush()
        ids = ", ".join(str(self.block_coords(int(i))) for i in failing_ids[:4])
        more = f" and {len(failing_ids) - 4} more" if len(failing_ids) > 4 else ""
        where = f" at {op.loc.filename}:{op.loc.line}" if op.loc else ""
        raise TileRuntimeError(f"{message} (block {ids}{more}){where}")

    def block_coords(self, linear: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))


# ---------------------------------------------------------------------------------- control flow

def _run_if(run: Run, op: Op, env: Env) -> list[Any]:
    cond = env.get(op.operands[0])
    bs = env.blocks
    then_b, else_b = op.regions
    if bs.is_uniform(cond):
        chosen = then_b if bool(cond.reshape(-1)[0]) else else_b
        return run.run_block(chosen, Env(bs, env), [])
    flat = bs.flatten(cond)
    if flat.all() or not flat.any():
        return run.run_block(then_b if flat.all() else else_b, Env(bs, env), [])
    parts = []
    for region, idx in ((then_b, np.flatnonzero(flat)), (else_b, np.flatnonzero(~flat))):
        sub = Env(bs.subset(idx), env, idx)
        parts.append((idx, run.run_block(region, sub, [])))
    return [bs.merge([(parts[0][0], parts[0][1][k]), (parts[1][0], parts[1][1][k])],
                     tile_type(r).shape, r.type.dtype.np_dtype)
            for k, r in enumerate(op.results)]


def _carry_merge(bs: BlockSet, idx: np.ndarray, old: list[Any], new: list[Any], results: list[Value]) -> list[Any]:
    return [bs.merge([(idx, n)], tile_type(r).shape, r.type.dtype.np_dtype, base=o)
            for o, n, r in zip(old, new, results)]


def _run_for(run: Run, op: Op, env: Env) -> list[Any]:
    from .kloop import try_kloop
    raised = try_kloop(run, op, env)
    if raised is not None:
        return raised
    bs = env.blocks
    lo, hi, step = (env.get(v) for v in op.operands[:3])
    carried = [env.get(v) for v in op.operands[3:]]
    body = op.regions[0]
    iv_dtype = op.regions[0].args[0].type.dtype.np_dtype
    if bs.is_uniform(lo) and bs.is_uniform(hi) and bs.is_uniform(step):
        first, stop, s = (int(x.reshape(-1)[0]) for x in (lo, hi, step))
        shape1 = (1,) * bs.nb
        for i in range(first, stop, s) if s > 0 else ():
            carried = run.run_block(body, Env(bs, env), [np.full(shape1, i, dtype=iv_dtype), *carried])
        return carried
    lo_f, hi_f, st_f = (bs.flatten(x).astype(np.int64) for x in (lo, hi, step))
    trips = np.where(st_f > 0, np.maximum(0, -(-(hi_f - lo_f) // np.maximum(st_f, 1))), 0)
    for t in range(int(trips.max(initial=0))):
        iv = (lo_f + t * st_f).astype(iv_dtype)
        active = trips > t
        if active.all():
            carried = run.run_block(body, Env(bs, env), [iv.reshape(bs.batch_shape), *carried])
        else:
            idx = np.flatnonzero(active)
            sub = Env(bs.subset(idx), env, idx)
            sub_carried = [bs.to_subset(c, idx, r.type.ndim) for c, r in zip(carried, op.results)]
            new = run.run_block(body, sub, [iv[idx], *sub_carried])
            carried = _carry_merge(bs, idx, carried, new, op.results)
    return carried


def _run_while(run: Run, op: Op, env: Env) -> list[Any]:
    bs = env.blocks
    cond_b, body_b = op.regions
    carried = [env.get(v) for v in op.operands]
    alive: np.ndarray | None = None  # flat positions still looping, None = all
    while True:
        if alive is None:
            c = run.run_block(cond_b, Env(bs, env), carried)[0]
            if bs.is_uniform(c):
                if not bool(c.reshape(-1)[0]):
                    return carried
                carried = run.run_block(body_b, Env(bs, env), carried)
                continue
            flat = bs.flatten(c)
            if flat.all():
                carried = run.run_block(body_b, Env(bs, env), carried)
                continue
            alive = np.flatnonzero(flat)
        else:
            sub = Env(bs.subset(alive), env, alive)
            sub_carried = [bs.to_subset(x, alive, r.type.ndim) for x, r in zip(carried, op.results)]
            c = run.run_block(cond_b, sub, sub_carried)[0]
            keep = np.broadcast_to(c, (len(alive),))
            alive = alive[keep]
        if len(alive) == 0:
            return carried
        sub = Env(bs.subset(alive), env, alive)
        sub_carried = [bs.to_subset(x, alive, r.type.ndim) for x, r in zip(carried, op.results)]
        new = run.run_block(body_b, sub, sub_carried)
        carried = _carry_merge(bs, alive, carried, new, op.results)


_CONTROL = {"if": _run_if, "for": _run_for, "while": _run_while}


# A launch holds each value for all its blocks at once. A grid too large for that runs in
# chunks of whole blocks (boxes of the grid, in block-id order, so buffered prints stay in
# order), each sized so one tile value of the kernel takes at most CHUNK_BYTES; blocks are
# independent, so the result is the same. Beyond MAX_BLOCKS blocks the launch is refused.
CHUNK_BYTES = 1 << 28
MAX_BLOCKS = 1 << 31


@interruptible  # a kernel body running on the CPU: Ctrl-C stops it; the launch fails as on any error
def execute(fn: Function, grid: tuple[int, int, int], arrays: dict[int, np.ndarray],
            scalars: dict[int, Any], race_detector=None) -> None:
    """Run ``fn`` over ``grid``; ``arrays``/``scalars`` map parameter value ids to data."""
    gx, gy, gz = grid
    total = gx * gy * gz
    max_tile = plan_of(fn).max_tile
    per_chunk = max(1, CHUNK_BYTES // (8 * max_tile))
    if total > MAX_BLOCKS:
        raise GridError(f"grid {grid} has {total} blocks; the CPU backend runs at most {MAX_BLOCKS} (2**31) blocks "
                        "in one launch (nothing ran)")
    try:
        if total <= per_chunk:
            Run(fn, grid, arrays, scalars, race_detector).execute()
            return
        for lo, hi in chunks(grid, per_chunk):
            Run(fn, grid, arrays, scalars, race_detector, BlockSet.box(grid, lo, hi)).execute()
    except MemoryError:
        raise TileRuntimeError(f"the CPU backend ran out of memory running grid {grid} ({min(total, per_chunk)} "
                               f"blocks at a time, tiles of up to {max_tile} elements); blocks that ran before "
                               "may have stored their results. Use smaller tiles or the GPU") from None


def chunks(grid: tuple[int, int, int], per_chunk: int):
    """Boxes ``(lo, hi)`` of at most ``per_chunk`` blocks covering ``grid``, in block-id order:
    whole xy planes when they fit, else whole x rows, else runs of x."""
    gx, gy, gz = grid
    if gx * gy <= per_chunk:
        step = per_chunk // (gx * gy)
        for z in range(0, gz, step):
            yield (0, 0, z), (gx, gy, min(z + step, gz))
    elif gx <= per_chunk:
        step = per_chunk // gx
        for z in range(gz):
            for y in range(0, gy, step):
                yield (0, y, z), (gx, min(y + step, gy), z + 1)
    else:
        for z in range(gz):
            for y in range(gy):
                for x in range(0, gx, per_chunk):
                    yield (x, y, z), (min(x + per_chunk, gx), y + 1, z + 1)
