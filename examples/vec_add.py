"""Vector addition on the CPU backend: the three forms from the CUDA tile guide.

Run: python examples/vec_add.py
"""
import numpy as np

import safetile as ct


@ct.kernel
def vec_add(a, b, c, TILE: ct.Constant[int]):
    """One-call form: each block loads its TILE-sized piece of a and b and stores the sum."""
    bid = ct.bid(0)
    a_tile = ct.load(a, index=(bid,), shape=(TILE,))
    b_tile = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=a_tile + b_tile)


@ct.kernel
def vec_add_view(a, b, c, TILE: ct.Constant[int]):
    """Tiled-view form: the tile shape is bound once to a view of each array."""
    bid = ct.bid(0)
    c.tiled_view((TILE,)).store((bid,), a.tiled_view((TILE,)).load((bid,)) + b.tiled_view((TILE,)).load((bid,)))


@ct.kernel
def vec_add_gather(a, b, c, TILE: ct.Constant[int]):
    """Gather/scatter form: one element index per lane; out-of-bounds lanes are dropped."""
    indices = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(c, indices, ct.gather(a, indices) + ct.gather(b, indices))


def main() -> None:
    rng = np.random.default_rng()
    n, tile = 100_000, 1024
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    for kernel in (vec_add, vec_add_view, vec_add_gather):
        c = np.full(n, np.nan, dtype=np.float32)
        ct.launch(None, (ct.cdiv(n, tile),), kernel, (a, b, c, tile))
        err = float(np.max(np.abs(c - (a + b))))
        print(f"{kernel.__name__:15s} n={n} tiles of {tile}: max |c - (a + b)| = {err:.1e}")
        assert err == 0.0
    print(vec_add.ir(a, b, c, tile))


if __name__ == "__main__":
    main()
