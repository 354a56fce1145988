"""The order in which a kernel's blocks meet the GPU: batch axes last.

The GPU dispatches a grid's blocks in the order of their linear index, x fastest, so with
``ct.bid(0)`` as CUDA's x the blocks that run side by side are those that differ in ``bid(0)``.
For a batched matrix product launched as NVIDIA's samples launch it, grid
``(batch, row tiles, column tiles)``, the blocks of one wave then belong to different batch
entries and share no operand: every wave re-reads its operand panels from memory, where in
batch-slowest order the blocks of a wave share rows of A and columns of B through the L2 cache
(8×2048³ in 128×256 tiles: ~590 MB read from memory against ~130 MB).

Blocks are independent (no order between them is promised, on any backend), so the code
generator may map the hardware's block index to the kernel's ``bid`` tuple by any bijection.
``block_order`` picks one from the kernel's reads: an axis is a *batch axis* when every read of
an array depends on it, so blocks that differ along it share no input; such axes go slowest and
the others keep their order. Only kernels with a matrix product are reordered: their blocks re-read
operand panels in a loop, which is where the order shows; a kernel that reads each element once
gains nothing for the index arithmetic. Attention's ``(query block, batch·head)`` grid and a
2-D GEMM grid keep their order (their batch axis is already last, or they have none).
"""
from __future__ import annotations

from ...ir.catalogue import OPS
from ...ir.core import Block, Function, walk

AXES = (0, 1, 2)


def _bid_dependence(fn: Function) -> dict[int, frozenset[int]]:
    """For every value id, the grid axes whose ``bid`` it may depend on: through data, a loop's
    bounds (its index, and the values it carries) and a branch's condition (the values it merges).
    An over-approximation, which can only keep an axis from counting as a batch axis."""
    deps: dict[int, frozenset[int]] = {}
    none: frozenset[int] = frozenset()

    def of(values) -> frozenset[int]:
        d = none
        for v in values:
            d |= deps.get(v.id, none)
        return d

    def give(v, d: frozenset[int]) -> bool:
        old = deps.get(v.id, none)
        if d <= old:
            return False
        deps[v.id] = old | d
        return True

    def yields(region: Block) -> list:
        return region.ops[-1].operands if region.ops and region.ops[-1].name == "yield" else []

    def visit(block: Block) -> bool:
        changed = False
        for op in block.ops:
            if op.name == "for":
                bounds, inits = of(op.operands[:3]), op.operands[3:]
                body = op.regions[0]
                changed |= give(body.args[0], bounds)
                for k, out in enumerate(op.results):
                    d = bounds | of([inits[k]]) | of(yields(body)[k:k + 1])
                    changed |= give(body.args[k + 1], d) | give(out, d)
            elif op.name == "if":
                cond = of(op.operands)
                for k, out in enumerate(op.results):
                    changed |= give(out, cond | of([y for r in op.regions for y in yields(r)[k:k + 1]]))
            elif op.regions:  # while: carried values see their inits, the body's yields and the condition
                d = of(op.operands) | of([y for r in op.regions for y in yields(r)])
                for v in [*op.results, *(a for r in op.regions for a in r.args)]:
                    changed |= give(v, d)
            else:
                d = frozenset({op.attrs["axis"]}) if op.name == "bid" else of(op.operands)
                for out in op.results:
                    changed |= give(out, d)
            for region in op.regions:
                changed |= visit(region)
        return changed

    while visit(fn.body):  # monotone, at most three axes per value: a few passes
        pass
    return deps


def block_order(fn: Function) -> tuple[int, ...] | None:
    """The grid axes from fastest to slowest in dispatch order, or None to keep CUDA's (0, 1, 2)."""
    ops = list(walk(fn.body))
    if not any(op.name in ("mma", "mma_scaled") for op in ops):
        return None
    reads = [op for op in ops if OPS[op.name].effect == "read"]
    if not reads:
        return None
    deps = _bid_dependence(fn)
    batch = set(AXES)  # an axis no block reads stays with the batch axes: where it goes changes nothing
    for op in reads:
        used: frozenset[int] = frozenset()
        for v in op.operands:
            used |= deps.get(v.id, frozenset())
        batch &= used
    batch |= set(AXES) - {op.attrs["axis"] for op in ops if op.name == "bid"}
    order = tuple(a for a in AXES if a not in batch) + tuple(a for a in AXES if a in batch)
    return None if order == AXES else order


def prologue(order: tuple[int, ...]) -> list[str]:
    """Kernel lines that set ``_st_b0.._st_b2`` (the ``bid`` values) from the hardware's linear block
    index, decomposed with ``order[0]`` fastest. In 64-bit: the grid may hold more than 2**31
    blocks (x up to 2**31 - 1, y and z up to 65535); each value is below its axis's block count."""
    lines = ["    _st_lin = tl.program_id(0).to(tl.int64) + tl.num_programs(0).to(tl.int64) * ("
             "tl.program_id(1).to(tl.int64) + tl.num_programs(1).to(tl.int64) * tl.program_id(2).to(tl.int64))"]
    for k, axis in enumerate(order):
        if k == len(order) - 1:
            lines.append(f"    _st_b{axis} = _st_lin.to(tl.int32)")
        else:
            lines.append(f"    _st_b{axis} = (_st_lin % tl.num_programs({axis})).to(tl.int32)")
            lines.append(f"    _st_lin = _st_lin // tl.num_programs({axis})")
    return lines
