"""CPU lowering of the matmul family (ops/matmul.py).

When the two operands depend on different grid axes (the usual GEMM: A on the row-block
axis, B on the column-block axis) every block's product is a piece of one large matrix
product, so it runs as a single BLAS call instead of one small call per block.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from .executor import lowers


def _operand(x: np.ndarray, dtype) -> np.ndarray:
    if dtype.name == "tfloat32":
        return dt.round_tf32(x)
    if dtype.is_float:
        return x.astype(np.float64 if dtype.name == "float64" else np.float32, copy=False)
    return x.astype(np.int64 if dtype.bits == 64 else np.int32, copy=False)


def _product(a: np.ndarray, b: np.ndarray, nb: int) -> np.ndarray:
    """Batched a @ b over batch + (batch3?) + (m, k) @ (k, n), one BLAS call when possible."""
    ab, bb = a.shape[:nb], b.shape[:nb]
    disjoint = all(x == 1 or y == 1 for x, y in zip(ab, bb))
    if a.ndim == nb + 2 and disjoint and a.dtype.kind == "f" and np.prod(ab) * np.prod(bb) > 1:
        m, k = a.shape[nb:]
        n = b.shape[-1]
        ia = [i for i in range(nb) if ab[i] != 1]
        ib = [i for i in range(nb) if bb[i] != 1]
        a2 = a.reshape(tuple(ab[i] for i in ia) + (m, k))
        b2 = b.reshape(tuple(bb[i] for i in ib) + (k, n))
        na, nbb = len(ia), len(ib)
        a_rows = a2.reshape(-1, k)  # (A * m, k)
        b_cols = np.moveaxis(b2, -2, 0).reshape(k, -1)  # (k, B * n)
        c = a_rows @ b_cols  # (A*m, B*n)
        c = c.reshape(tuple(ab[i] for i in ia) + (m,) + tuple(bb[i] for i in ib) + (n,))
        # axes: A-batch..., m, B-batch..., n -> batch axes in grid order, then m, n
        src = {ax: p for p, ax in enumerate(ia)}
        src.update({ax: na + 1 + p for p, ax in enumerate(ib)})
        order = [src[ax] for ax in sorted(src)] + [na, na + 1 + nbb]
        c = c.transpose(order)
        shape = tuple(max(x, y) for x, y in zip(ab, bb)) + (m, n)
        return c.reshape(shape)
    return np.matmul(a, b)


@lowers("mma")
def mma(run, op, args):
    a, b, acc = args
    xd = op.operands[0].type.dtype
    out = op.results[0].type.dtype
    prod = _product(_operand(a, xd), _operand(b, xd), run.nb)
    total = prod + acc.astype(prod.dtype, copy=False)
    return total.astype(out.np_dtype, copy=False)


def _decoded(x: np.ndarray, d) -> np.ndarray:
    """Values of a narrow float format as float64 (float8_e5m3fnu is kept as raw bits)."""
    from ... import numerics
    return numerics.decode(x, d) if d.raw_bits else x.astype(np.float64)


@lowers("mma_scaled")
def mma_scaled(run, op, args):
    """Decoded operands times their block scales (each scale repeated over its B elements of K),
    multiplied in float64 and rounded once to the float32 accumulator."""
    x, xs, y, ys, acc = args
    xd, sd = op.operands[0].type.dtype, op.operands[1].type.dtype
    k = op.operands[0].type.shape[-1]
    block = k // op.operands[1].type.shape[-1]
    xv = _decoded(x, xd) * np.repeat(_decoded(xs, sd), block, axis=-1)
    yv = _decoded(y, xd) * np.repeat(_decoded(ys, sd), block, axis=-2)
    with np.errstate(all="ignore"):
        total = np.matmul(xv, yv) + acc.astype(np.float64)
    return total.astype(np.float32)
