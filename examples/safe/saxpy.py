"""SAXPY in the safe style: y = alpha * x + y, with ``y`` both read and written.

``y`` is a mutable partition: each block loads its own sub-tensor (``y.load()``), and
stores it back whole. ``alpha`` is a run-time scalar (changing it never recompiles).
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def saxpy(y: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], alpha: ct.f32):
    y.store(alpha * ct.load_tile_like(x, y) + y.load())


def run(n=777, block=256, alpha=2.5, seed=0):
    x = ct.randn(n, seed=seed).sync().shared()  # read-only, shareable
    y0 = ct.randn(n, seed=seed + 1).sync()
    ref = alpha * x.to_numpy() + y0.to_numpy()
    y = y0.partition(block)
    y, x, _ = saxpy(y, x, alpha).sync()
    return y.unpartition().to_numpy(), ref


def main():
    got, ref = run(1 << 20, 1024)
    print(f"saxpy: max error {np.abs(got - ref).max():.1e}")


if __name__ == "__main__":
    main()
