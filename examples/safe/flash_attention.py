"""Flash attention (forward) in the safe style, optionally causal.

The output ``o`` of shape (heads, seq, D) is partitioned (1, BM, D): block (h, i) owns
BM query rows of head h. It streams BN-row blocks of K and V with an online softmax
(running max ``m`` and sum ``l``), masking keys past the sequence end (and, if causal,
keys after the query).
"""
from __future__ import annotations

import numpy as np

import safetile as ct


@ct.entry
def flash_attention(o: ct.Mut[ct.f32, (1, "BM", "D")], q: ct.Ref[ct.f32, (-1, -1, "D")],
                    k: ct.Ref[ct.f32, (-1, -1, "D")], v: ct.Ref[ct.f32, (-1, -1, "D")], scale: ct.f32,
                    causal: ct.Constant[bool]):
    h, i = ct.bid(0), ct.bid(1)
    qt = ct.load_tile_like(q, o).reshape((BM, D))  # noqa: F821 - generics
    pk = k.partition((1, BN, D))  # noqa: F821
    pv = v.partition((1, BN, D))  # noqa: F821
    seq = k.shape[1]
    rows = i * BM + ct.arange(BM, dtype=ct.int32).reshape((BM, 1))  # noqa: F821
    m = ct.full((BM, 1), -np.inf, ct.float32)  # noqa: F821
    l = ct.zeros((BM, 1), ct.float32)  # noqa: F821, E741
    acc = ct.zeros((BM, D), ct.float32)  # noqa: F821
    for j in range(pk.num_tiles(1)):
        kt = pk.load((h, j, 0)).reshape((BN, D))  # noqa: F821
        vt = pv.load((h, j, 0)).reshape((BN, D))  # noqa: F821
        s = ct.matmul(qt, ct.transpose(kt)) * scale
        cols = j * BN + ct.arange(BN, dtype=ct.int32).reshape((1, BN))  # noqa: F821
        valid = cols < seq
        if causal:
            valid = valid & (cols <= rows)
        s = ct.where(valid, s, -np.inf)
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m - m_new)
        l = l * alpha + ct.sum(p, axis=1, keepdims=True)  # noqa: E741
        acc = acc * alpha + ct.matmul(p, vt)
        m = m_new
    o.store((acc / l).reshape((1, BM, D)))  # noqa: F821


def reference(q, k, v, scale, causal):
    s = np.einsum("hqd,hkd->hqk", q, k) * scale
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    s = s - s.max(axis=2, keepdims=True)
    p = np.exp(s)
    return np.einsum("hqk,hkd->hqd", p / p.sum(axis=2, keepdims=True), v)


def run(heads=2, seq=100, d=32, bm=32, bn=16, causal=False, seed=0):
    q, k, v = (ct.randn((heads, seq, d), seed=seed + i).sync() for i in range(3))
    scale = 1.0 / np.sqrt(d)
    ref = reference(*(t.to_numpy().astype(np.float64) for t in (q, k, v)), scale, causal)
    o = ct.full((heads, seq, d), np.nan).sync().partition((1, bm, d))
    o, q, k, v, _, _ = flash_attention.generics(BN=bn)(o, q, k, v, scale, causal).sync()
    return o.unpartition().to_numpy(), ref


def main():
    for causal in (False, True):
        got, ref = run(4, 256, 64, 64, 32, causal)
        print(f"flash attention (causal={causal}): max error {np.abs(got - ref).max():.1e}")


if __name__ == "__main__":
    main()
