"""GEMM with a K loop in the safe style: each block owns one (BM, BN) tile of C.

C's partition gives every block its output tile; A and B are read-only and partitioned
inside the kernel, walked along K with ``ct.mma``.
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def gemm(c: ct.Mut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f32, (-1, -1)], b: ct.Ref[ct.f32, (-1, -1)]):
    pa = a.partition((BM, BK))  # noqa: F821 - BM, BN (from c's partition) and BK (explicit) are generics
    pb = b.partition((BK, BN))  # noqa: F821
    acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
    for k in range(pa.num_tiles(1)):
        acc = ct.mma(pa.load((ct.bid(0), k)), pb.load((k, ct.bid(1))), acc)
    c.store(acc)


def run(m=96, n=80, k=72, bm=32, bn=32, bk=16, seed=0):
    """C = A @ B on random data; returns (result, NumPy reference)."""
    a = ct.randn((m, k), seed=seed).sync()
    b = ct.randn((k, n), seed=seed + 1).sync()
    ref = a.to_numpy() @ b.to_numpy()
    c = ct.full((m, n), np.nan).sync().partition((bm, bn))  # poisoned output
    c, a, b = gemm.generics(BK=bk)(c, a, b).sync()
    return c.unpartition().to_numpy(), ref


def main():
    got, ref = run(256, 192, 320, 64, 64, 32)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    print(f"gemm 256x192x320: relative error {err:.2e}")


if __name__ == "__main__":
    main()
