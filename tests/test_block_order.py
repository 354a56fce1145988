"""Blocks dispatched batch axis last (backends/triton/block_order.py): which kernels are reordered,
the generated prologue, and, in Triton's interpreter and on the NumPy backend, that every block
still runs exactly once with its own ``bid`` tuple (a bijection over the grid, whatever its shape)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from kernels import attention as A  # noqa: E402
from kernels import gemm as G  # noqa: E402
from kernels import others as K  # noqa: E402

from guarded_buffers import backend as _backend  # noqa: E402

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def bmm_ids(A_, B_, C_, Ids, BAXIS: ct.Constant[int], T: ct.Constant[int]):
    """C[b] = A[b] @ B[b] in TxT tiles with the batch on grid axis BAXIS (the tile row and column on
    the other two, in order); each block also writes its (b, i, j) and a visit count."""
    if BAXIS == 0:
        b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    elif BAXIS == 1:
        b, i, j = ct.bid(1), ct.bid(0), ct.bid(2)
    else:
        b, i, j = ct.bid(2), ct.bid(0), ct.bid(1)
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(A_.shape[2], T)):
        a = ct.load(A_, (b, i, k), (1, T, T), padding_mode=ZERO).reshape((T, T))
        w = ct.load(B_, (b, k, j), (1, T, T), padding_mode=ZERO).reshape((T, T))
        acc = ct.mma(a, w, acc)
    ct.store(C_, (b, i, j), acc.reshape((1, T, T)))
    ids = ct.full((1, 1, 1, 4), 0, ct.int32) + ct.arange(4, dtype=ct.int32).reshape((1, 1, 1, 4))
    code = ct.where(ids == 0, b, ct.where(ids == 1, i, ct.where(ids == 2, j, 1)))
    ct.atomic_add(Ids, (ct.full((1, 1, 1, 4), b, ct.int32), ct.full((1, 1, 1, 4), i, ct.int32),
                        ct.full((1, 1, 1, 4), j, ct.int32), ids), code)


@ct.kernel
def bmm_bias(A_, B_, Bias, C_, T: ct.Constant[int]):
    """A batched product plus a bias row shared by every batch entry: no axis is read only by its
    own blocks, so the order is kept."""
    b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((T, T), ct.float32) + ct.load(Bias, (j,), (T,)).reshape((1, T))
    for k in range(ct.cdiv(A_.shape[2], T)):
        acc = ct.mma(ct.load(A_, (b, i, k), (1, T, T)).reshape((T, T)),
                     ct.load(B_, (b, k, j), (1, T, T)).reshape((T, T)), acc)
    ct.store(C_, (b, i, j), acc.reshape((1, T, T)))


@ct.kernel
def batched_add(X, Y, T: ct.Constant[int]):
    """Reads each element once (no product): never reordered."""
    b, i = ct.bid(0), ct.bid(1)
    ct.store(Y, (b, i), ct.load(X, (b, i), (1, T)) + 1.0)


def _fn(kern, args):
    from safetile.runtime.args import arg_specs
    return kern.specialize(arg_specs(kern, args))


def _order(kern, args):
    from safetile.backends.triton.block_order import block_order
    return block_order(_fn(kern, args))


def _source(kern, args):
    from safetile.backends.triton.launcher import kernel_source
    return kernel_source(kern, args, target=90)


def _bmm_args(batch=3, m=48, n=32, k=40, t=16, baxis=0):
    rng = np.random.default_rng(batch * 100 + m + n + k + baxis)
    a = torch.from_numpy(rng.standard_normal((batch, m, k)).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal((batch, k, n)).astype(np.float32))
    c = torch.full((batch, m, n), float("nan"))
    ids = torch.zeros(batch, -(-m // t), -(-n // t), 4, dtype=torch.int32)
    return a, w, c, ids, baxis, t


@pytest.mark.parametrize("baxis, order", [(0, (1, 2, 0)), (1, (0, 2, 1)), (2, None)])
def test_the_batch_axis_goes_last(baxis, order):
    """The axis every read depends on is dispatched slowest; the others keep their order (a batch
    already on the last axis changes nothing)."""
    assert _order(bmm_ids, _bmm_args(baxis=baxis)) == order


def test_the_benchmark_kernels_keep_their_order_but_the_batched_product():
    """Attention's (query block, batch·head) grid reads K and V without the query block; the 2-D
    GEMMs have no axis every read depends on; a kernel without a product is never reordered."""
    q = torch.randn(2, 256, 64, dtype=torch.bfloat16)
    assert _order(A.attention, (q, q, q, torch.empty_like(q), 0.1, 128, 64, 64, False)) is None
    a = torch.randn(256, 256, dtype=torch.float16)
    assert _order(G.matmul, (a, a, torch.empty_like(a), 128, 128, 64, 8, True)) is None
    assert _order(G.gemm_2d, (a, a, torch.empty_like(a), 128, 128, 64)) is None
    x = torch.randn(4, 256)
    assert _order(batched_add, (x, torch.empty_like(x), 256)) is None
    bias = torch.randn(32)
    t = torch.randn(2, 32, 32)
    assert _order(bmm_bias, (t, t, bias, torch.empty_like(t), 16)) is None
    h = torch.randn(2, 256, 256, dtype=torch.float16)
    assert _order(K.batched_matmul_3d, (h, h, torch.empty_like(h), 128, 128, 64)) == (1, 2, 0)


def test_the_prologue_decomposes_the_linear_block_index_in_64_bits():
    src = _source(bmm_ids, _bmm_args())
    assert "_st_lin = tl.program_id(0).to(tl.int64)" in src
    assert "_st_b1 = (_st_lin % tl.num_programs(1)).to(tl.int32)" in src
    assert "_st_b0 = _st_lin.to(tl.int32)" in src
    assert "tl.program_id(1)\n" not in src.split("_st_b0 = ")[1]  # bid reads the remapped values
    plain = _source(bmm_bias, (torch.randn(2, 32, 32), torch.randn(2, 32, 32), torch.randn(32),
                               torch.empty(2, 32, 32), 16))
    assert "_st_lin" not in plain


@pytest.mark.parametrize("backend", ["numpy", "triton"])
@pytest.mark.parametrize("baxis", [0, 1, 2])
@pytest.mark.parametrize("shape", [(3, 48, 32, 40), (1, 16, 80, 16), (5, 33, 17, 9)])
def test_every_block_runs_once_with_its_own_coordinates(backend, baxis, shape):
    """Poisoned outputs; each block adds (b, i, j, 1) into its own slot of Ids and stores its C tile:
    after the launch every slot holds its own coordinates and a count of exactly one, and C is
    A @ B, whatever axis the batch is on and however ragged the tiles."""
    batch, m, n, k = shape
    a, w, c, ids, _, t = _bmm_args(batch, m, n, k, baxis=baxis)
    grid = [0, 0, 0]
    grid[baxis] = batch
    rest = [i for i in range(3) if i != baxis]
    grid[rest[0]], grid[rest[1]] = -(-m // t), -(-n // t)
    if backend == "numpy":
        a, w, c, ids = (x.numpy().copy() for x in (a, w, c, ids))
    with _backend(backend):
        ct.launch(None, tuple(grid), bmm_ids, (a, w, c, ids, baxis, t))
    got_c, got_ids = (np.asarray(x) for x in (c, ids))
    ref = np.asarray(a, np.float64) @ np.asarray(w, np.float64)
    np.testing.assert_allclose(got_c, ref, rtol=2e-2, atol=2e-2)
    bb, ii, jj = np.meshgrid(np.arange(ids.shape[0]), np.arange(ids.shape[1]), np.arange(ids.shape[2]),
                             indexing="ij")
    np.testing.assert_array_equal(got_ids, np.stack([bb, ii, jj, np.ones_like(bb)], axis=-1))
