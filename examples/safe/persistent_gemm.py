"""Persistent GEMM: a mapped partition lets a few blocks each own several output tiles.

``c.partition((BM, BN)).map(num_blocks)`` launches ``num_blocks`` blocks; block ``b``
visits output tiles ``b, b + num_blocks, ...`` through ``c.iter_indices()``. Indices come
only from that iterator, so two blocks never write the same tile.
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def persistent_gemm(c: ct.MappedMut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f32, (-1, "K")],
                    b: ct.Ref[ct.f32, ("K", -1)]):
    pa = a.partition((BM, BK))  # noqa: F821 - generics
    pb = b.partition((BK, BN))  # noqa: F821
    for idx in c.iter_indices():
        i, j = idx
        acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
        for k in range(pa.num_tiles(1)):
            acc = ct.mma(pa.load((i, k)), pb.load((k, j)), acc)
        c.store(acc, idx)


def run(m=128, n=96, k=64, bm=32, bn=32, bk=32, num_blocks=5, seed=0):
    a = ct.randn((m, k), seed=seed).sync()
    b = ct.randn((k, n), seed=seed + 1).sync()
    ref = a.to_numpy() @ b.to_numpy()
    c = ct.full((m, n), np.nan).sync().partition((bm, bn)).map(num_blocks)
    c, a, b = persistent_gemm.generics(BK=bk)(c, a, b).sync()
    return c.unpartition().to_numpy(), ref


def main():
    got, ref = run(256, 256, 128, 64, 64, 32, num_blocks=3)
    print(f"persistent gemm: relative error {np.linalg.norm(got - ref) / np.linalg.norm(ref):.2e}")


if __name__ == "__main__":
    main()
