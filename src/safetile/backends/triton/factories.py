"""Triton lowerings of the factories family (ops/factories.py)."""
from __future__ import annotations

from ... import dtypes as dt
from .codegen import Gen, lowers


@lowers("arange")
def arange(g: Gen, op):
    a = op.attrs
    n, start, step, d = a["size"], a["start"], a["step"], a["dtype"]
    base = f"tl.arange(0, {n})"
    if isinstance(start, float) or isinstance(step, float):
        # like the CPU backend: float64 arithmetic, one rounding to the target type
        return g.cast(f"({base}.to(tl.float64) * {float(step)!r} + {float(start)!r})", dt.float64, d)
    lo, hi = sorted((start, start + step * (n - 1)))
    if -2**31 <= lo and hi < 2**31:
        expr = base if (start, step) == (0, 1) else f"({base} * {int(step)} + {int(start)})"
        return expr if d is dt.int32 else g.cast(expr, dt.int32, d)
    return g.cast(f"({base}.to(tl.int64) * {int(step)} + {int(start)})", dt.int64, d)


@lowers("broadcast")
def broadcast(g: Gen, op):
    shape = op.attrs["shape"]
    if not shape:
        return op.operands[0]
    return f"tl.broadcast_to({g.val(op.operands[0])}, {list(shape)!r})"
