"""Element-wise, row-wise and launch-cost kernels of the benchmark, plus the safe-style pair
(``@ct.entry`` + partitions) the ``safe`` section compares with their unchecked twins."""
import safetile as ct

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def vec_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def copy_kernel(src, dst, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(dst, (i,), ct.load(src, (i,), (TILE,)))


@ct.kernel
def softmax(x, y, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, (row, 0), (e * (1.0 / ct.sum(e, axis=1, keepdims=True))).astype(y.dtype))


@ct.kernel
def rmsnorm(x, w, y, eps, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N)).astype(ct.float32)
    r = ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) * (1.0 / N) + eps)
    wt = ct.load(w, (0,), (N,)).astype(ct.float32)
    ct.store(y, (row, 0), (t * r * wt[None, :]).astype(y.dtype))


@ct.kernel
def layernorm(x, w, b, y, eps, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N)).astype(ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) * (1.0 / N)
    d = t - mean
    r = ct.rsqrt(ct.sum(d * d, axis=1, keepdims=True) * (1.0 / N) + eps)
    wt = ct.load(w, (0,), (N,)).astype(ct.float32)
    bt = ct.load(b, (0,), (N,)).astype(ct.float32)
    ct.store(y, (row, 0), (d * r * wt[None, :] + bt[None, :]).astype(y.dtype))


# ---- safe style (@ct.entry, partitions) and its unchecked twins: same tiles, same block order

@ct.entry
def safe_add(z: ct.Mut["E", "B"], x: ct.Ref["E", -1], y: ct.Ref["E", -1]):  # noqa: F821
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry(num_warps=8, num_stages=3)
def safe_gemm(c: ct.Mut[ct.f16, ("BM", "BN")], a: ct.Ref[ct.f16, (-1, -1)], b: ct.Ref[ct.f16, (-1, -1)]):
    pa = a.partition((BM, BK))  # noqa: F821 - BM, BN from c's partition, BK explicit
    pb = b.partition((BK, BN))  # noqa: F821
    acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
    for k in range(pa.num_tiles(1)):
        acc = ct.mma(pa.load((ct.bid(0), k)), pb.load((k, ct.bid(1))), acc)
    c.store(acc.astype(ct.float16))


@ct.kernel
def tiny(x, TILE: ct.Constant[int]):
    ct.store(x, (0,), ct.load(x, (0,), (TILE,)) + 1.0)


@ct.kernel
def add4(x, y, z, TILE: ct.Constant[int]):
    """The README's launch pattern (a tensor may be passed twice, a Constant): launch-cost rows."""
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)) + ct.load(y, (b,), (TILE,)))


@ct.kernel
def axpy(x, z, alpha: float, n: int, TILE: ct.Constant[int]):
    """Scalars of every kind beside tensors: launch-cost rows."""
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)) * alpha + ct.load(z, (b,), (TILE,)))
