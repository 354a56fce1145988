"""Static bounds of integer values, for the code generator's masks, helpers and bulk atomics.

Integers wrap (docs/semantics.md), so a bound holds only if no op on the way can wrap: every op is
followed in exact integers and its result kept only when the whole interval fits the result's
dtype (``arange(64, int8, start=100)`` runs 100..127 and then -128..-93; ``bid(0) * 64`` wraps in
int32 past 2**25 blocks). A bound that wrapping breaks would drop a ``>= 0`` mask and let an index
reach memory before an array (tests/test_index_wrap_adversarial.py). Grid indices are bounded by
CUDA's grid, array sizes by the int32-offset limit (``launcher.needs_idx64``), loop variables by
their loop where ``iv + step`` cannot wrap. Unknown is None (the dtype's range).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...ir.core import Value
from ...ir.types import TileType

if TYPE_CHECKING:
    from .codegen import Module

Bounds = tuple[int | None, int | None]
_MAX_DEPTH = 24


def value_bounds(m: Module, v: Value, depth: int = 0) -> Bounds:
    """(lower, upper) of an integer scalar or tile in kernel ``m``, None where unknown (memoised)."""
    memo = m.lower_bounds
    if v.id in memo:
        return memo[v.id]
    lo, hi = (None, None) if depth > _MAX_DEPTH else _bounds(m, v, depth)
    t = v.type
    if isinstance(t, TileType) and t.dtype.is_int:
        info = np.iinfo(t.dtype.np_dtype)
        if lo is None or hi is None or lo < int(info.min) or hi > int(info.max):  # unknown, or may wrap
            lo, hi = (0, None) if t.dtype.kind == "u" else (None, None)
    memo[v.id] = lo, hi
    return lo, hi


def _full(m: Module, v: Value, depth: int) -> tuple[int, int] | None:
    """``value_bounds`` with the dtype's limits for what is unknown (None: not an integer)."""
    t = v.type
    if not isinstance(t, TileType) or not (t.dtype.is_int or t.dtype.is_bool):
        return None
    lo, hi = value_bounds(m, v, depth + 1)
    if t.dtype.is_bool:
        return (0 if lo is None else lo), (1 if hi is None else hi)
    info = np.iinfo(t.dtype.np_dtype)
    return (int(info.min) if lo is None else lo), (int(info.max) if hi is None else hi)


def _bounds(m: Module, v: Value, depth: int) -> Bounds:
    c = m.consts.get(v.id)
    if c is not None:
        return (int(c[0]), int(c[0])) if (c[1].is_int or c[1].is_bool) else (None, None)
    t = v.type
    if not isinstance(t, TileType) or t.dtype.is_float:
        return None, None
    if t.dtype.is_bool:
        return 0, 1
    limit = int(np.iinfo(t.dtype.np_dtype).max)
    if v.id in m.iv_range:  # start <= iv < stop by a positive step; not where iv + step may wrap
        start, stop, step = (_full(m, x, depth) for x in m.iv_range[v.id])
        if start is None or stop is None or step is None or step[0] < 1 or stop[1] + step[1] > limit:
            return None, None
        return start[0], stop[1] - 1
    op = v.owner
    if op is None:
        return None, None
    name = op.name
    if name in ("bid", "num_blocks"):  # CUDA's grid: x below 2**31, y and z below 2**16 (else flat along x)
        top = 2**31 - 1 if op.attrs.get("axis", 0) == 0 or m.facts.big_grid else 65535
        return (0, top - 1) if name == "bid" else (1, top)
    if name == "array_dim":  # an array with int32 offsets is smaller (launcher.needs_idx64)
        return 0, 2**31 - 2**25 - 1 if limit < 2**32 else 2**62
    if name == "arange":
        start, step, n = op.attrs["start"], op.attrs["step"], op.attrs["size"]
        if not (isinstance(start, int) and isinstance(step, int)):
            return None, None
        ends = (start, start + (n - 1) * step)
        return min(ends), max(ends)
    if name in ("broadcast", "reshape", "broadcast_to", "permute"):
        return value_bounds(m, op.operands[0], depth + 1)
    if name == "astype":
        src = _full(m, op.operands[0], depth)
        return (None, None) if src is None else src  # kept only where it fits the new dtype
    if name in ("add", "sub", "mul", "floordiv", "mod", "maximum", "minimum", "where"):
        b = [_full(m, o, depth) for o in (op.operands[1:] if name == "where" else op.operands)]
        return (None, None) if None in b else interval(name, [x for x in b if x is not None])
    return None, None


def interval(name: str, b: list[tuple[int, int]]) -> tuple[int, int]:
    """Interval arithmetic in exact integers for the ops followed (safetile's ``//`` rounds toward
    -inf, ``%`` takes the divisor's sign, both give 0 for a zero divisor; ``where``: its values)."""
    (l0, h0), (l1, h1) = b[0], b[1]
    if name == "add":
        return l0 + l1, h0 + h1
    if name == "sub":
        return l0 - h1, h0 - l1
    if name == "mul":
        corners = [x * y for x in (l0, h0) for y in (l1, h1)]
        return min(corners), max(corners)
    if name == "floordiv":  # monotone in each operand on each side of 0: the ends, and +-1
        divisors = [d for d in {l1, h1, -1, 1} if d != 0 and l1 <= d <= h1]
        quotients = [x // d for x in (l0, h0) for d in divisors] + ([0] if l1 <= 0 <= h1 else [])
        return min(quotients), max(quotients)
    if name == "mod":
        return min(l1 + 1, 0), max(h1 - 1, 0)
    if name == "maximum":
        return max(l0, l1), max(h0, h1)
    if name == "minimum":
        return min(l0, l1), min(h0, h1)
    return min(l0, l1), max(h0, h1)  # where
