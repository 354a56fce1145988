"""Wide K tiles split into pipeline steps (backends/triton/ksplit.py): which loops are rewritten,
that the kernel's own IR (shared with the NumPy backend) is left alone, and that the rewritten
kernel computes the same product in Triton's interpreter as the NumPy backend and NumPy itself,
K a multiple of the tile or not, poisoned outputs."""
from __future__ import annotations

import re

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from guarded_buffers import backend as _backend  # noqa: E402

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def bmm_wide(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """NVIDIA's batched-matmul sample's shape of loop: (1, tm, tk) and (1, tk, tn) tiles, reshaped."""
    b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, index=(b, i, k), shape=(1, tm, tk), padding_mode=ZERO), (tm, tk))
        w = ct.reshape(ct.load(B, index=(b, k, j), shape=(1, tk, tn), padding_mode=ZERO), (tk, tn))
        acc = ct.mma(a, w, acc=acc)
    ct.store(C, index=(b, i, j), tile=ct.reshape(acc.astype(C.dtype), (1, tm, tn)))


@ct.kernel
def mm_variant(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int], MODE: ct.Constant[int]):
    """2-D products that must keep their K tile. MODE 1: loads pad with NaN; 2: the index also
    scales the result; 3: B is loaded once before the loop; 4: A is read transposed; 5: a tile
    loaded at the loop index is a product's accumulator (B loaded before the loop); 0: split."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), ct.float32)
    pad = ct.PaddingMode.NAN if MODE == 1 else ZERO
    w0 = ct.load(B, (0, j), (tk, tn), padding_mode=ZERO)
    for k in range(ct.cdiv(A.shape[1], tk)):
        if MODE == 4:
            a = ct.transpose(ct.load(A, (k, i), (tk, tm), order=(1, 0), padding_mode=ZERO))
        else:
            a = ct.load(A, (i, k), (tm, tk), padding_mode=pad)
        w = w0 if MODE in (3, 5) else ct.load(B, (k, j), (tk, tn), padding_mode=pad)
        if MODE == 5:
            acc = ct.mma(a, w0, ct.load(C, (k, j), (tm, tn), padding_mode=ZERO))
        else:
            acc = ct.mma(a, w, acc)
        if MODE == 2:
            acc = acc * (k + 1).astype(ct.float32)
    ct.store(C, (i, j), acc.astype(C.dtype))


def _fn(kern, args):
    from safetile.runtime.args import arg_specs
    return kern.specialize(arg_specs(kern, args))


def _split(kern, args):
    from safetile.backends.triton.ksplit import split_wide_k
    return split_wide_k(_fn(kern, args))


def _bmm_args(batch=2, m=128, n=256, k=200, tk=128, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(batch, m, k, generator=g).to(dtype)
    w = torch.randn(batch, k, n, generator=g).to(dtype)
    return a, w, torch.full((batch, m, n), float("nan"), dtype=dtype), 128, 256, tk


def _load_shapes(fn) -> list[tuple[int, ...]]:
    from safetile.ir.core import walk
    return [op.attrs["shape"] for op in walk(fn.body) if op.name == "load"]


def test_the_samples_loop_runs_twice_as_many_half_width_steps():
    args = _bmm_args()
    fn = _fn(bmm_wide, args)
    new = _split(bmm_wide, args)
    assert new is not None and new is not fn
    assert _load_shapes(new) == [(1, 128, 64), (1, 64, 256)]
    assert _load_shapes(fn) == [(1, 128, 128), (1, 128, 256)]  # the shared IR is untouched
    from safetile.backends.triton.launcher import kernel_source
    src = kernel_source(bmm_wide, args, target=90)
    assert re.search(r"for \w+ in range\(0, (\w+), 1\)", src)
    assert "* 2)" in src and "block_shape=[1, 128, 64]" in src and "block_shape=[1, 64, 256]" in src


@pytest.mark.parametrize("why, kern, args", [
    ("64-wide K tiles already fit three stages", bmm_wide, _bmm_args(tk=64)),
    ("a tuned pipeline depth", bmm_wide.replace_hints(num_stages=2), _bmm_args()),
    ("NaN padding would add NaN past K", mm_variant, None),
])
def test_loops_that_keep_their_k_tile(why, kern, args):
    if args is None:
        a = torch.randn(256, 256, dtype=torch.float16)
        args = (a, a, torch.empty_like(a), 128, 256, 128, 1)
    assert _split(kern, args) is None, why


@pytest.mark.parametrize("mode", [2, 3, 4, 5])
def test_loops_whose_index_or_operands_do_more_keep_their_k_tile(mode):
    """float32 256×256 tiles: the loop's remaining loads alone exceed the stage budget and every
    tile is as wide as K, so only the rule named by the mode keeps the tile."""
    a = torch.randn(512, 512)
    assert _split(mm_variant, (a, a, torch.empty_like(a), 256, 256, 256, mode)) is None
    assert _split(mm_variant, (a, a, torch.empty_like(a), 256, 256, 256, 0)) is not None


@pytest.mark.parametrize("k", [128, 200, 320, 64, 1])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_the_split_product_equals_numpy_on_both_backends(k, dtype):
    """K a multiple of 128, a partial last tile, a whole extra half tile past K, and K below one
    half: every element of C written (NaN poison first) and equal to NumPy's product."""
    a, w, c, tm, tn, tk = _bmm_args(k=k, dtype=dtype, seed=k)
    assert _split(bmm_wide, (a, w, c, tm, tn, tk)) is not None
    ref = a.double().numpy() @ w.double().numpy()
    grid = (a.shape[0], 1, 1)
    with _backend("triton"):
        ct.launch(None, grid, bmm_wide, (a, w, c, tm, tn, tk))
    tol = 2e-2 if dtype == torch.float16 else 1e-3
    np.testing.assert_allclose(c.double().numpy(), ref, rtol=tol, atol=tol * max(1.0, np.sqrt(k)))
    cn = np.full(c.shape, np.nan, c.numpy().dtype)
    ct.launch(None, grid, bmm_wide, (a.numpy(), w.numpy(), cn, tm, tn, tk))
    np.testing.assert_allclose(cn.astype(np.float64), ref, rtol=tol, atol=tol * max(1.0, np.sqrt(k)))
