"""Batched matmul on a 3-D grid: C[b] = A[b] @ B[b], one (1, BM, BN) tile per block.

The output partition ``(1, BM, BN)`` of a ``(batch, M, N)`` tensor gives the grid
``(batch, M / BM, N / BN)``: block (b, i, j) owns C[b, i-tile, j-tile].
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def bmm(c: ct.Mut[ct.f32, (1, "BM", "BN")], a: ct.Ref[ct.f32, (-1, -1, "K")], b: ct.Ref[ct.f32, (-1, "K", -1)]):
    pa = a.partition((1, BM, BK))  # noqa: F821 - generics
    pb = b.partition((1, BK, BN))  # noqa: F821
    batch, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
    for k in range(pa.num_tiles(2)):
        ta = pa.load((batch, i, k)).reshape((BM, BK))  # noqa: F821
        tb = pb.load((batch, k, j)).reshape((BK, BN))  # noqa: F821
        acc = ct.mma(ta, tb, acc)
    c.store(acc.reshape((1, BM, BN)))  # noqa: F821


def run(batch=3, m=64, n=48, k=40, bm=32, bn=16, bk=8, seed=0):
    a = ct.randn((batch, m, k), seed=seed).sync()
    b = ct.randn((batch, k, n), seed=seed + 1).sync()
    ref = a.to_numpy() @ b.to_numpy()
    c = ct.full((batch, m, n), np.nan).sync().partition((1, bm, bn))
    assert c.grid() == (batch, -(-m // bm), -(-n // bn))
    c, a, b = bmm.generics(BK=bk)(c, a, b).sync()
    return c.unpartition().to_numpy(), ref


def main():
    got, ref = run(8, 128, 128, 64, 64, 64, 32)
    print(f"batched matmul: relative error {np.linalg.norm(got - ref) / np.linalg.norm(ref):.2e}")


if __name__ == "__main__":
    main()
