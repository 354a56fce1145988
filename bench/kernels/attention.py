"""Flash attention for the benchmark, written with safetile's public API.

Forward: ``attention`` over (batch*heads, seq, D) arrays with 3-D tiles; ``attention_2d`` over
(batch*heads*seq, D) views with 2-D tiles only (every access can use a tensor descriptor),
optionally writing the log-sum-exp rows the backward pass needs. Backward (FlashAttention-2
style): ``attention_bwd_delta`` (rowsum(dO * O)), ``attention_bwd_dkdv`` (one block per key
block, looping over query blocks) and ``attention_bwd_dq`` (one block per query block, looping
over key blocks); or ``attention_bwd_dkdv`` with DQ, dK/dV with dQ added up by atomics, then
``attention_bwd_dq_cast``. ``scale`` is softmax's scale times log2(e), positive: scores go through exp2,
scaled inside its argument (one fma per score), row maxima taken before scaling."""
from __future__ import annotations

import safetile as ct

ZERO = ct.PaddingMode.ZERO
LN2 = 0.6931471805599453


def _longest_first(CAUSAL, reverse):
    """(block index along the sequence, batch*head) of this block. Causal blocks differ in work:
    every head's longest blocks are dispatched first (blocks start in grid order, x fastest), so
    no long block is left for the end. ``reverse``: the longest are the last sequence blocks."""
    if not CAUSAL:
        return ct.bid(0), ct.bid(1)
    lin = ct.bid(1) * ct.num_blocks(0) + ct.bid(0)
    step = lin // ct.num_blocks(1)
    return (ct.num_blocks(0) - 1 - step if reverse else step), lin % ct.num_blocks(1)


def _attn_block(q, K, V, bh, j, m_i, l_i, acc, qpos, S, scale, BN, D, MASK, CAUSAL):
    k = ct.reshape(ct.load(K, (bh, j, 0), (1, BN, D), padding_mode=ZERO), (BN, D))
    s = ct.mma(q, ct.transpose(k), ct.zeros((q.shape[0], BN), ct.float32))
    if MASK:
        kpos = j * BN + ct.arange(BN, dtype=ct.int32)
        ok = kpos[None, :] < S
        if CAUSAL:
            ok = ok & (qpos[:, None] >= kpos[None, :])
        s = ct.where(ok, s, float("-inf"))
    m_new = ct.maximum(m_i, ct.max(s, axis=1) * scale)
    p = ct.exp2(s * scale - m_new[:, None])
    alpha = ct.exp2(m_i - m_new)
    l_i = l_i * alpha + ct.sum(p, axis=1)
    v = ct.reshape(ct.load(V, (bh, j, 0), (1, BN, D), padding_mode=ZERO), (BN, D))
    acc = ct.mma(p.astype(v.dtype), v, acc * alpha[:, None])
    return m_new, l_i, acc


@ct.kernel
def attention(Q, K, V, O, scale, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int],
              CAUSAL: ct.Constant[bool]):
    """Forward over (batch*heads, seq, D) arrays, any seq; grid (query blocks, batch*heads)."""
    qb, bh = _longest_first(CAUSAL, True)
    S = Q.shape[1]
    q = ct.reshape(ct.load(Q, (bh, qb, 0), (1, BM, D), padding_mode=ZERO), (BM, D))
    qpos = qb * BM + ct.arange(BM, dtype=ct.int32)
    m_i = ct.full((BM,), float("-inf"), ct.float32)
    l_i = ct.zeros((BM,), ct.float32)
    acc = ct.zeros((BM, D), ct.float32)
    if CAUSAL:
        full = (qb * BM) // BN
        stop = ct.cdiv(ct.minimum((qb + 1) * BM, S), BN)
    else:
        full = S // BN
        stop = ct.cdiv(S, BN)
    for j in range(full):
        m_i, l_i, acc = _attn_block(q, K, V, bh, j, m_i, l_i, acc, qpos, S, scale, BN, D, False, CAUSAL)
    for j in range(full, stop):
        m_i, l_i, acc = _attn_block(q, K, V, bh, j, m_i, l_i, acc, qpos, S, scale, BN, D, True, CAUSAL)
    out = acc * (1.0 / l_i)[:, None]
    ct.store(O, (bh, qb, 0), ct.reshape(out.astype(O.dtype), (1, BM, D)))


def _attn2d_scores(q, K, kbase, j, BN, D):
    """QKᵀ of key block j (rows of K from ``kbase``)."""
    k = ct.load(K, (kbase + j, 0), (BN, D), allow_tma=True)
    return ct.mma(q, ct.transpose(k), ct.zeros((q.shape[0], BN), ct.float32))


def _attn2d_softmax_pv(s, V, kbase, j, m_i, l_i, acc, scale, BN, D):
    """One online-softmax step on key block j's scores: (new max, new sum, new accumulator)."""
    m_new = ct.maximum(m_i, ct.max(s, axis=1) * scale)
    p = ct.exp2(s * scale - m_new[:, None])
    alpha = ct.exp2(m_i - m_new)
    l_i = l_i * alpha + ct.sum(p, axis=1)
    v = ct.load(V, (kbase + j, 0), (BN, D), allow_tma=True)
    acc = ct.mma(p.astype(v.dtype), v, acc * alpha[:, None])
    return m_new, l_i, acc


def _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, MASK, first_row=None):
    """One key block. MASK: causal; with ``first_row`` (the block's first query row) the mask is
    applied only where key block j reaches past it (a branch: blocks left of the diagonal skip it)."""
    s = _attn2d_scores(q, K, kbase, j, BN, D)
    if MASK:
        kpos = j * BN + ct.arange(BN, dtype=ct.int32)
        if first_row is None:
            s = ct.where(qpos[:, None] >= kpos[None, :], s, float("-inf"))
        elif (j + 1) * BN > first_row:
            s = ct.where(qpos[:, None] >= kpos[None, :], s, float("-inf"))
    return _attn2d_softmax_pv(s, V, kbase, j, m_i, l_i, acc, scale, BN, D)


@ct.kernel
def attention_2d(Q, K, V, O, Lse, S, scale, BM: ct.Constant[int], BN: ct.Constant[int],
                 D: ct.Constant[int], CAUSAL: ct.Constant[bool], LSE: ct.Constant[bool],
                 SPLIT: ct.Constant[bool], DIAG: ct.Constant[bool]):
    """Forward over (batch*heads*seq, D) arrays (seq S a multiple of BM and BN). With LSE, also
    writes each row's log2-sum-exp2 of the scaled scores to Lse (batch*heads*seq,) float32.
    Causal with SPLIT: a mask-free loop up to the diagonal, then a masked one; without SPLIT one
    loop, masked throughout, or with DIAG only at the blocks that reach the diagonal (a branch).
    Triton 3.6 warp-specialises one loop of matrix products on Hopper, not two in a row nor one
    with a branch (``warp_specialize=True``: neither SPLIT nor DIAG); the ping-pong lowering
    (``warp_specialize="pingpong"``) takes one loop, branch or not (DIAG: ~10 % less work)."""
    qb, bh = _longest_first(CAUSAL, True)
    q = ct.load(Q, (bh * (S // BM) + qb, 0), (BM, D), allow_tma=True)
    qpos = qb * BM + ct.arange(BM, dtype=ct.int32)
    kbase = bh * (S // BN)
    m_i = ct.full((BM,), float("-inf"), ct.float32)
    l_i = ct.zeros((BM,), ct.float32)
    acc = ct.zeros((BM, D), ct.float32)
    if CAUSAL:
        stop = ct.cdiv((qb + 1) * BM, BN)
        full = (qb * BM) // BN if SPLIT else 0
    else:
        full = S // BN
        stop = full
    if SPLIT or not CAUSAL:
        for j in range(full):
            m_i, l_i, acc = _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, False)
    for j in range(full, stop):
        m_i, l_i, acc = _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, True,
                                      qb * BM if DIAG and not SPLIT else None)
    out = acc * (1.0 / l_i)[:, None]
    ct.store(O, (bh * (S // BM) + qb, 0), out.astype(O.dtype), allow_tma=True)
    if LSE:
        ct.store(Lse, (bh * (S // BM) + qb,), m_i + ct.log2(l_i))


@ct.kernel
def attention_2d_persistent(Q, K, V, O, S, scale, BM: ct.Constant[int], BN: ct.Constant[int],
                            D: ct.Constant[int], CAUSAL: ct.Constant[bool]):
    """``attention_2d`` (no LSE; causal as one masked loop) with one block per SM walking over the
    (query block, batch*head) tiles, longest first when causal: the next tile's start overlaps
    this one's end, and no partial last wave is left."""
    nq = S // BM
    tiles = nq * (Q.shape[0] // S)
    for t in range(ct.bid(0), tiles, ct.num_blocks(0)):
        qb = (nq - 1 - t // (tiles // nq)) if CAUSAL else t % nq
        bh = t % (tiles // nq) if CAUSAL else t // nq
        q = ct.load(Q, (bh * nq + qb, 0), (BM, D), allow_tma=True)
        qpos = qb * BM + ct.arange(BM, dtype=ct.int32)
        kbase = bh * (S // BN)
        m_i = ct.full((BM,), float("-inf"), ct.float32)
        l_i = ct.zeros((BM,), ct.float32)
        acc = ct.zeros((BM, D), ct.float32)
        stop = ct.cdiv((qb + 1) * BM, BN) if CAUSAL else S // BN
        for j in range(stop):
            m_i, l_i, acc = _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, CAUSAL)
        out = acc * (1.0 / l_i)[:, None]
        ct.store(O, (bh * nq + qb, 0), out.astype(O.dtype), allow_tma=True)


@ct.kernel
def attention_bwd_delta(O, dO, Delta, BM: ct.Constant[int], D: ct.Constant[int]):
    """Delta[r] = sum_d dO[r, d] * O[r, d] over (rows, D) arrays."""
    r = ct.bid(0)
    o = ct.load(O, (r, 0), (BM, D), padding_mode=ZERO).astype(ct.float32)
    do = ct.load(dO, (r, 0), (BM, D), padding_mode=ZERO).astype(ct.float32)
    ct.store(Delta, (r,), ct.sum(o * do, axis=1))


@ct.kernel
def attention_bwd_dkdv(Q, K, V, dO, Lse, Delta, dK, dV, dQacc, S, scale, sm_scale, BM: ct.Constant[int],
                       BN: ct.Constant[int], D: ct.Constant[int], CAUSAL: ct.Constant[bool],
                       SPLIT: ct.Constant[bool], DQ: ct.Constant[bool]):
    """dK and dV of one key block: loop over the query blocks that see it (all, or from the
    diagonal on when causal). Arrays are (batch*heads*seq, D); Lse and Delta (batch*heads*seq,).
    Causal with SPLIT: only the blocks at the diagonal are masked (a branch in the loop); without,
    every block is (no branch: the form Triton's warp specialisation accepts). With DQ, also adds
    this key block's share of dQ (dS K per query block) into the float32 ``dQacc`` (zeroed before)
    with relaxed atomic adds, so no dQ pass computes S and dP a second time;
    ``attention_bwd_dq_cast`` turns dQacc into dQ. Without DQ, dQacc is not read."""
    kb, bh = _longest_first(CAUSAL, False)
    k = ct.load(K, (bh * (S // BN) + kb, 0), (BN, D), allow_tma=True)
    v = ct.load(V, (bh * (S // BN) + kb, 0), (BN, D), allow_tma=True)
    kpos = kb * BN + ct.arange(BN, dtype=ct.int32)
    dk = ct.zeros((BN, D), ct.float32)
    dv = ct.zeros((BN, D), ct.float32)
    qbase = bh * (S // BM)
    first = (kb * BN) // BM if CAUSAL else 0
    diag_end = ct.minimum(ct.cdiv((kb + 1) * BN, BM), S // BM) if CAUSAL else first
    for i in range(first, S // BM):
        q = ct.load(Q, (qbase + i, 0), (BM, D), allow_tma=True)
        do = ct.load(dO, (qbase + i, 0), (BM, D), allow_tma=True)
        lse = ct.load(Lse, (qbase + i,), (BM,))
        delta = ct.load(Delta, (qbase + i,), (BM,))
        st = ct.mma(k, ct.transpose(q), ct.zeros((BN, BM), ct.float32))
        pt = ct.exp2(st * scale - lse[None, :])
        if CAUSAL:
            qpos = i * BM + ct.arange(BM, dtype=ct.int32)
            if not SPLIT:
                pt = ct.where(qpos[None, :] >= kpos[:, None], pt, 0.0)
            elif i < diag_end:
                pt = ct.where(qpos[None, :] >= kpos[:, None], pt, 0.0)
        dv = ct.mma(pt.astype(do.dtype), do, dv)
        dpt = ct.mma(v, ct.transpose(do), ct.zeros((BN, BM), ct.float32))
        dst = (pt * (dpt - delta[None, :])).astype(q.dtype)
        dk = ct.mma(dst, q, dk)
        if DQ:
            dq = ct.mma(ct.transpose(dst), k, ct.zeros((BM, D), ct.float32))
            rows = (qbase + i) * BM + ct.arange(BM, dtype=ct.int32)
            cols = ct.arange(D, dtype=ct.int32)
            ct.atomic_add(dQacc, (rows[:, None], cols[None, :]), dq, memory_order=ct.MemoryOrder.RELAXED)
    ct.store(dK, (bh * (S // BN) + kb, 0), (dk * sm_scale).astype(dK.dtype), allow_tma=True)
    ct.store(dV, (bh * (S // BN) + kb, 0), dv.astype(dV.dtype), allow_tma=True)


@ct.kernel
def attention_bwd_dq_cast(dQacc, dQ, sm_scale, BM: ct.Constant[int], D: ct.Constant[int]):
    """dQ = dQacc * sm_scale in dQ's dtype, BM rows per block."""
    ct.store(dQ, (ct.bid(0), 0), (ct.load(dQacc, (ct.bid(0), 0), (BM, D)) * sm_scale).astype(dQ.dtype))


@ct.kernel
def attention_bwd_dq(Q, K, V, dO, Lse, Delta, dQ, S, scale, sm_scale, BM: ct.Constant[int],
                     BN: ct.Constant[int], D: ct.Constant[int], CAUSAL: ct.Constant[bool]):
    """dQ of one query block: loop over the key blocks it sees (causal: the longest first)."""
    qb, bh = _longest_first(CAUSAL, True)
    row = bh * (S // BM) + qb
    q = ct.load(Q, (row, 0), (BM, D), allow_tma=True)
    do = ct.load(dO, (row, 0), (BM, D), allow_tma=True)
    lse = ct.load(Lse, (row,), (BM,))
    delta = ct.load(Delta, (row,), (BM,))
    qpos = qb * BM + ct.arange(BM, dtype=ct.int32)
    dq = ct.zeros((BM, D), ct.float32)
    kbase = bh * (S // BN)
    stop = ct.cdiv((qb + 1) * BM, BN) if CAUSAL else S // BN
    diag = (qb * BM) // BN if CAUSAL else stop
    for j in range(stop):
        k = ct.load(K, (kbase + j, 0), (BN, D), allow_tma=True)
        v = ct.load(V, (kbase + j, 0), (BN, D), allow_tma=True)
        s = ct.mma(q, ct.transpose(k), ct.zeros((BM, BN), ct.float32))
        p = ct.exp2(s * scale - lse[:, None])
        if CAUSAL:
            if j >= diag:
                kpos = j * BN + ct.arange(BN, dtype=ct.int32)
                p = ct.where(qpos[:, None] >= kpos[None, :], p, 0.0)
        dp = ct.mma(do, ct.transpose(v), ct.zeros((BM, BN), ct.float32))
        ds = p * (dp - delta[:, None])
        dq = ct.mma(ds.astype(k.dtype), k, dq)
    ct.store(dQ, (row, 0), (dq * sm_scale).astype(dQ.dtype), allow_tma=True)
