"""Raising the matmul K loop: ``for k: acc = mma(load(A, (i, k)), load(B, (k, j)), acc)``.

Run one tile step at a time, a K loop costs one small matrix product and one full pass
over the accumulator per step. Its result is exactly ``acc + A[rows, K-range] @
B[K-range, cols]`` (zero-padded loads contribute nothing), so the CPU backend recognises
the loop and computes it as one product over the whole K range — one BLAS call for all
blocks. Only the summation order changes, as it would between any two GEMM libraries.
"""
from __future__ import annotations

import numpy as np

from ...ir.core import Op
from ...ops.memory import PaddingMode
from .matmul import _operand, _product
from .memory import _classify

_PADDINGS = (PaddingMode.ZERO, PaddingMode.UNDETERMINED)


def _match(op: Op):
    """(load A, load B, mma, acc position) when ``op`` is a plain K loop, else None."""
    body = op.regions[0]
    iv = body.args[0]
    ops = body.ops
    if len(ops) != 4 or ops[-1].name != "yield":
        return None
    la, lb, mm = ops[0], ops[1], ops[2]
    if la.name != "load" or lb.name != "load" or mm.name != "mma":
        return None
    if mm.operands[0] is not la.result or mm.operands[1] is not lb.result:
        return None
    carried = body.args[1:]
    if mm.operands[2] not in carried or list(ops[-1].operands) != [
            mm.result if a is mm.operands[2] else a for a in carried]:
        return None
    for ld in (la, lb):
        if ld.attrs["order"] != (0, 1) or ld.attrs["padding"] not in _PADDINGS or len(ld.operands) != 3:
            return None
    # A indexed (i, k) and B indexed (k, j): k is the loop variable, i and j loop-invariant
    if la.operands[2] is not iv or lb.operands[1] is not iv:
        return None
    if la.operands[1] is iv or lb.operands[2] is iv or la.operands[1] in carried or lb.operands[2] in carried:
        return None
    if la.operands[1].owner is not None and la.operands[1].owner in ops:
        return None
    if lb.operands[2].owner is not None and lb.operands[2].owner in ops:
        return None
    return la, lb, mm, carried.index(mm.operands[2])


def _rows(run, arr: np.ndarray, idx: np.ndarray, size: int, k0: int, k1: int, axis: int) -> np.ndarray:
    """Tiles of ``arr`` along ``axis`` at tile index ``idx`` (batch-shaped), over K range [k0, k1).

    Returns batch + (size, k1-k0) for axis 0 (A) or batch + (k1-k0, size) for axis 1 (B),
    zero where the tile passes the array's edge.
    """
    nb = run.nb
    n = arr.shape[axis]
    c = _classify(idx, run.blockset)
    if c is not None and c[0] == "range" and c[3] == 1 and (c[2] + c[4]) * size <= n and c[2] >= 0:
        _, batch_axis, start, _, count = c  # consecutive whole tiles: a strided view, no copy
        part = arr[start * size:(start + count) * size, k0:k1] if axis == 0 else \
            arr[k0:k1, start * size:(start + count) * size]
        tiles = part.reshape(count, size, k1 - k0) if axis == 0 else \
            np.moveaxis(part.reshape(k1 - k0, count, size), 1, 0)
        shape = [1] * nb
        shape[batch_axis] = count
        return tiles.reshape(tuple(shape) + tiles.shape[1:])
    e = idx.astype(np.int64).reshape(idx.shape + (1,)) * size + np.arange(size)
    valid = (e >= 0) & (e < n)
    ec = np.clip(e, 0, max(n - 1, 0))
    if axis == 0:
        out = arr[:, k0:k1][ec]  # batch + (size, K)
        if not valid.all():
            out = np.where(valid[..., None], out, 0)
    else:
        out = np.moveaxis(arr[k0:k1, :][:, ec], 0, -2)  # batch + (K, size)
        if not valid.all():
            out = np.where(valid[..., None, :], out, 0)
    assert out.ndim == nb + 2
    return out


def try_kloop(run, op: Op, env) -> list | None:
    """Results of the ``for`` op computed as one product, or None when it is not a K loop."""
    m = _match(op)
    if m is None:
        return None
    la, lb, mm, acc_pos = m
    if mm.result.type.dtype.name not in ("float32", "float64", "int32", "int64"):
        return None  # narrow accumulators round after every step; keep the step-by-step loop
    bs = env.blocks
    lo, hi, step = (env.get(v) for v in op.operands[:3])
    if not (bs.is_uniform(lo) and bs.is_uniform(hi) and bs.is_uniform(step)):
        return None
    lo, hi, step = (int(x.reshape(-1)[0]) for x in (lo, hi, step))
    carried = [env.get(v) for v in op.operands[3:]]
    if step != 1 or hi <= lo:
        return None if step != 1 else carried
    A, B = env.get(la.operands[0]), env.get(lb.operands[0])
    tm, tk = la.attrs["shape"]
    tk2, tn = lb.attrs["shape"]
    if tk != tk2:
        return None
    k0 = lo * tk
    k1 = min(hi * tk, A.shape[1], B.shape[0])
    if k0 < 0:
        return None
    run.cur_env = env
    acc = carried[acc_pos]
    if k1 > k0:
        xd = mm.operands[0].type.dtype
        a = _rows(run, A, env.get(la.operands[1]), tm, k0, k1, 0)
        b = _rows(run, B, env.get(lb.operands[2]), tn, k0, k1, 1)
        prod = _product(_operand(a, xd), _operand(b, xd), run.nb)
        acc = (prod + acc.astype(prod.dtype, copy=False)).astype(mm.result.type.dtype.np_dtype, copy=False)
    carried[acc_pos] = acc
    return carried
