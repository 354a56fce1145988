"""The CPU backend's K-loop raising: a loop `acc = mma(load(A,(i,k)), load(B,(k,j)), acc)`
runs as one product. It must agree with the step-by-step loop, including partial tiles,
and must not be used for narrow accumulators, which round after every step."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct


@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc)


@ct.kernel
def gemm_stepwise(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """The same loop with one extra op in the body, so it is never raised."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a * 1, b, acc)
    ct.store(C, index=(bx, by), tile=acc)


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (100, 70, 130), (33, 129, 17)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_raised_loop_matches_stepwise(m, n, k, dtype):
    rng = np.random.default_rng(m * n + k)
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    C1 = np.full((m, n), np.nan, np.float32)
    C2 = np.full((m, n), np.nan, np.float32)
    grid = (ct.cdiv(m, 32), ct.cdiv(n, 32))
    ct.launch(None, grid, gemm, (A, B, C1, 32, 32, 16))
    ct.launch(None, grid, gemm_stepwise, (A, B, C2, 32, 32, 16))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(C1, C2, rtol=1e-5, atol=1e-5)
    assert np.linalg.norm(C1 - ref) / np.linalg.norm(ref) < 1e-6


def test_float16_accumulator_rounds_every_step():
    rng = np.random.default_rng(7)
    m, n, k, tk = 32, 32, 256, 16
    A = rng.standard_normal((m, k)).astype(np.float16)
    B = rng.standard_normal((k, n)).astype(np.float16)
    C = np.full((m, n), np.nan, np.float16)
    ct.launch(None, (1, 1), gemm, (A, B, C, 32, 32, tk))
    acc = np.zeros((m, n), np.float16)
    for s in range(0, k, tk):  # sequential reference: float32 product, rounded to float16 per step
        prod = A[:, s:s + tk].astype(np.float32) @ B[s:s + tk].astype(np.float32)
        acc = (prod + acc.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(C, acc)
