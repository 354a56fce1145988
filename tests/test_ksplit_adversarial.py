"""Red-team attacks on the Triton backend's wide-K split (backends/triton/ksplit.py): kernels that
are near the rewrite's shape, run on the NumPy backend and in Triton's interpreter, both compared
with a float64 NumPy reference. A kernel the rewrite must leave alone and one it may take must give
the same result either way."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct
from guarded_buffers import backend, host

pytest.importorskip("torch")
pytest.importorskip("triton")

Z = ct.PaddingMode.ZERO
C_ = ct.Constant[int]
RNG = np.random.default_rng(20240607)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _source(kern, args):
    import torch
    from safetile.backends.triton.launcher import kernel_source
    targs = tuple(torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in args)
    return kernel_source(kern, targs, target=90)


def split_fired(kern, args) -> bool:
    """Whether the generated Triton source has a doubled loop bound (the rewrite was taken)."""
    return "* 2)" in _source(kern, args)


def run_both(kern, grid, args, outs=(), order=("triton", "numpy")):
    """Results per backend: the arrays at positions ``outs`` of ``args`` after a launch on a fresh
    copy of the inputs (outputs come in poisoned with NaN by the caller)."""
    import torch
    res = {}
    for name in order:
        if name == "triton":
            a = tuple(torch.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x for x in args)
            with backend("triton"):
                ct.launch(None, grid, kern, a)
        else:
            a = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in args)
            ct.launch(None, grid, kern, a)
        res[name] = [host(a[i]).astype(np.float64) for i in outs]
    return res


def check(res, refs, rtol=1e-4, atol=None):
    for name, got in res.items():
        for g, r in zip(got, refs):
            tol = atol if atol is not None else rtol * max(1.0, float(np.abs(r).max()))
            assert not np.isnan(g).any(), f"{name}: NaN left in output"
            err = float(np.abs(g - r).max())
            assert err <= tol, f"{name}: max error {err} > {tol}"


def nan(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


def mm_ref(A, B):
    return A.astype(np.float64) @ B.astype(np.float64)


# ---------------------------------------------------------------------------------------------
# the baseline: the rewrite is taken and the result is right, K ragged in several ways


@ct.kernel
def k_plain(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


@pytest.mark.parametrize("K", [1, 63, 64, 65, 128, 129, 192, 256, 300])
def test_plain_ragged_k(K):
    A, B = _rand(128, K), _rand(K, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    assert split_fired(k_plain, args)
    check(run_both(k_plain, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


def test_ir_not_mutated_numpy_after_triton():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    res = run_both(k_plain, (1, 1, 1), args, (2,), order=("triton", "numpy", "triton"))
    check(res, [mm_ref(A, B)])
    assert split_fired(k_plain, args)


def test_strided_k_axis():
    """A given as a transposed view: its K axis has a stride other than 1."""
    import torch
    At, B = _rand(256, 128), _rand(256, 128)
    C = torch.full((128, 128), float("nan"))
    with backend("triton"):
        ct.launch(None, (1, 1, 1), k_plain, (torch.from_numpy(At).T, torch.from_numpy(B), C, 128, 128, 128))
    Cn = nan(128, 128)
    ct.launch(None, (1, 1, 1), k_plain, (At.T, B, Cn, 128, 128, 128))
    check({"triton": [host(C).astype(np.float64)], "numpy": [Cn.astype(np.float64)]}, [mm_ref(At.T, B)])


def test_sliced_arrays():
    """Views that start inside a larger array: K past the view reads zeros, not the parent's data."""
    import torch
    Ab, Bb = _rand(128, 300), _rand(300, 128)
    A, B = Ab[:, 10:210], Bb[10:210]
    ref = mm_ref(A, B)
    C = torch.full((128, 128), float("nan"))
    with backend("triton"):
        ct.launch(None, (1, 1, 1), k_plain,
                  (torch.from_numpy(Ab)[:, 10:210], torch.from_numpy(Bb)[10:210], C, 128, 128, 128))
    Cn = nan(128, 128)
    ct.launch(None, (1, 1, 1), k_plain, (A, B, Cn, 128, 128, 128))
    check({"triton": [host(C).astype(np.float64)], "numpy": [Cn.astype(np.float64)]}, [ref])


def test_num_stages_hint_keeps_tile():
    A, B = _rand(128, 256), _rand(256, 128)
    kern = k_plain.replace_hints(num_stages=2)
    args = (A, B, nan(128, 128), 128, 128, 128)
    assert not split_fired(kern, args)
    check(run_both(kern, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


# ---------------------------------------------------------------------------------------------
# the loop body does something per iteration other than add products


@ct.kernel
def k_counter(A, B, C, S, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    cnt = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        cnt = cnt + 1.0
    ct.store(C, (m, n), acc)
    ct.store(S, (m, n), cnt)


def test_carried_iteration_counter():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), nan(128, 128), 128, 128, 128)
    check(run_both(k_counter, (1, 1, 1), args, (2, 3)), [mm_ref(A, B), np.full((128, 128), 2.0)])


@ct.kernel
def k_last_only(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, ct.full((tm, tn), 0.0, dtype=ct.float32))
    ct.store(C, (m, n), acc)


def test_product_not_accumulated():
    """Each iteration overwrites the result: the last K tile's product alone."""
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_last_only, (1, 1, 1), args, (2,)), [mm_ref(A[:, 128:], B[128:])])


@ct.kernel
def k_scaled_acc(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc) * 0.5
    ct.store(C, (m, n), acc)


def test_accumulator_scaled_each_iteration():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    ref = (mm_ref(A[:, :128], B[:128]) * 0.5 + mm_ref(A[:, 128:], B[128:])) * 0.5
    check(run_both(k_scaled_acc, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_max_of_products(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), -1e30, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.maximum(acc, ct.mma(a, b, ct.full((tm, tn), 0.0, dtype=ct.float32)))
    ct.store(C, (m, n), acc)


def test_max_of_products():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    ref = np.maximum(mm_ref(A[:, :128], B[:128]), mm_ref(A[:, 128:], B[128:]))
    check(run_both(k_max_of_products, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_bound_reused(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    nk = ct.cdiv(A.shape[1], tk)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(nk):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc / nk)


def test_loop_bound_used_after_loop():
    A, B = _rand(128, 384), _rand(384, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_bound_reused, (1, 1, 1), args, (2,)), [mm_ref(A, B) / 3])


@ct.kernel
def k_const_bound_shared(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(2):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc * 2)


def test_constant_bound_also_used_elsewhere():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_const_bound_shared, (1, 1, 1), args, (2,)), [mm_ref(A, B) * 2])


@ct.kernel
def k_print(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        ct.printf("step\n")
    ct.store(C, (m, n), acc)


def test_print_in_loop(capfd):
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    counts = {}
    for name in ("triton", "numpy"):
        capfd.readouterr()
        res = run_both(k_print, (1, 1, 1), args, (2,), order=(name,))
        check(res, [mm_ref(A, B)])
        out = capfd.readouterr()
        counts[name] = (out.out + out.err).count("step")
    assert counts == {"triton": 2, "numpy": 2}


# ---------------------------------------------------------------------------------------------
# the loop index used other than as a load's K index


@ct.kernel
def k_iv_where(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.where(k == 0, ct.mma(a, b, acc), acc + ct.mma(a, b, acc) * 0.0 + 1.0)
    ct.store(C, (m, n), acc)


def test_iv_in_where():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_iv_where, (1, 1, 1), args, (2,)), [mm_ref(A[:, :128], B[:128]) + 1.0])


@ct.kernel
def k_iv_nested_if(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        if m >= 0:
            if k < 1:
                acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_iv_used_in_nested_if():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_iv_nested_if, (1, 1, 1), args, (2,)), [mm_ref(A[:, :128], B[:128])])


@ct.kernel
def k_iv_inner_bound(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        for _j in range(k + 1):
            acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_iv_as_inner_loop_bound():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    ref = mm_ref(A[:, :128], B[:128]) + 2 * mm_ref(A[:, 128:], B[128:])
    check(run_both(k_iv_inner_bound, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_iv_arith(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k * 1), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k + 0, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_iv_through_arithmetic():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_iv_arith, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_iv_store(A, B, C, P, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        ct.store(P, (k, n), acc)
    ct.store(C, (m, n), acc)


def test_iv_as_store_index():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), nan(256, 128), 128, 128, 128)
    p0 = mm_ref(A[:, :128], B[:128])
    check(run_both(k_iv_store, (1, 1, 1), args, (2, 3)), [mm_ref(A, B), np.concatenate([p0, mm_ref(A, B)])])


@ct.kernel
def k_start_step(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(1, ct.cdiv(A.shape[1], tk), 2):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_loop_start_and_step():
    A, B = _rand(128, 512), _rand(512, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    ref = mm_ref(A[:, 128:256], B[128:256]) + mm_ref(A[:, 384:], B[384:])
    check(run_both(k_start_step, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_runtime_bound(A, B, C, nk: int, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 1.0, dtype=ct.float32)
    for k in range(nk):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


@pytest.mark.parametrize("nk", [-3, 0, 1, 3])
def test_runtime_bound(nk):
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), nk, 128, 128, 128)
    kk = max(0, min(nk, 2)) * 128
    check(run_both(k_runtime_bound, (1, 1, 1), args, (2,)), [1.0 + mm_ref(A[:, :kk], B[:kk])])


@ct.kernel
def k_nested(A, B, C, tm: C_, tn: C_, tk: C_):
    n = ct.bid(1)
    for mm in range(2):
        acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
        for k in range(ct.cdiv(A.shape[1], tk)):
            a = ct.load(A, (mm, k), (tm, tk), padding_mode=Z)
            b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
            acc = ct.mma(a, b, acc)
        ct.store(C, (mm, n), acc)


def test_nested_loops_outer_index_on_m():
    A, B = _rand(256, 200), _rand(200, 128)
    args = (A, B, nan(256, 128), 128, 128, 128)
    check(run_both(k_nested, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_outer_k_inner_loop(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        for _r in range(2):
            a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
            b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
            acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_loads_in_inner_loop():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_outer_k_inner_loop, (1, 1, 1), args, (2,)), [2 * mm_ref(A, B)])


@ct.kernel
def k_wrong_axis(A, B, C, tm: C_, tn: C_, tk: C_):
    n = ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(2):
        a = ct.load(A, (k, 0), (tm, tk), padding_mode=Z)
        b = ct.load(B, (0, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (0, n), acc)


def test_iv_on_m_axis():
    A, B = _rand(256, 128), _rand(128, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_wrong_axis, (1, 1, 1), args, (2,)), [mm_ref(A[:128], B) + mm_ref(A[128:], B)])


@ct.kernel
def k_acc_loaded(A, B, C, D, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(2):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        d = ct.load(D, (k, n), (tm, tn), padding_mode=Z)
        acc = acc + ct.mma(a, b, d)
    ct.store(C, (m, n), acc)


def test_accumulator_loaded_at_iv():
    A, B, D = _rand(128, 256), _rand(256, 128), _rand(256, 128)
    args = (A, B, nan(128, 128), D, 128, 128, 128)
    check(run_both(k_acc_loaded, (1, 1, 1), args, (2,)), [mm_ref(A, B) + D[:128] + D[128:]])


# ---------------------------------------------------------------------------------------------
# loads that feed other things, several products, pads other than zero, permuted orders


@ct.kernel
def k_two_products(A, B, B2, C, C2, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    acc2 = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        b2 = ct.load(B2, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        acc2 = ct.mma(a, b2, acc2)
    ct.store(C, (m, n), acc)
    ct.store(C2, (m, n), acc2)


def test_two_products_share_a_load():
    A, B, B2 = _rand(128, 200), _rand(200, 128), _rand(200, 128)
    args = (A, B, B2, nan(128, 128), nan(128, 128), 128, 128, 128)
    assert split_fired(k_two_products, args)
    check(run_both(k_two_products, (1, 1, 1), args, (3, 4)), [mm_ref(A, B), mm_ref(A, B2)])


@ct.kernel
def k_load_also_summed(A, B, C, S, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    s = ct.full((tm,), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        s = s + ct.max(a, axis=1)
    ct.store(C, (m, n), acc)
    ct.store(S, (m,), s)


def test_load_feeds_product_and_reduction():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), nan(128), 128, 128, 128)
    smax = A[:, :128].max(1).astype(np.float64) + A[:, 128:].max(1)
    check(run_both(k_load_also_summed, (1, 1, 1), args, (2, 3)), [mm_ref(A, B), smax])


@pytest.mark.parametrize("pad", ["NAN", "NEG_INF", "UNDETERMINED"])
def test_other_padding(pad):
    mode = getattr(ct.PaddingMode, pad, None)
    if mode is None:
        pytest.skip(f"no PaddingMode.{pad}")

    @ct.kernel
    def k(A, B, C, tm: C_, tn: C_, tk: C_):
        m, n = ct.bid(0), ct.bid(1)
        acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
        for k in range(ct.cdiv(A.shape[1], tk)):
            a = ct.load(A, (m, k), (tm, tk), padding_mode=mode)
            b = ct.load(B, (k, n), (tk, tn), padding_mode=mode)
            acc = ct.mma(a, b, acc)
        ct.store(C, (m, n), acc)

    A, B = _rand(128, 256), _rand(256, 128)  # K a multiple of the tile: no padding read
    args = (A, B, nan(128, 128), 128, 128, 128)
    assert not split_fired(k, args)
    check(run_both(k, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_order(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[0], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z, order=(1, 0))
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_permuted_order_load():
    At, B = _rand(200, 128), _rand(200, 128)  # A stored K-major: order=(1, 0) reads its transpose
    args = (At, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_order, (1, 1, 1), args, (2,)), [mm_ref(At.T, B)])


@ct.kernel
def k_transpose(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[0], tk)):
        a = ct.load(A, (k, m), (tk, tm), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(ct.transpose(a), b, acc)
    ct.store(C, (m, n), acc)


def test_transposed_tile():
    At, B = _rand(200, 128), _rand(200, 128)
    args = (At, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_transpose, (1, 1, 1), args, (2,)), [mm_ref(At.T, B)])


# ---------------------------------------------------------------------------------------------
# batched products, reshapes


@ct.kernel
def k_bmm_sample(A, B, C, tm: C_, tn: C_, tk: C_):
    pb, pm, pn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (pb, pm, k), (1, tm, tk), padding_mode=Z), (tm, tk))
        b = ct.reshape(ct.load(B, (pb, k, pn), (1, tk, tn), padding_mode=Z), (tk, tn))
        acc = ct.mma(a, b, acc)
    ct.store(C, (pb, pm, pn), ct.reshape(ct.astype(acc, C.dtype), (1, tm, tn)))


def test_bmm_sample_fp16():
    A = _rand(2, 128, 200, dtype=np.float16)
    B = _rand(2, 200, 256, dtype=np.float16)
    args = (A, B, nan(2, 128, 256), 128, 256, 128)
    assert split_fired(k_bmm_sample, args)
    check(run_both(k_bmm_sample, (2, 1, 1), args, (2,)), [np.matmul(A.astype(np.float64), B)], rtol=1e-3)


@ct.kernel
def k_bmm3d(A, B, C, tb: C_, tm: C_, tn: C_, tk: C_):
    acc = ct.full((tb, tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.load(A, (0, 0, k), (tb, tm, tk), padding_mode=Z)
        b = ct.load(B, (0, k, 0), (tb, tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (0, 0, 0), acc)


def test_3d_batched_mma():
    A, B = _rand(2, 64, 200), _rand(2, 200, 128)
    args = (A, B, nan(2, 64, 128), 2, 64, 128, 128)
    check(run_both(k_bmm3d, (1, 1, 1), args, (2,)), [np.matmul(A.astype(np.float64), B)])


@ct.kernel
def k_bad_reshape(A, B, C, tn: C_):
    n = ct.bid(1)
    acc = ct.full((128, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], 128)):
        a = ct.load(A, (0, 0, k), (2, 64, 128), padding_mode=Z)
        b = ct.load(B, (k, n), (128, tn), padding_mode=Z)
        acc = ct.mma(ct.reshape(a, (128, 128)), b, acc)
    ct.store(C, (0, n), acc)


def test_reshape_merging_axes():
    A, B = _rand(2, 64, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128)
    check(run_both(k_bad_reshape, (1, 1, 1), args, (2,)), [mm_ref(A.reshape(128, 256), B)])


@ct.kernel
def k_reshape_k_merge(A, B, C, tm: C_, tn: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(2):
        a = ct.load(A, (m, k, 0), (tm, 2, 64), padding_mode=Z)
        b = ct.load(B, (k, n), (128, tn), padding_mode=Z)
        acc = ct.mma(ct.reshape(a, (tm, 128)), b, acc)
    ct.store(C, (m, n), acc)


def test_reshape_merging_into_k():
    """A's K is built from two axes of its load (the loop index on the outer one)."""
    A, B = _rand(128, 4, 64), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128)
    check(run_both(k_reshape_k_merge, (1, 1, 1), args, (2,)), [mm_ref(A.reshape(128, 256), B)])


@ct.kernel
def k_unit_insert(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((1, tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.reshape(ct.load(A, (m, k), (tm, tk), padding_mode=Z), (1, tm, tk))
        b = ct.reshape(ct.load(B, (k, n, 0), (tk, tn, 1), padding_mode=Z), (1, tk, tn))
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), ct.reshape(acc, (tm, tn)))


def test_reshape_adding_unit_axes():
    A, B = _rand(128, 200), _rand(200, 128, 1)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_unit_insert, (1, 1, 1), args, (2,)), [mm_ref(A, B[:, :, 0])])


# ---------------------------------------------------------------------------------------------
# dtypes, tile widths


@ct.kernel
def k_dtype(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=C.dtype)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


@pytest.mark.parametrize("ab,c", [(np.int8, np.int32), (np.float16, np.float16), (np.float16, np.float32)])
def test_dtypes(ab, c):
    K = 300
    if np.issubdtype(ab, np.integer):
        A = RNG.integers(-100, 100, (128, K)).astype(ab)
        B = RNG.integers(-100, 100, (K, 256)).astype(ab)
        out = np.zeros((128, 256), c)
    else:
        A, B = _rand(128, K, dtype=ab), _rand(K, 256, dtype=ab)
        out = nan(128, 256, dtype=c)
    args = (A, B, out, 128, 256, 128)
    rtol = 0 if np.issubdtype(ab, np.integer) else (2e-2 if c == np.float16 else 1e-3)
    res = run_both(k_dtype, (1, 1, 1), args, (2,))
    check(res, [mm_ref(A, B)], rtol=rtol, atol=0 if rtol == 0 else None)


@pytest.mark.parametrize("tk", [64, 256])
def test_tile_widths(tk):
    A, B = _rand(64, 300), _rand(300, 128)
    args = (A, B, nan(64, 128), 64, 128, tk)
    check(run_both(k_plain, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


def test_grid_of_blocks():
    A, B = _rand(256, 200), _rand(200, 256)
    args = (A, B, nan(256, 256), 128, 128, 128)
    check(run_both(k_plain, (2, 2, 1), args, (2,)), [mm_ref(A, B)])


def test_int8_wide_tiles_exact():
    """int8 tiles wide enough for the rewrite (256×256 each): int32 sums are exact either way."""
    K = 300
    A = RNG.integers(-100, 100, (128, K)).astype(np.int8)
    B = RNG.integers(-100, 100, (K, 256)).astype(np.int8)
    args = (A, B, np.zeros((128, 256), np.int32), 128, 256, 256)
    assert split_fired(k_dtype, args)
    check(run_both(k_dtype, (1, 1, 1), args, (2,)), [mm_ref(A, B)], atol=0)
