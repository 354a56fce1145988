"""Vector add, the safe-style hello world: z = x + y.

``z`` is partitioned into 128-element sub-tensors (grid inferred: ceil(n / 128) blocks);
each block loads the matching tiles of the read-only ``x`` and ``y`` and stores its own
sub-tensor. There is no store index, so no block can write another block's elements.
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


def run(n=1000, block=128, seed=0):
    x = ct.rand(n, seed=seed).sync()
    y = ct.rand(n, seed=seed + 1).sync()
    ref = x.to_numpy() + y.to_numpy()
    z = ct.full(n, np.nan).sync().partition(block)  # poisoned output, 8 sub-tensors for n=1000
    z, x, y = add(z, x, y).sync()  # same kinds in, same kinds out
    return z.unpartition().to_numpy(), ref


def main():
    got, ref = run(1 << 20, 1024)
    print(f"vector add of 2^20 elements: max error {np.abs(got - ref).max():.1e}")


if __name__ == "__main__":
    main()
