"""Attention kernels: QK-norm + RoPE + KV-cache writes, split-K decode attention and its
merge, and causal flash attention for the prefill. All safe-style entry kernels.

Layouts. ``qkv`` is the stacked projection output, float32 ``[rows, (Nq + 2·Nkv)·D]``:
query head h at columns ``h·D``, key head g at ``(Nq + g)·D``, value head g at
``(Nq + Nkv + g)·D``. Each layer's cache is ``[Nkv, T, D]`` (T, the capacity, a power
of two) for keys and for values. RoPE uses the "rotate half" convention, so every head is
handled as two halves of ``D2 = D/2``: ``(a, b) → (a·cos − b·sin, b·cos + a·sin)``; the
halves are loaded as separate tiles and the scores are ``q_a·k_aᵀ + q_b·k_bᵀ``, so no
tile is ever split in registers. ``cos``/``sin`` are float32 ``[T, D2]`` tables.

The cache writes use an in-block partition: a block owns one key/value head's whole cache
(``partition_prefix((1,))``) and stores rows at run-time positions inside it
(``kc.partition((1, 1, D2)).store(tile, (0, pos, 0))``), which can never reach another
head's cache.
"""
from __future__ import annotations

import numpy as np

import safetile as ct

ZERO = ct.PaddingMode.ZERO
NEG_INF = ct.PaddingMode.NEG_INF


def _norm_rope(a, b, wa, wb, c, s, eps, D):
    """RMSNorm over a head (halves ``a``, ``b`` of shape (R, D2)), then RoPE."""
    ms = (ct.sum(a * a, axis=1, keepdims=True) + ct.sum(b * b, axis=1, keepdims=True)) / D
    r = ct.rsqrt(ms + eps)
    a = a * r * wa
    b = b * r * wb
    return a * c - b * s, b * c + a * s


def _halves(w, D2):
    """A head-norm weight as its two halves, float32 (1, D2) each."""
    return (ct.load(w, (0,), (D2,), padding_mode=ZERO).astype(ct.float32).reshape((1, D2)),
            ct.load(w, (1,), (D2,), padding_mode=ZERO).astype(ct.float32).reshape((1, D2)))


@ct.entry
def rope_kv_append(kc: ct.Mut["C", (1, "T", "D")], vc: ct.Mut["C", (1, "T", "D")], qkv: ct.Ref[ct.f32, (-1, -1)],
                   knorm: ct.Ref["W", ("D",)], cos: ct.Ref[ct.f32, (-1, -1)], sin: ct.Ref[ct.f32, (-1, -1)],
                   pos: ct.Ref[ct.i32, (1,)], row: ct.i32, nq: ct.i32, nkv: ct.i32, eps: ct.f32):
    """Decode: key head g of qkv[row] through k-norm and RoPE at position pos, then key and value
    written to row pos of head g's caches."""
    D2 = D // 2
    g = ct.bid(0)
    p = ct.load(pos, (0,), ())
    h = nq + g
    ka = ct.load(qkv, (row, 2 * h), (1, D2), padding_mode=ZERO)
    kb = ct.load(qkv, (row, 2 * h + 1), (1, D2), padding_mode=ZERO)
    wa, wb = _halves(knorm, D2)
    c = ct.load(cos, (p, 0), (1, D2), padding_mode=ZERO)
    s = ct.load(sin, (p, 0), (1, D2), padding_mode=ZERO)
    ra, rb = _norm_rope(ka, kb, wa, wb, c, s, eps, D)
    pk = kc.partition((1, 1, D2))
    pk.store(ra.reshape((1, 1, D2)).astype(kc.dtype), (0, p, 0))
    pk.store(rb.reshape((1, 1, D2)).astype(kc.dtype), (0, p, 1))
    v = ct.load(qkv, (row, nq + nkv + g), (1, D), padding_mode=ZERO)
    vc.partition((1, 1, D)).store(v.reshape((1, 1, D)).astype(vc.dtype), (0, p, 0))


@ct.entry
def rope_kv_fill(kc: ct.Mut["C", (1, "T", "D")], vc: ct.Mut["C", (1, "T", "D")], qkv: ct.Ref[ct.f32, (-1, -1)],
                 knorm: ct.Ref["W", ("D",)], cos: ct.Ref[ct.f32, (-1, -1)], sin: ct.Ref[ct.f32, (-1, -1)],
                 nq: ct.i32, nkv: ct.i32, eps: ct.f32):
    """Prefill: keys and values of every prompt row (positions 0, 1, ...) into head g's caches,
    BT rows at a time."""
    D2 = D // 2
    g = ct.bid(0)
    h = nq + g
    wa, wb = _halves(knorm, D2)
    pk = kc.partition((1, BT, D2))
    pv = vc.partition((1, BT, D))
    for t in range(ct.cdiv(qkv.shape[0], BT)):
        ka = ct.load(qkv, (t, 2 * h), (BT, D2), padding_mode=ZERO)
        kb = ct.load(qkv, (t, 2 * h + 1), (BT, D2), padding_mode=ZERO)
        c = ct.load(cos, (t, 0), (BT, D2), padding_mode=ZERO)
        s = ct.load(sin, (t, 0), (BT, D2), padding_mode=ZERO)
        ra, rb = _norm_rope(ka, kb, wa, wb, c, s, eps, D)
        pk.store(ra.reshape((1, BT, D2)).astype(kc.dtype), (0, t, 0))
        pk.store(rb.reshape((1, BT, D2)).astype(kc.dtype), (0, t, 1))
        v = ct.load(qkv, (t, nq + nkv + g), (BT, D), padding_mode=ZERO)
        pv.store(v.reshape((1, BT, D)).astype(vc.dtype), (0, t, 0))


@ct.entry
def attn_decode(o: ct.Mut[ct.f32, (1, 1, "G", "D")], lse: ct.Mut[ct.f32, (1, 1, "G")],
                qkv: ct.Ref[ct.f32, (-1, -1)], kc: ct.Ref["C", (-1, -1, "D")], vc: ct.Ref["C", (-1, -1, "D")],
                qnorm: ct.Ref["W", ("D",)], cos: ct.Ref[ct.f32, (-1, -1)], sin: ct.Ref[ct.f32, (-1, -1)],
                pos: ct.Ref[ct.i32, (1,)], row: ct.i32, scale: ct.f32, eps: ct.f32):
    """Split-K flash-decoding: block (g, s) attends the G query heads of key/value head g (q-norm
    and RoPE applied here) to its share of the cache positions [0, pos]: the keys' BN-wide tiles
    are dealt evenly over the S splits (the grid's second axis), so a short context uses few
    tiles per split and a long one more, in the same captured graph. It writes its normalised
    partial output and log-sum-exp; splits with no keys write nothing (the merge reads only the
    splits that hold keys). Query rows are padded to QM (>= 16 for the matrix units)."""
    D2 = D // 2
    g = ct.bid(0)
    sp = ct.bid(1)
    p = ct.load(pos, (0,), ())
    n = p + 1
    per = ct.cdiv(ct.cdiv(n, BN), ct.num_blocks(1))  # key tiles per split
    first = sp * per  # the split's first key tile
    ntiles = ct.maximum(ct.minimum(ct.cdiv(n, BN) - first, per), 0)
    r = ct.arange(QM, dtype=ct.int32).reshape((QM, 1))
    j = ct.arange(D2, dtype=ct.int32).reshape((1, D2))
    col = (g * G + r) * D + j
    live = r < G
    qa = ct.gather(qkv, (row, col), mask=live)
    qb = ct.gather(qkv, (row, col + D2), mask=live)
    wa, wb = _halves(qnorm, D2)
    c = ct.load(cos, (p, 0), (1, D2), padding_mode=ZERO)
    s = ct.load(sin, (p, 0), (1, D2), padding_mode=ZERO)
    qa, qb = _norm_rope(qa, qb, wa, wb, c, s, eps, D)
    qa = (qa * scale).astype(kc.dtype)
    qb = (qb * scale).astype(kc.dtype)
    m = ct.full((QM, 1), -np.inf, ct.float32)
    denom = ct.zeros((QM, 1), ct.float32)
    acc = ct.zeros((QM, D), ct.float32)
    for jt in range(ntiles):
        kt = first + jt
        ka = ct.load(kc, (g, kt, 0), (1, BN, D2), padding_mode=ZERO).reshape((BN, D2))
        kb = ct.load(kc, (g, kt, 1), (1, BN, D2), padding_mode=ZERO).reshape((BN, D2))
        sc = ct.mma(qa, ct.transpose(ka), ct.zeros((QM, BN), ct.float32))
        sc = ct.mma(qb, ct.transpose(kb), sc)
        keys = kt * BN + ct.arange(BN, dtype=ct.int32).reshape((1, BN))
        sc = ct.where(keys < n, sc, -np.inf)
        m_new = ct.maximum(m, ct.max(sc, axis=1, keepdims=True))
        pr = ct.exp(sc - m_new)
        alpha = ct.exp(m - m_new)
        denom = denom * alpha + ct.sum(pr, axis=1, keepdims=True)
        vt = ct.load(vc, (g, kt, 0), (1, BN, D), padding_mode=ZERO).reshape((BN, D))
        acc = ct.mma(pr.astype(vc.dtype), vt, acc * alpha)
        m = m_new
    if ntiles > 0:
        out = acc / denom
        o.store(out.extract((0, 0), (G, D)).reshape((1, 1, G, D)))
        lse.store((m + ct.log(denom)).extract((0, 0), (G, 1)).reshape((1, 1, G)))


@ct.entry
def attn_merge(out: ct.Mut[ct.f32, (1, "G", "DC")], o: ct.Ref[ct.f32, (-1, -1, "G", "D")],
               lse: ct.Ref[ct.f32, (-1, -1, "G")], pos: ct.Ref[ct.i32, (1,)]):
    """Combine the splits of key/value head g, columns [c·DC, (c+1)·DC) of its heads:
    out = Σ_s exp(lse_s − max)·o_s / Σ_s exp(lse_s − max) over the splits that hold keys (dealt as
    in ``attn_decode``, BN keys a tile). All SP (>= the number of splits) partials are loaded at
    once: one round trip to memory."""
    g = ct.bid(0)
    c = ct.bid(2)
    tiles = ct.cdiv(ct.load(pos, (0,), ()) + 1, BN)
    live = ct.cdiv(tiles, ct.cdiv(tiles, o.shape[1]))
    split = ct.arange(SP, dtype=ct.int32).reshape((SP, 1))
    ls = ct.load(lse, (g, 0, 0), (1, SP, G), padding_mode=NEG_INF).reshape((SP, G))
    ot = ct.load(o, (g, 0, 0, c), (1, SP, G, DC), padding_mode=ZERO).reshape((SP, G, DC))
    ls = ct.where(split < live, ls, -np.inf)  # splits past the sequence hold stale values
    wt = ct.exp(ls - ct.max(ls, axis=0, keepdims=True))
    w3 = wt.reshape((SP, G, 1))
    num = ct.sum(w3 * ct.where(w3 > 0.0, ot, 0.0), axis=0)
    out.store((num / ct.transpose(ct.sum(wt, axis=0, keepdims=True))).reshape((1, G, DC)))


@ct.entry
def attn_prefill(o: ct.Mut[ct.f32, ("BM", "D")], qkv: ct.Ref[ct.f32, (-1, -1)], kc: ct.Ref["C", (-1, -1, "D")],
                 vc: ct.Ref["C", (-1, -1, "D")], qnorm: ct.Ref["W", ("D",)], cos: ct.Ref[ct.f32, (-1, -1)],
                 sin: ct.Ref[ct.f32, (-1, -1)], group: ct.i32, scale: ct.f32, eps: ct.f32):
    """Causal flash attention over the prompt: block (i, h) owns BM query rows of head h (q-norm
    and RoPE applied on load) and streams BN keys at a time of its key/value head from the
    cache, with an online softmax."""
    D2 = D // 2
    i = ct.bid(0)
    h = ct.bid(1)
    g = h // group
    rows_n = qkv.shape[0]
    qa = ct.load(qkv, (i, 2 * h), (BM, D2), padding_mode=ZERO)
    qb = ct.load(qkv, (i, 2 * h + 1), (BM, D2), padding_mode=ZERO)
    wa, wb = _halves(qnorm, D2)
    c = ct.load(cos, (i, 0), (BM, D2), padding_mode=ZERO)
    s = ct.load(sin, (i, 0), (BM, D2), padding_mode=ZERO)
    qa, qb = _norm_rope(qa, qb, wa, wb, c, s, eps, D)
    qa = (qa * scale).astype(kc.dtype)
    qb = (qb * scale).astype(kc.dtype)
    rows = i * BM + ct.arange(BM, dtype=ct.int32).reshape((BM, 1))
    m = ct.full((BM, 1), -np.inf, ct.float32)
    denom = ct.zeros((BM, 1), ct.float32)
    acc = ct.zeros((BM, D), ct.float32)
    for kt in range(ct.cdiv(ct.minimum((i + 1) * BM, rows_n), BN)):
        ka = ct.load(kc, (g, kt, 0), (1, BN, D2), padding_mode=ZERO).reshape((BN, D2))
        kb = ct.load(kc, (g, kt, 1), (1, BN, D2), padding_mode=ZERO).reshape((BN, D2))
        sc = ct.mma(qa, ct.transpose(ka), ct.zeros((BM, BN), ct.float32))
        sc = ct.mma(qb, ct.transpose(kb), sc)
        keys = kt * BN + ct.arange(BN, dtype=ct.int32).reshape((1, BN))
        sc = ct.where((keys <= rows) & (keys < rows_n), sc, -np.inf)
        m_new = ct.maximum(m, ct.max(sc, axis=1, keepdims=True))
        pr = ct.exp(sc - m_new)
        alpha = ct.exp(m - m_new)
        denom = denom * alpha + ct.sum(pr, axis=1, keepdims=True)
        vt = ct.load(vc, (g, kt, 0), (1, BN, D), padding_mode=ZERO).reshape((BN, D))
        acc = ct.mma(pr.astype(vc.dtype), vt, acc * alpha)
        m = m_new
    o.store(acc / ct.where(denom > 0.0, denom, 1.0))
