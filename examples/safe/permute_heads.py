"""The head-permutation kernel: (batch, heads, seq, D) → (batch, seq, heads, D).

The paper's motivating bug. In the unchecked (cuTile Python) style the kernel computes
its own store rows, ``row = s * stride_s + h * stride_h``; swapping the two strides
(``s * stride_h + h * stride_s``) makes different blocks write the same rows — a data
race that corrupts a large fraction of the output and that the CPU race detector
reports. In the safe style the output is a partition: each block stores its sub-tensor
and has no index to swap; the worst a swapped *load* index can do is read the wrong
head, never race.
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.kernel
def permute_heads_unchecked(x, out, BS: ct.Constant[int], D: ct.Constant[int], swap: ct.Constant[bool]):
    """x: (B, H, S, D); out: (B, S * H, D), row s * H + h holds x[b, h, s]."""
    b, h, st = ct.bid(0), ct.bid(1), ct.bid(2)
    heads = ct.num_blocks(1)
    tile = ct.load(x, index=(b, h, st, 0), shape=(1, 1, BS, D)).reshape((BS, D))
    s = st * BS + ct.arange(BS, dtype=ct.int32).reshape((BS, 1))
    stride_s, stride_h = heads, 1
    if swap:
        row = s * stride_h + h * stride_s  # the bug: strides swapped
    else:
        row = s * stride_s + h * stride_h
    cols = ct.arange(D, dtype=ct.int32).reshape((1, D))
    ct.scatter(out, (b, row, cols), tile)


@ct.entry
def permute_heads(out: ct.Mut[ct.f32, (1, "BS", "D")], x: ct.Ref[ct.f32, (-1, -1, -1, "D")]):
    """out: (B, S, H * D) partitioned (1, BS, D): block (b, st, h) owns out[b, st-tile, head h]."""
    b, st, h = ct.bid(0), ct.bid(1), ct.bid(2)
    t = x.partition((1, 1, BS, D)).load((b, h, st, 0))  # noqa: F821 - generics
    out.store(t.reshape((1, BS, D)))  # noqa: F821


def reference(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3))


def inputs(batch=2, heads=4, seq=32, d=16, seed=0):
    return np.random.default_rng(seed).standard_normal((batch, heads, seq, d)).astype(np.float32)


def run_unchecked(x: np.ndarray, bs=8, swap=False, detect=False):
    """Run the unchecked kernel; returns (out as (B, S, H, D), race report or None)."""
    b, h, s, d = x.shape
    out = np.full((b, s * h, d), np.nan, dtype=np.float32)
    args = (x, out, bs, d, swap)
    grid = (b, h, s // bs)
    report = None
    if detect:
        report = ct.detect_races(permute_heads_unchecked, grid, args, raise_on_race=False)
    else:
        ct.launch(None, grid, permute_heads_unchecked, args)
    return out.reshape(b, s, h, d), report


def run_safe(x: np.ndarray, bs=8):
    b, h, s, d = x.shape
    xt = ct.from_numpy(x).sync().shared()
    out = ct.full((b, s, h * d), np.nan).sync().partition((1, bs, d))
    assert out.grid() == (b, s // bs, h)
    out, xt = permute_heads(out, xt).sync()
    return out.unpartition().reshape(b, s, h, d).to_numpy()


def main():
    x = inputs(2, 4, 64, 32)
    ref = reference(x)
    good, rep = run_unchecked(x, swap=False, detect=True)
    print(f"unchecked, correct strides: exact={np.array_equal(good, ref)}; race detector: {rep.describe()}")
    bad, rep = run_unchecked(x, swap=True, detect=True)
    wrong = np.mean(~np.isclose(bad, ref))
    print(f"unchecked, swapped strides: {100 * wrong:.0f}% of elements wrong")
    print(rep.describe(limit=3))
    safe = run_safe(x)
    print(f"safe style: exact={np.array_equal(safe, ref)} (no store index exists to swap)")


if __name__ == "__main__":
    main()
