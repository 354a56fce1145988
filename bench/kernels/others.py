"""Kernels in the styles other people write tile code in, as they would write them: row loops
over fixed-size chunks with (1, TILE) tiles, 3-D tiles addressed with unit axes, gathers by an
index tile, tile transposes. The benchmark runs them as written; when one is slow, the fix
belongs in the code generator, not here."""
from __future__ import annotations

import safetile as ct

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def layernorm_chunked(X, W, B, Y, Mean, Rstd, eps, TILE_N: ct.Constant[int]):
    """Three passes over a row in (1, TILE_N) chunks: sum, centred sum of squares (masked past
    the row's end), normalise; writes the row's mean and 1/std too."""
    row = ct.bid(0)
    n = X.shape[1]
    chunks = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    total = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(chunks):
        total += ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO)
    mean = ct.sum(total, axis=1) / n
    ct.store(Mean, index=(row,), tile=mean)
    sq = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO)
        inside = (j * TILE_N + ct.arange(TILE_N, dtype=ct.int32)) < n
        d = ct.where(inside, x - mean, 0)
        sq += d ** 2
    rstd = 1 / ct.sqrt(ct.sum(sq, axis=1) / n + eps)
    ct.store(Rstd, index=(row,), tile=rstd)
    for j in range(chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ZERO)
        w = ct.load(W, index=(j,), shape=(TILE_N,), padding_mode=ZERO)
        b = ct.load(B, index=(j,), shape=(TILE_N,), padding_mode=ZERO)
        ct.store(Y, index=(row, j), tile=((x - mean) * rstd * w + b).astype(Y.dtype))


@ct.kernel
def softmax_chunked(X, Y, TILE_N: ct.Constant[int]):
    """Online softmax over a row in (1, TILE_N) chunks: running max and rescaled sum in one pass,
    then a second pass that writes exp(x - max) / sum."""
    row = ct.bid(0)
    chunks = ct.num_tiles(X, axis=1, shape=(1, TILE_N))
    m = ct.full((1, TILE_N), -float("inf"), dtype=ct.float32)
    s = ct.full((1, TILE_N), 0, dtype=ct.float32)
    for j in range(chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        m_new = ct.maximum(m, x)
        s = s * ct.exp(m - m_new) + ct.exp(x - m_new)
        m = m_new
    row_max = ct.max(m, axis=1, keepdims=True)
    total = ct.sum(s * ct.exp(m - row_max), axis=1, keepdims=True)
    for j in range(chunks):
        x = ct.load(X, index=(row, j), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
        ct.store(Y, index=(row, j), tile=(ct.exp(x - row_max) / total).astype(Y.dtype))


@ct.kernel
def rmsnorm_3d(X, W, Y, eps, TILE_H: ct.Constant[int]):
    """RMSNorm of a (batch, seq, hidden) tensor with (1, 1, TILE_H) tiles on a (seq, batch) grid,
    the whole hidden size in one tile."""
    s, b = ct.bid(0), ct.bid(1)
    x = ct.load(X, index=(b, s, 0), shape=(1, 1, TILE_H), padding_mode=ZERO).astype(ct.float32)
    ms = ct.sum(x * x, axis=2, keepdims=True) / X.shape[2]
    w = ct.load(W, index=(0,), shape=(TILE_H,), padding_mode=ZERO).astype(ct.float32)
    y = x * ct.rsqrt(ms + eps) * ct.reshape(w, (1, 1, TILE_H))
    ct.store(Y, index=(b, s, 0), tile=y.astype(Y.dtype))


@ct.kernel
def embedding_gather(Table, Ids, Out, TILE_T: ct.Constant[int], TILE_D: ct.Constant[int]):
    """Out[t, :] = Table[Ids[t], :] for TILE_T tokens per block: a gather of whole rows."""
    t, c = ct.bid(0), ct.bid(1)
    ids = ct.load(Ids, index=(t,), shape=(TILE_T,), padding_mode=ZERO)
    cols = c * TILE_D + ct.arange(TILE_D, dtype=ct.int32)
    rows = ct.gather(Table, (ids[:, None], cols[None, :]))
    ct.store(Out, index=(t, c), tile=rows)


@ct.kernel
def transpose_tiles(X, Y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """Y = X.T one (TM, TN) tile per block."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(Y, index=(j, i), tile=ct.transpose(ct.load(X, index=(i, j), shape=(TM, TN))))


@ct.kernel
def batched_matmul_3d(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    """C[b] = A[b] @ B[b] with (1, BM, BK) / (1, BK, BN) tiles reshaped to 2-D for the product."""
    b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(1, BM, BK))):
        a = ct.reshape(ct.load(A, index=(b, i, k), shape=(1, BM, BK), padding_mode=ZERO), (BM, BK))
        bt = ct.reshape(ct.load(B, index=(b, k, j), shape=(1, BK, BN), padding_mode=ZERO), (BK, BN))
        acc = ct.mma(a, bt, acc)
    ct.store(C, index=(b, i, j), tile=ct.reshape(acc.astype(C.dtype), (1, BM, BN)))
