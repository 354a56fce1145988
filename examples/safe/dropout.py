"""Seeded dropout in the safe style, with a counter-based RNG built from integer tile ops.

Every element's random number is a hash of (seed, global index): the same seed gives
the same mask on any backend and any block size, and no RNG state is shared between
blocks. Kept elements are scaled by 1 / (1 - p).
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.function
def hash_u32(h):
    """A 32-bit integer mixer (xorshift-multiply); ``h`` is a uint32 tile."""
    h = h ^ (h >> 16)
    h = h * 0x7FEB352D
    h = h ^ (h >> 15)
    h = h * 0x846CA68B
    return h ^ (h >> 16)


@ct.entry
def dropout(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], p: ct.f32, seed: ct.u32):
    idx = (ct.bid(0) * B + ct.arange(B, dtype=ct.int32)).astype(ct.uint32)  # noqa: F821 - generic
    h = hash_u32(idx + seed * 0x9E3779B9)
    u = (h >> 8).astype(ct.float32) * (1.0 / (1 << 24))  # uniform in [0, 1)
    t = ct.load_tile_like(x, z)
    z.store(ct.where(u >= p, t / (1.0 - p), 0.0))


def reference(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = np.arange(x.size, dtype=np.uint32) + np.uint32(seed) * np.uint32(0x9E3779B9)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x7FEB352D)
        h ^= h >> np.uint32(15)
        h *= np.uint32(0x846CA68B)
        h ^= h >> np.uint32(16)
    u = (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))
    return np.where(u >= np.float32(p), x / np.float32(1.0 - p), np.float32(0.0)).astype(np.float32)


def run(n=3000, block=512, p=0.3, seed=1234):
    x = ct.randn(n, seed=7).sync()
    ref = reference(x.to_numpy(), p, seed)
    z = ct.full(n, np.nan).sync().partition(block)
    z, x, _, _ = dropout(z, x, p, seed).sync()
    return z.unpartition().to_numpy(), ref


def main():
    got, ref = run(1 << 16, 1024)
    print(f"dropout: max error {np.abs(got - ref).max():.1e}, kept {np.mean(got != 0):.3f} (expected 0.7)")


if __name__ == "__main__":
    main()
