"""Wide K tiles split into pipeline steps: a matrix-product loop whose loads per iteration are too
big for the software pipeline runs twice as many iterations over half-width K tiles.

NVIDIA's batched-matmul sample loads 128×128 and 128×256 fp16 tiles per K step (96 KB): two stages
fit in a Hopper block's shared memory, so each load waits for the previous product (0.59–0.67 of
``torch.bmm`` on an H200, against 0.81–0.95 with 64-wide K tiles in 3–4 stages: bench/NOTES.md,
session 15). With ``K/2``-wide tiles the loop computes the same product: the tile at half-index
``2k + h`` holds the elements of half ``h`` of tile ``k``, the products are added in the same K
order, and where K is not a multiple of the tile the extra half-tile lies past the array and
reads zeros, which add nothing. The rewrite is taken only where that holds by construction:

- a ``for`` loop from 0 by 1 whose index is used only as the K index of tile loads, and whose
  body does nothing else that would run twice as often: every value it carries is a product's
  accumulator yielded straight back, and its other ops are pure and loop-invariant;
- each of those loads pads with zeros, keeps the array's axis order, and feeds matrix products
  directly or through a reshape that only drops unit axes, as the A operand's last axis or the
  B operand's second-to-last; both operands of every such product come from such loads;
- the loads of one iteration need more than ``STAGE_BYTES`` and each half keeps ≥ ``MIN_HALF``
  elements; the kernel names no ``num_stages`` (a tuned pipeline depth is left as tuned).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from ...ir.catalogue import OPS
from ...ir.core import Block, Function, Op, Value, tile_type, walk
from ...ir.types import TileType
from ...ir.verify import verify
from ...ops.memory import PaddingMode

STAGE_BYTES = 64 * 1024  # above this, fewer than three stages fit in 227 KB beside the epilogue
MIN_HALF = 64  # elements along K per half tile (a 128-byte fp16 row, the widest swizzle)


def _unit_drop_axis(src: tuple[int, ...], dst: tuple[int, ...], axis: int) -> int | None:
    """Where ``axis`` of ``src`` lands in ``dst`` when the reshape only drops or adds unit axes."""
    if [s for s in src if s != 1] != [s for s in dst if s != 1] or src[axis] == 1:
        return None
    rank = sum(1 for s in src[:axis] if s != 1)  # the K axis is the rank-th axis that is not a unit
    return [i for i, s in enumerate(dst) if s != 1][rank]


def _const(v: Value, value: int) -> bool:
    op = v.owner
    return op is not None and op.name == "constant" and op.attrs.get("value") == value and tile_type(v).shape == ()


@dataclass
class _Plan:
    """The loads to halve (with their K axis) and the reshapes after them (with their K axis)."""

    loads: list[tuple[Op, int]] = field(default_factory=list)
    reshapes: list[tuple[Op, int]] = field(default_factory=list)


def _plan(loop: Op, users: dict[int, list[Op]]) -> _Plan | None:
    if not (_const(loop.operands[0], 0) and _const(loop.operands[2], 1)):
        return None
    iv = loop.regions[0].args[0]
    plan, width, stage = _Plan(), None, 0
    operands_of: dict[int, int] = {}  # product op id -> how many of its A/B operands are split
    for load in users.get(iv.id, []):
        idx = load.operands[1:]
        if load.name != "load" or sum(v is iv for v in idx) != 1:
            return None
        axis = next(i for i, v in enumerate(idx) if v is iv)
        shape = load.attrs["shape"]
        if (load.attrs.get("padding") is not PaddingMode.ZERO or tuple(load.attrs.get("order", ())) != tuple(
                range(len(shape))) or shape[axis] % 2 or shape[axis] // 2 < MIN_HALF):
            return None
        if width not in (None, shape[axis]):
            return None
        width = shape[axis]
        stage += math.prod(shape) * tile_type(load.result).dtype.itemsize
        value, k_axis = load.result, axis  # k_axis: K's axis in the tile the product takes
        uses = users.get(value.id, [])
        if len(uses) == 1 and uses[0].name == "reshape":
            reshape = uses[0]
            moved = _unit_drop_axis(shape, reshape.attrs["shape"], axis)
            if moved is None:
                return None
            k_axis = moved
            plan.reshapes.append((reshape, k_axis))
            value = reshape.result
            uses = users.get(value.id, [])
        if not uses:
            return None
        nd = len(tile_type(value).shape)
        for mma in uses:
            if mma.name != "mma" or mma.operands[2] is value:
                return None
            role = 0 if mma.operands[0] is value else 1
            if mma.operands[1 - role] is value or k_axis != (nd - 1 if role == 0 else nd - 2):
                return None
            operands_of[id(mma)] = operands_of.get(id(mma), 0) + 1
        plan.loads.append((load, axis))
    if not plan.loads or stage <= STAGE_BYTES or any(n != 2 for n in operands_of.values()):
        return None
    return plan if _only_accumulates(loop, plan, users, set(operands_of)) else None


def _only_accumulates(loop: Op, plan: _Plan, users: dict[int, list[Op]], products: set[int]) -> bool:
    """Whether running the body twice as often changes nothing but how the sums are split: every
    value the loop carries is one product's accumulator, yielded straight back, and the body holds
    nothing else but the split loads, their reshapes and loop-invariant pure ops (no stores, prints,
    atomics, nested regions, other carried values: each would run twice as often)."""
    body = loop.regions[0]
    inside = {a.id for a in body.args} | {r.id for op in body.ops for r in op.results}
    mine = {id(op) for op, _ in plan.loads} | {id(op) for op, _ in plan.reshapes} | products
    for op in body.ops[:-1]:
        if id(op) in mine:
            continue
        if op.regions or OPS[op.name].effect != "pure" or any(v.id in inside for v in op.operands):
            return False
    yields = body.ops[-1].operands
    carried = body.args[1:]
    mmas = [op for op in body.ops if id(op) in products]
    if len(mmas) != len(carried):
        return False
    for mma in mmas:
        acc = mma.operands[2]
        if acc not in carried or users.get(acc.id, []) != [mma]:
            return False
        at = carried.index(acc)
        if yields[at] is not mma.result or users.get(mma.result.id, []) != [body.ops[-1]]:
            return False
    return True


def _parent(block: Block, target: Op) -> Block | None:
    for op in block.ops:
        if op is target:
            return block
        for region in op.regions:
            found = _parent(region, target)
            if found is not None:
                return found
    return None


def _users(fn: Function) -> tuple[list[Op], dict[int, list[Op]]]:
    ops = list(walk(fn.body))
    users: dict[int, list[Op]] = {}
    for op in ops:
        for v in op.operands:
            users.setdefault(v.id, []).append(op)
    return ops, users


def split_wide_k(fn: Function) -> Function | None:
    """A copy of ``fn`` with its wide-K product loops split (module docstring), or None where no loop
    qualifies (``fn`` is left as it is: it is shared with the other backends)."""
    if fn.hints.get("num_stages"):
        return None
    ops, users = _users(fn)
    chosen = [i for i, op in enumerate(ops) if op.name == "for" and _plan(op, users) is not None]
    if not chosen:  # the common case: no copy
        return None
    new = copy.deepcopy(fn, {id(fn.captures): fn.captures})
    ops, users = _users(new)
    for i in chosen:
        loop = ops[i]
        plan = _plan(loop, users)
        assert plan is not None  # the copy has the same ops in the same order
        for load, axis in plan.loads:
            shape = list(load.attrs["shape"])
            shape[axis] //= 2
            load.attrs = {**load.attrs, "shape": tuple(shape)}
            load.result.type = OPS["load"].rule([v.type for v in load.operands], load.attrs)[0]
        for reshape, axis in plan.reshapes:
            shape = list(reshape.attrs["shape"])
            shape[axis] //= 2
            reshape.attrs = {**reshape.attrs, "shape": tuple(shape)}
            reshape.result.type = TileType(tile_type(reshape.result).dtype, tuple(shape))
        stop = loop.operands[1]
        int_type = TileType(tile_type(stop).dtype, ())
        two = Op("constant", [], {"value": 2, "dtype": int_type.dtype, "shape": ()}, [int_type], loc=loop.loc)
        doubled = Op("mul", [stop, two.result], {}, [int_type], loc=loop.loc)
        parent = _parent(new.body, loop)
        assert parent is not None
        at = parent.ops.index(loop)
        parent.ops[at:at] = [two, doubled]
        loop.operands = [loop.operands[0], doubled.result, *loop.operands[2:]]
    verify(new)
    return new
