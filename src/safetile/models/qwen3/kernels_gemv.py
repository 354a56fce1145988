"""Decode-step kernels (one token): embedding, fused RMSNorm + matrix-vector products, argmax.

All are safe-style entry kernels. A batch-1 decode step is bound by reading the weights
once, so each projection is a GEMV whose block owns ``BN`` outputs (a ``(1, BN)``
sub-tensor of the output row) and streams its ``BN`` weight rows in ``BK``-wide tiles;
the norm that precedes a projection is folded into the same pass (the block accumulates
``Σ x²`` while it reads ``x``, and scales its dot products by ``rsqrt(mean + eps)`` at the
end), and so are SwiGLU (gate and up in one pass) and the residual add. Activations are
float32 rows ``[rows, n]``; ``row`` picks the row (the last prompt row for the prefill's head).
Weights (``W``) are bfloat16/float16/float32.
"""
from __future__ import annotations

import numpy as np

import safetile as ct

ZERO = ct.PaddingMode.ZERO
NEG_INF = ct.PaddingMode.NEG_INF


def _rms_step(acc, ss, x, gamma, w, row, n, k, tma, BN, BK):
    """One K tile: acc += w-tile · (x ⊙ gamma)-tile, ss += x²."""
    xt = ct.load(x, (row, k), (1, BK), padding_mode=ZERO)
    h = xt * ct.load(gamma, (k,), (BK,), padding_mode=ZERO).astype(ct.float32).reshape((1, BK))
    wt = ct.load(w, (n, k), (BN, BK), padding_mode=ZERO, allow_tma=tma).astype(ct.float32)
    return acc + wt * h, ss + xt * xt


def _rms_dots(x, gamma, w, row, n, eps, tma, unroll, BN, BK, K):
    """(w[n·BN : (n+1)·BN] · (x[row] ⊙ gamma)) · rsqrt(mean(x[row]²) + eps), as a (BN,) tile.

    ``unroll`` writes the K loop out (K is static), so every weight tile's load can be in flight
    at once instead of one tile per loop trip."""
    acc = ct.zeros((BN, BK), ct.float32)
    ss = ct.zeros((1, BK), ct.float32)
    if unroll:
        for k in ct.static_iter(range((K + BK - 1) // BK)):
            acc, ss = _rms_step(acc, ss, x, gamma, w, row, n, k, tma, BN, BK)
    else:
        for k in range((K + BK - 1) // BK):
            acc, ss = _rms_step(acc, ss, x, gamma, w, row, n, k, tma, BN, BK)
    rstd = ct.rsqrt(ct.sum(ss) / K + eps)
    return ct.sum(acc, axis=1) * rstd


@ct.entry
def rms_gemv(y: ct.Mut[ct.f32, (1, "BN")], x: ct.Ref[ct.f32, (-1, "K")], gamma: ct.Ref["W", ("K",)],
             w: ct.Ref["W", (-1, "K")], row: ct.i32, eps: ct.f32, tma: ct.Constant[bool],
             unroll: ct.Constant[bool]):
    """y = RMSNorm(x[row]; gamma) · wᵀ (the stacked q/k/v projection)."""
    y.store(_rms_dots(x, gamma, w, row, ct.bid(1), eps, tma, unroll, BN, BK, K).reshape((1, BN)))


@ct.entry
def rms_gemv_argmax(y: ct.Mut[ct.f32, (1, "BN")], pmax: ct.Mut[ct.f32, (1, 1)], pidx: ct.Mut[ct.i32, (1, 1)],
                    x: ct.Ref[ct.f32, (-1, "K")], gamma: ct.Ref["W", ("K",)], w: ct.Ref["W", (-1, "K")],
                    row: ct.i32, eps: ct.f32, tma: ct.Constant[bool], unroll: ct.Constant[bool], base: ct.i32):
    """The LM head: logits = RMSNorm(x[row]) · headᵀ, plus each block's largest logit and its token
    id (the first stage of the argmax, so the logits are not read again). ``w`` holds vocabulary
    rows ``base, base + 1, ...`` (a tensor-parallel rank's share; 0 for the whole head); logits past
    its last row (a partial tile, or a last rank's shorter share) are -inf."""
    n = ct.bid(1)
    v = _rms_dots(x, gamma, w, row, n, eps, tma, unroll, BN, BK, K)
    rows = n * BN + ct.arange(BN, dtype=ct.int32)
    v = ct.where(rows < w.shape[0], v, -np.inf)
    y.store(v.reshape((1, BN)))
    pmax.store(ct.max(v).reshape((1, 1)))
    pidx.store((ct.argmax(v) + n * BN + base).reshape((1, 1)))


def _gate_up_step(ag, au, ss, x, gamma, wg, wu, row, n, k, tma, BN, BK):
    xt = ct.load(x, (row, k), (1, BK), padding_mode=ZERO)
    h = xt * ct.load(gamma, (k,), (BK,), padding_mode=ZERO).astype(ct.float32).reshape((1, BK))
    ag = ag + ct.load(wg, (n, k), (BN, BK), padding_mode=ZERO, allow_tma=tma).astype(ct.float32) * h
    au = au + ct.load(wu, (n, k), (BN, BK), padding_mode=ZERO, allow_tma=tma).astype(ct.float32) * h
    return ag, au, ss + xt * xt


@ct.entry
def rms_gate_up(act: ct.Mut[ct.f32, (1, "BN")], x: ct.Ref[ct.f32, (-1, "K")], gamma: ct.Ref["W", ("K",)],
                wg: ct.Ref["W", (-1, "K")], wu: ct.Ref["W", (-1, "K")], row: ct.i32, eps: ct.f32,
                tma: ct.Constant[bool], unroll: ct.Constant[bool]):
    """act = silu(h · gateᵀ) ⊙ (h · upᵀ) with h = RMSNorm(x[row]): both projections in one pass."""
    n = ct.bid(1)
    ag = ct.zeros((BN, BK), ct.float32)
    au = ct.zeros((BN, BK), ct.float32)
    ss = ct.zeros((1, BK), ct.float32)
    if unroll:
        for k in ct.static_iter(range((K + BK - 1) // BK)):
            ag, au, ss = _gate_up_step(ag, au, ss, x, gamma, wg, wu, row, n, k, tma, BN, BK)
    else:
        for k in range((K + BK - 1) // BK):
            ag, au, ss = _gate_up_step(ag, au, ss, x, gamma, wg, wu, row, n, k, tma, BN, BK)
    rstd = ct.rsqrt(ct.sum(ss) / K + eps)
    g = ct.sum(ag, axis=1) * rstd
    u = ct.sum(au, axis=1) * rstd
    act.store((g / (1.0 + ct.exp(-g)) * u).reshape((1, BN)))


def _mv_step(acc, a, w, row, n, k, tma, BN, BK):
    at = ct.load(a, (row, k), (1, BK), padding_mode=ZERO)
    return acc + ct.load(w, (n, k), (BN, BK), padding_mode=ZERO, allow_tma=tma).astype(ct.float32) * at


@ct.entry
def gemv_residual(y: ct.Mut[ct.f32, (1, "BN")], res: ct.Ref[ct.f32, (-1, -1)], a: ct.Ref[ct.f32, (-1, "K")],
                  w: ct.Ref["W", (-1, "K")], row: ct.i32, tma: ct.Constant[bool], unroll: ct.Constant[bool]):
    """y = res[row] + a[row] · wᵀ (the output and down projections with their residual adds)."""
    n = ct.bid(1)
    acc = ct.zeros((BN, BK), ct.float32)
    if unroll:
        for k in ct.static_iter(range((K + BK - 1) // BK)):
            acc = _mv_step(acc, a, w, row, n, k, tma, BN, BK)
    else:
        for k in range((K + BK - 1) // BK):
            acc = _mv_step(acc, a, w, row, n, k, tma, BN, BK)
    r = ct.load(res, (row, n), (1, BN), padding_mode=ZERO)
    y.store(r + ct.sum(acc, axis=1).reshape((1, BN)))


@ct.entry
def embed(x: ct.Mut[ct.f32, (1, "BH")], table: ct.Ref["W", (-1, -1)], ids: ct.Ref[ct.i32, (-1,)]):
    """x[r] = table[ids[r]] (rows of the embedding table, as float32)."""
    r = ct.bid(0)
    t = ct.load(ids, (r,), ())
    x.store(ct.load(table, (t, ct.bid(1)), (1, BH), padding_mode=ZERO).astype(ct.float32))


@ct.entry
def argmax_final(tok: ct.Mut[ct.i32, (1,)], pos: ct.Mut[ct.i32, (1,)], hist: ct.Mut[ct.i32, (1, "T")],
                 pmax: ct.Ref[ct.f32, (1, -1)], pidx: ct.Ref[ct.i32, (1, -1)], advance: ct.i32):
    """tok = the index of the largest logit (the first on ties), from the head's per-block maxima;
    pos += advance (the decode step moves to the next position), and hist[pos] = tok (the token
    at each position, so several steps can run before the host reads them)."""
    best = ct.full((1,), -np.inf, ct.float32)
    at = ct.zeros((1,), ct.int32)
    for c in range(ct.num_tiles(pmax, 1, (1, BC))):
        v = ct.load(pmax, (0, c), (1, BC), padding_mode=NEG_INF).reshape((BC,))
        m = ct.max(v).reshape((1,))
        i = (ct.argmax(v) + c * BC).reshape((1,))
        better = m > best
        best = ct.where(better, m, best)
        at = ct.where(better, i, at)
    t = ct.load(pidx, (0, at.item()), (1, 1))
    tok.store(t.reshape((1,)))
    p = pos.load() + advance
    pos.store(p)
    hist.partition((1, 1)).store(t, (0, p.item()))


@ct.entry
def top_candidates(vals: ct.Mut[ct.f32, (1, "K")], idxs: ct.Mut[ct.i32, (1, "K")],
                   logits: ct.Ref[ct.f32, (1, -1)]):
    """Each block's K largest logits (descending) and their indices, over BV logits: the global
    top-K is among the blocks' candidates, so sampling with top-k <= K needs only these."""
    b = ct.bid(0)
    v = ct.load(logits, (0, b), (1, BV), padding_mode=NEG_INF).reshape((BV,))
    lane = ct.arange(BV, dtype=ct.int32)
    slot = ct.arange(K, dtype=ct.int32)
    out_v = ct.full((K,), -np.inf, ct.float32)
    out_i = ct.zeros((K,), ct.int32)
    for j in range(K):
        m = ct.max(v)
        a = ct.argmax(v)
        out_v = ct.where(slot == j, m, out_v)
        out_i = ct.where(slot == j, a + b * BV, out_i)
        v = ct.where(lane == a, -np.inf, v)
    vals.store(out_v.reshape((1, K)))
    idxs.store(out_i.reshape((1, K)))
