"""Every kernel and snippet of the CUDA guide chapter "Writing Tile Kernels" (2.4), run on the
CPU backend against NumPy on fresh random data.

Outputs are poisoned (NaN for floats, a sentinel for integers) before each launch and every
element is checked afterwards, so an element a kernel forgot to write cannot pass.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import safetile as ct

RNG_SEED = 20240607


@pytest.fixture
def rng(request):
    # a fresh stream per test, but reproducible from the test's name
    return np.random.default_rng([RNG_SEED, abs(hash(request.node.name)) % (2**32)])


def poisoned(shape, dtype):
    """An output array full of a value no correct kernel would produce."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.zeros(shape, dtype=dtype)
    return np.full(shape, np.iinfo(dtype).min, dtype=dtype)


def rand(rng, shape, dtype=np.float32, lo=-4.0, hi=4.0):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, int(lo) * 25), min(info.max, int(hi) * 25) + 1, size=shape, dtype=dtype)
    x = rng.uniform(lo, hi, size=shape)
    x[x == 0] = 0.5  # never exactly zero
    return x.astype(dtype)


# --------------------------------------------------------------------------- 2.4.6.1 vec_add

@ct.kernel
def vec_add_view(a, b, c, TILE: ct.Constant[int]):
    a_view = a.tiled_view((TILE,))
    b_view = b.tiled_view((TILE,))
    c_view = c.tiled_view((TILE,))
    bid = ct.bid(0)
    a_tile = a_view.load((bid,))
    b_tile = b_view.load((bid,))
    c_view.store((bid,), a_tile + b_tile)


@ct.kernel
def vec_add_one_call(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    a_tile = ct.load(a, index=(bid,), shape=(TILE,))
    b_tile = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=a_tile + b_tile)


@ct.kernel
def vec_add_gather(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    indices = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    a_tile = ct.gather(a, indices)
    b_tile = ct.gather(b, indices)
    ct.scatter(c, indices, a_tile + b_tile)


@pytest.mark.parametrize("kernel", [vec_add_view, vec_add_one_call, vec_add_gather])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("tile,n_tiles", [(16, 1), (128, 8), (64, 13)])
def test_vec_add(rng, kernel, dtype, tile, n_tiles):
    n = tile * n_tiles
    a, b = rand(rng, n, dtype), rand(rng, n, dtype)
    c = poisoned(n, dtype)
    ct.launch(None, (math.ceil(n / tile),), kernel, (a, b, c, tile))
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("kernel", [vec_add_gather])
def test_vec_add_gather_partial_tail(rng, kernel):
    # gather/scatter are bounds-safe: the lanes past the end read 0 and their writes drop
    n, tile = 1000, 128
    a, b = rand(rng, n), rand(rng, n)
    c = poisoned(n, np.float32)
    ct.launch(None, (math.ceil(n / tile),), kernel, (a, b, c, tile))
    np.testing.assert_array_equal(c, a + b)


# --------------------------------------------------------------------------- 2.4.6.1.3 edge_safe

@ct.kernel
def edge_safe(arr_in, arr_out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    tile = ct.load(arr_in, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(arr_out, index=(bid,), tile=tile)


@pytest.mark.parametrize("n,tile", [(1000, 128), (1, 16), (129, 128), (4096, 128), (77, 8)])
def test_edge_safe(rng, n, tile):
    x = rand(rng, n)
    out = poisoned(n + 50, np.float32)  # elements past n must stay untouched
    view = out[:n]
    ct.launch(None, (math.ceil(n / tile),), edge_safe, (x, view, tile))
    np.testing.assert_array_equal(out[:n], x)
    assert np.isnan(out[n:]).all()


@ct.kernel
def edge_padding_probe(arr_in, arr_out, TILE: ct.Constant[int]):
    # stores the padded last tile into a tile-sized output: the padding itself is visible
    bid = ct.bid(0)
    tile = ct.load(arr_in, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(arr_out, index=(bid,), tile=tile)


def test_edge_safe_padding_is_zero(rng):
    n, tile = 100, 32
    x = rand(rng, n)
    out = poisoned(4 * tile, np.float32)
    ct.launch(None, (4,), edge_padding_probe, (x, out, tile))
    np.testing.assert_array_equal(out[:n], x)
    np.testing.assert_array_equal(out[n:], 0.0)


# --------------------------------------------------------------------------- 2.4.7 control flow

@ct.kernel
def tile_sum(arr, out, TILE: ct.Constant[int], N_TILES: ct.Constant[int]):
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for k in range(N_TILES):
        tile = ct.load(arr, index=(k,), shape=(TILE,))
        acc = acc + tile
    ct.store(out, index=(0,), tile=acc)


@pytest.mark.parametrize("tile,n_tiles", [(8, 1), (8, 7), (64, 16)])
def test_tile_sum(rng, tile, n_tiles):
    arr = rand(rng, tile * n_tiles)
    out = poisoned(tile, np.float32)
    ct.launch(None, (1,), tile_sum, (arr, out, tile, n_tiles))
    expected = np.zeros(tile, np.float32)
    for k in range(n_tiles):  # same association order as the kernel
        expected = expected + arr[k * tile:(k + 1) * tile]
    np.testing.assert_array_equal(out, expected)


@ct.kernel
def conditional_load(arr, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    if bid < ct.num_blocks(0) - 1:
        tile = ct.load(arr, index=(bid,), shape=(TILE,))
    else:
        tile = ct.zeros((TILE,), dtype=ct.float32)
    ct.store(out, index=(bid,), tile=tile)


@pytest.mark.parametrize("n,tile", [(64, 8), (8, 8), (1000, 16)])
def test_conditional_load(rng, n, tile):
    arr = rand(rng, n)
    out = poisoned(n, np.float32)
    nblocks = math.ceil(n / tile)
    ct.launch(None, (nblocks,), conditional_load, (arr, out, tile))
    expected = arr.copy()
    expected[(nblocks - 1) * tile:] = 0.0
    np.testing.assert_array_equal(out, expected)


# --------------------------------------------------------------------------- 2.4.8 element-wise

@ct.kernel
def elementwise(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    z = 2.0 * x + y
    ct.store(c, index=(bid,), tile=z)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_elementwise(rng, dtype):
    n, tile = 512, 64
    a, b = rand(rng, n, dtype), rand(rng, n, dtype)
    c = poisoned(n, dtype)
    ct.launch(None, (n // tile,), elementwise, (a, b, c, tile))
    # 2.0 is loosely typed: the arithmetic stays in the tiles' dtype
    np.testing.assert_array_equal(c, (dtype(2.0) * a + b).astype(dtype))


@ct.kernel
def broadcasting(xs, ys, out):
    x = ct.load(xs, index=(0, 0), shape=(8, 2))
    y = ct.load(ys, index=(0, 0, 0), shape=(4, 1, 2))
    z = x + y
    ct.store(out, index=(0, 0, 0), tile=z)


def test_broadcasting(rng):
    xs, ys = rand(rng, (8, 2), np.int32), rand(rng, (4, 1, 2), np.int32)
    out = poisoned((4, 8, 2), np.int32)
    ct.launch(None, (1,), broadcasting, (xs, ys, out))
    np.testing.assert_array_equal(out, xs + ys)


@ct.kernel
def broadcasting_literal(out):
    x = ct.full((8, 2), 3, dtype=ct.int32)
    y = ct.full((4, 1, 2), 5, dtype=ct.int32)
    ct.store(out, index=(0, 0, 0), tile=x + y)


def test_broadcasting_literal():
    out = poisoned((4, 8, 2), np.int32)
    ct.launch(None, (1,), broadcasting_literal, (out,))
    np.testing.assert_array_equal(out, np.full((4, 8, 2), 8, np.int32))


@ct.kernel
def scalar_promotion(xs, out_int, out_float):
    x = ct.load(xs, index=(0,), shape=(8,))
    ct.store(out_int, index=(0,), tile=x + 2)      # int32: 2 fits the tile's type
    ct.store(out_float, index=(0,), tile=x + 2.5)  # float32: promoted to hold both


def test_scalar_promotion(rng):
    xs = rand(rng, 8, np.int32)
    out_i, out_f = poisoned(8, np.int32), poisoned(8, np.float32)
    ct.launch(None, (1,), scalar_promotion, (xs, out_i, out_f))
    np.testing.assert_array_equal(out_i, xs + 2)
    np.testing.assert_array_equal(out_f, xs.astype(np.float32) + np.float32(2.5))


@ct.kernel
def tile_tile_promotion(a16, b32, fa, out32, outf):
    x = ct.load(a16, index=(0,), shape=(8,))
    y = ct.load(b32, index=(0,), shape=(8,))
    f = ct.load(fa, index=(0,), shape=(8,))
    ct.store(out32, index=(0,), tile=x + y)  # int16 + int32 -> int32
    ct.store(outf, index=(0,), tile=y + f)   # int + float -> float


def test_tile_tile_promotion(rng):
    a16, b32, fa = rand(rng, 8, np.int16), rand(rng, 8, np.int32), rand(rng, 8, np.float32)
    o32, of = poisoned(8, np.int32), poisoned(8, np.float32)
    ct.launch(None, (1,), tile_tile_promotion, (a16, b32, fa, o32, of))
    np.testing.assert_array_equal(o32, a16.astype(np.int32) + b32)
    np.testing.assert_array_equal(of, b32.astype(np.float32) + fa)


# --------------------------------------------------------------------------- 2.4.4 factories

@ct.kernel
def factories(z_out, o_out, f_out, s_out):
    zeros = ct.zeros((64, 64), dtype=ct.float32)
    ones = ct.ones((128,), dtype=ct.float16)
    filled = ct.full((32, 32), 3.14, dtype=ct.float32)
    seq = ct.arange(8, dtype=ct.int32)
    ct.store(z_out, index=(0, 0), tile=zeros)
    ct.store(o_out, index=(0,), tile=ones)
    ct.store(f_out, index=(0, 0), tile=filled)
    ct.store(s_out, index=(0,), tile=seq)


def test_factories():
    z, o = poisoned((64, 64), np.float32), poisoned(128, np.float16)
    f, s = poisoned((32, 32), np.float32), poisoned(8, np.int32)
    ct.launch(None, (1,), factories, (z, o, f, s))
    np.testing.assert_array_equal(z, np.zeros((64, 64), np.float32))
    np.testing.assert_array_equal(o, np.ones(128, np.float16))
    np.testing.assert_array_equal(f, np.full((32, 32), np.float32(3.14)))
    np.testing.assert_array_equal(s, np.arange(8, dtype=np.int32))
    assert not np.signbit(z).any()


@ct.kernel
def constant_shape(out, TILE: ct.Constant[int]):
    zeros = ct.zeros((TILE,), dtype=ct.float32)
    ct.store(out, index=(ct.bid(0),), tile=zeros + ct.bid(0))


@pytest.mark.parametrize("tile", [1, 4, 128])
def test_constant_drives_shape(tile):
    out = poisoned(3 * tile, np.float32)
    ct.launch(None, (3,), constant_shape, (out, tile))
    np.testing.assert_array_equal(out, np.repeat(np.arange(3, dtype=np.float32), tile))


# --------------------------------------------------------------------------- 2.4.9.1 gemm

@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    num_k = ct.num_tiles(A, axis=1, shape=(tm, tk))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(num_k):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


@pytest.mark.parametrize("in_dtype,out_dtype", [(np.float32, np.float32), (np.float16, np.float32),
                                                (np.float16, np.float16)])
@pytest.mark.parametrize("m,n,k", [(64, 64, 32), (128, 96, 64), (100, 70, 45), (33, 17, 9), (1, 1, 1)])
def test_gemm(rng, in_dtype, out_dtype, m, n, k):
    tm, tn, tk = 32, 32, 16
    A, B = rand(rng, (m, k), in_dtype, -1, 1), rand(rng, (k, n), in_dtype, -1, 1)
    C = poisoned((m, n), out_dtype)
    ct.launch(None, (math.ceil(m / tm), math.ceil(n / tn)), gemm, (A, B, C, tm, tn, tk))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert not np.isnan(C).any()
    tol = 1e-5 if out_dtype == np.float32 else 2e-3
    rel = np.linalg.norm(C.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-30)
    assert rel < tol
    np.testing.assert_allclose(C.astype(np.float64), ref, rtol=tol * 4, atol=tol * 4 * max(1, k ** 0.5))


# --------------------------------------------------------------------------- 2.4.9.2 reductions / scans

@ct.kernel
def reductions(s_out, sk_out):
    x = ct.arange(8, dtype=ct.int32).reshape((2, 4))
    s = ct.sum(x, axis=1)
    s_k = ct.sum(x, axis=1, keepdims=True)
    ct.static_assert(s.shape == (2,))
    ct.static_assert(s_k.shape == (2, 1))
    ct.store(s_out, index=(0,), tile=s)
    ct.store(sk_out, index=(0, 0), tile=s_k)


def test_reductions_literal():
    s, sk = poisoned(2, np.int32), poisoned((2, 1), np.int32)
    ct.launch(None, (1,), reductions, (s, sk))
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    np.testing.assert_array_equal(s, x.sum(axis=1))
    np.testing.assert_array_equal(sk, x.sum(axis=1, keepdims=True))


@ct.kernel
def row_sums(xs, s_out, sk_out, R: ct.Constant[int], C: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(xs, index=(bid, 0), shape=(R, C))
    ct.store(s_out, index=(bid,), tile=ct.sum(x, axis=1))
    ct.store(sk_out, index=(bid, 0), tile=ct.sum(x, axis=1, keepdims=True))


def test_row_sums_random(rng):
    R, C, blocks = 2, 4, 5
    xs = rand(rng, (R * blocks, C), np.int32)
    s, sk = poisoned(R * blocks, np.int32), poisoned((R * blocks, 1), np.int32)
    ct.launch(None, (blocks,), row_sums, (xs, s, sk, R, C))
    np.testing.assert_array_equal(s, xs.sum(axis=1))
    np.testing.assert_array_equal(sk, xs.sum(axis=1, keepdims=True))


@ct.kernel
def scans(xs, cs_out, cp_out, N: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(xs, index=(bid,), shape=(N,))
    ct.store(cs_out, index=(bid,), tile=ct.cumsum(x))
    ct.store(cp_out, index=(bid,), tile=ct.cumprod(x))


def test_scans(rng):
    n, blocks = 16, 3
    xs = rand(rng, n * blocks, np.int32, -3, 3)
    xs[xs == 0] = 1
    cs, cp = poisoned(n * blocks, np.int32), poisoned(n * blocks, np.int32)
    ct.launch(None, (blocks,), scans, (xs, cs, cp, n))
    per = xs.reshape(blocks, n)
    np.testing.assert_array_equal(cs.reshape(blocks, n), np.cumsum(per, axis=1, dtype=np.int32))
    np.testing.assert_array_equal(cp.reshape(blocks, n), np.cumprod(per, axis=1, dtype=np.int32))


# --------------------------------------------------------------------------- 2.4.9.3 transpose / permute

@ct.kernel
def transpose_permute(ty_out, tw_out):
    tx = ct.arange(8, dtype=ct.int32).reshape((2, 4))
    ty = ct.transpose(tx)
    tz = ct.arange(8, dtype=ct.int32).reshape((2, 2, 2))
    tw = ct.permute(tz, (2, 0, 1))
    ct.store(ty_out, index=(0, 0), tile=ty)
    ct.store(tw_out, index=(0, 0, 0), tile=tw)


def test_transpose_permute_literal():
    ty, tw = poisoned((4, 2), np.int32), poisoned((2, 2, 2), np.int32)
    ct.launch(None, (1,), transpose_permute, (ty, tw))
    np.testing.assert_array_equal(ty, np.arange(8).reshape(2, 4).T)
    np.testing.assert_array_equal(tw, np.arange(8).reshape(2, 2, 2).transpose(2, 0, 1))


@ct.kernel
def transpose_permute_loaded(a, b, ty_out, tw_out):
    bid = ct.bid(0)
    tx = ct.load(a, index=(bid, 0), shape=(2, 4))
    tz = ct.load(b, index=(bid, 0, 0), shape=(2, 2, 2))
    ct.store(ty_out, index=(0, bid), tile=ct.transpose(tx))
    ct.store(tw_out, index=(0, bid, 0), tile=ct.permute(tz, (2, 0, 1)))


def test_transpose_permute_random(rng):
    blocks = 3
    a, b = rand(rng, (2 * blocks, 4)), rand(rng, (2 * blocks, 2, 2))
    ty, tw = poisoned((4, 2 * blocks), np.float32), poisoned((2, 2 * blocks, 2), np.float32)
    ct.launch(None, (blocks,), transpose_permute_loaded, (a, b, ty, tw))
    np.testing.assert_array_equal(ty, a.T)
    for k in range(blocks):
        np.testing.assert_array_equal(tw[:, 2 * k:2 * k + 2, :], b[2 * k:2 * k + 2].transpose(2, 0, 1))


# --------------------------------------------------------------------------- 2.4.9.4 where

@ct.kernel
def where_literal(out):
    cond = ct.arange(4, dtype=ct.int32) < 2
    x_true = ct.full((4,), 1.0, dtype=ct.float32)
    x_false = ct.full((4,), -1.0, dtype=ct.float32)
    ct.store(out, index=(0,), tile=ct.where(cond, x_true, x_false))


def test_where_literal():
    out = poisoned(4, np.float32)
    ct.launch(None, (1,), where_literal, (out,))
    np.testing.assert_array_equal(out, np.array([1, 1, -1, -1], np.float32))


@ct.kernel
def where_loaded(c, a, b, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    cond = ct.load(c, index=(bid,), shape=(TILE,)) > 0
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(out, index=(bid,), tile=ct.where(cond, x, y))


def test_where_random(rng):
    n, tile = 256, 32
    c, a, b = rand(rng, n), rand(rng, n), rand(rng, n)
    out = poisoned(n, np.float32)
    ct.launch(None, (n // tile,), where_loaded, (c, a, b, out, tile))
    np.testing.assert_array_equal(out, np.where(c > 0, a, b))


# --------------------------------------------------------------------------- 2.4.10 atomics

@ct.kernel
def block_sum(arr, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    tile = ct.load(arr, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    partial = ct.sum(tile)
    out.tiled_view((1,)).atomic_add((0,), partial)


@pytest.mark.parametrize("n,tile", [(16, 16), (1000, 16), (4097, 64)])
def test_block_sum(rng, n, tile):
    arr = rand(rng, n, np.int32)
    start = np.int32(rng.integers(-1000, 1000))
    out = np.array([start, 12345], np.int32)  # out[1] must stay untouched
    ct.launch(None, (math.ceil(n / tile),), block_sum, (arr, out, tile))
    assert out[0] == start + arr.sum(dtype=np.int64)
    assert out[1] == 12345


@ct.kernel
def intra_block_contention(slot, vals, TILE: ct.Constant[int]):
    ptrs = ct.full((TILE,), 0, dtype=ct.int32)  # every lane aims at slot[0]
    ct.atomic_add(slot, ptrs, ct.arange(TILE, dtype=ct.int32), memory_scope=ct.MemoryScope.BLOCK)
    v = ct.load(vals, index=(ct.bid(0),), shape=(TILE,))
    ct.atomic_add(slot, ptrs + 1, v, memory_order=ct.MemoryOrder.RELAXED)


@pytest.mark.parametrize("blocks", [1, 7])
def test_intra_block_contention(rng, blocks):
    tile = 16
    vals = rand(rng, tile * blocks, np.int32)
    start = rand(rng, 3, np.int32)
    slot = start.copy()
    ct.launch(None, (blocks,), intra_block_contention, (slot, vals, tile))
    # every block adds 0 + 1 + ... + 15 to slot[0] and its own tile of vals to slot[1]
    assert slot[0] == start[0] + blocks * sum(range(tile))
    assert slot[1] == start[1] + vals.sum(dtype=np.int64)
    assert slot[2] == start[2]


@ct.kernel
def cross_block_contention(out, vals, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    v = ct.load(vals, index=(bid,), shape=(TILE,))
    old = ct.atomic_add(out, ct.arange(TILE, dtype=ct.int32), v)  # all blocks hit the same TILE slots
    ct.store(vals, index=(bid,), tile=old)


def test_cross_block_contention_returns_old_values(rng):
    tile, blocks = 8, 6
    vals = rand(rng, tile * blocks, np.int32)
    orig = vals.copy()
    out = rand(rng, tile, np.int32)
    start = out.copy()
    ct.launch(None, (blocks,), cross_block_contention, (out, vals, tile))
    per = orig.reshape(blocks, tile)
    np.testing.assert_array_equal(out, start + per.sum(axis=0))
    # sequential reference in block order: block b sees the sum of blocks < b
    expected_old = start + np.concatenate([np.zeros((1, tile), np.int64), np.cumsum(per, axis=0)[:-1]])
    np.testing.assert_array_equal(vals.reshape(blocks, tile), expected_old)


# --------------------------------------------------------------------------- 2.4.11 hints

@ct.kernel(num_ctas=ct.ByTarget(sm_90=4, sm_100=8))
def optimization_hints(in_, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    tile = ct.load(in_, index=(bid,), shape=(TILE,), latency=8)
    ct.store(out, index=(bid,), tile=tile)


def test_hints_do_not_change_results(rng):
    n, tile = 256, 32
    x = rand(rng, n)
    for k in (optimization_hints, optimization_hints.replace_hints(num_ctas=8)):
        out = poisoned(n, np.float32)
        ct.launch(None, (n // tile,), k, (x, out, tile))
        np.testing.assert_array_equal(out, x)


# --------------------------------------------------------------------------- 2.4.1 functions

@ct.function
def helper(x, y):
    return x + y


def plain_helper(x, y):
    return x * y


@ct.kernel
def uses_helpers(a, b, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(out, index=(bid,), tile=plain_helper(helper(x, y), y))


def test_tile_functions(rng):
    n, tile = 128, 32
    a, b = rand(rng, n), rand(rng, n)
    out = poisoned(n, np.float32)
    ct.launch(None, (n // tile,), uses_helpers, (a, b, out, tile))
    np.testing.assert_array_equal(out, (a + b) * b)


def test_kernel_cannot_be_called_directly(rng):
    with pytest.raises(TypeError):
        vec_add_one_call(rand(rng, 8), rand(rng, 8), rand(rng, 8), 8)


@ct.kernel
def _print_then_fail(x):
    t = ct.load(x, index=(0,), shape=(4,))
    print("before", ct.sum(t))
    ct.assert_(ct.sum(t) < 0, "sum must be negative")


def test_single_block_output_precedes_a_failure(capsys):
    """Output printed before a failing assert_ is not lost (one block prints as it runs)."""
    x = np.random.default_rng(3).random(4).astype(np.float32) + 1
    with pytest.raises(ct.TileRuntimeError, match="sum must be negative"):
        ct.launch(None, (1,), _print_then_fail, (x,))
    out = capsys.readouterr().out
    assert out.startswith("before ") and abs(float(out.split()[1]) - float(x.sum())) < 1e-4
