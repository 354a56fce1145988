"""Row softmax in the safe style: each block owns BM whole rows of the output.

The output is partitioned ``(BM, NP)`` where ``NP`` is the row length rounded up to a
power of two, so one block covers full rows; columns past the row end are masked to
-inf before the max and the sum.
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def softmax(z: ct.Mut[ct.f32, ("BM", "NP")], x: ct.Ref[ct.f32, (-1, -1)]):
    row = ct.load_tile_like(x, z)
    cols = ct.arange(NP, dtype=ct.int32).reshape((1, NP))  # noqa: F821 - generic from z's partition
    row = ct.where(cols < x.shape[1], row, -np.inf)
    row = row - ct.max(row, axis=1, keepdims=True)
    e = ct.exp(row)
    z.store(e / ct.sum(e, axis=1, keepdims=True))


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run(rows=50, cols=100, bm=8, seed=0):
    x = ct.randn((rows, cols), seed=seed).sync()
    ref = reference(x.to_numpy().astype(np.float64))
    z = ct.full((rows, cols), np.nan).sync().partition((bm, next_pow2(cols)))
    z, x = softmax(z, x).sync()
    return z.unpartition().to_numpy(), ref


def main():
    got, ref = run(1024, 1000, 16)
    print(f"softmax 1024x1000: max error {np.abs(got - ref).max():.1e}")


if __name__ == "__main__":
    main()
