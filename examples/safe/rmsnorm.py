"""RMSNorm in the safe style: z = x / sqrt(mean(x^2) + eps) * w, BM rows per block."""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def rms_norm(z: ct.Mut[ct.f32, ("BM", "NP")], x: ct.Ref[ct.f32, (-1, -1)], w: ct.Ref[ct.f32, -1],
             eps: ct.f32):
    t = ct.load_tile_like(x, z)  # zero-padded past the row end: sums are unaffected
    n = x.shape[1]
    ms = ct.sum(t * t, axis=1, keepdims=True) / n.astype(ct.float32)
    weight = w.partition((NP,)).load((0,)).reshape((1, NP))  # noqa: F821 - generic
    z.store(t * ct.rsqrt(ms + eps) * weight)


def reference(x, w, eps):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def run(rows=37, cols=96, bm=8, eps=1e-5, seed=0):
    x = ct.randn((rows, cols), seed=seed).sync()
    w = ct.rand(cols, seed=seed + 1).sync().shared()
    ref = reference(x.to_numpy().astype(np.float64), w.to_numpy().astype(np.float64), eps)
    np2 = 1 << max(0, (cols - 1).bit_length())
    z = ct.full((rows, cols), np.nan).sync().partition((bm, np2))
    z, x, w, _ = rms_norm(z, x, w, eps).sync()
    return z.unpartition().to_numpy(), ref


def main():
    got, ref = run(512, 768, 8)
    print(f"rms norm 512x768: max error {np.abs(got - ref).max():.1e}")


if __name__ == "__main__":
    main()
