"""Second red team on the Triton backend's wide-K split (backends/triton/ksplit.py): kernels near
the rewrite's shape that the first round (test_ksplit_adversarial.py) did not try. Each runs on the
NumPy backend and in Triton's interpreter on NaN-poisoned outputs, both compared with a float64
NumPy reference."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct

pytest.importorskip("torch")
pytest.importorskip("triton")

from test_ksplit_adversarial import check, mm_ref, nan, run_both, split_fired  # noqa: E402

Z = ct.PaddingMode.ZERO
C_ = ct.Constant[int]
RNG = np.random.default_rng(20240611)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _halves(A, B, tk=128):
    """The per-tile products of A @ B over K tiles of width ``tk``."""
    K = A.shape[-1]
    return [mm_ref(A[..., k:k + tk], B[..., k:k + tk, :]) for k in range(0, K, tk)]


# ---------------------------------------------------------------------------------------------
# the sample shape still taken


@ct.kernel
def k_sample(A, B, C, tm: C_, tn: C_, tk: C_):
    pb, pm, pn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (pb, pm, k), (1, tm, tk), padding_mode=Z), (tm, tk))
        b = ct.reshape(ct.load(B, (pb, k, pn), (1, tk, tn), padding_mode=Z), (tk, tn))
        acc = ct.mma(a, b, acc)
    ct.store(C, (pb, pm, pn), ct.reshape(ct.astype(acc, C.dtype), (1, tm, tn)))


def test_sample_still_split():
    A = _rand(2, 256, 320, dtype=np.float16)
    B = _rand(2, 320, 256, dtype=np.float16)
    args = (A, B, nan(2, 256, 256, dtype=np.float16), 128, 256, 128)
    assert split_fired(k_sample, args)
    check(run_both(k_sample, (2, 2, 1), args, (2,)), [np.matmul(A.astype(np.float64), B)], rtol=2e-2)


# ---------------------------------------------------------------------------------------------
# accumulators that feed or read one another


@ct.kernel
def k_chain(A, B, W, C, C2, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    w = ct.load(W, (0, 0), (tn, tn))
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    acc2 = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        acc2 = ct.mma(acc, w, acc2)
    ct.store(C, (m, n), acc)
    ct.store(C2, (m, n), acc2)


def test_product_result_feeds_another_product():
    A, B, W = _rand(128, 256), _rand(256, 128), _rand(128, 128) * 0.1
    p = _halves(A, B)
    ref2 = mm_ref(p[0], W) + mm_ref(p[0] + p[1], W)
    args = (A, B, W, nan(128, 128), nan(128, 128), 128, 128, 128)
    check(run_both(k_chain, (1, 1, 1), args, (3, 4)), [mm_ref(A, B), ref2])


@ct.kernel
def k_cross_acc(A, B, C, C2, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    acc2 = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc2 = ct.mma(a, b, acc)  # another carried value's accumulator
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)
    ct.store(C2, (m, n), acc2)


def test_carried_value_is_product_on_other_accumulator():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), nan(128, 128), 128, 128, 128)
    check(run_both(k_cross_acc, (1, 1, 1), args, (2, 3)), [mm_ref(A, B), mm_ref(A, B)])


@ct.kernel
def k_acc_after(A, B, C, C2, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    acc2 = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        acc2 = ct.mma(a, b, acc)  # reads the new accumulator in the same iteration
    ct.store(C, (m, n), acc)
    ct.store(C2, (m, n), acc2)


def test_accumulator_read_after_product_same_iteration():
    A, B = _rand(128, 256), _rand(256, 128)
    p = _halves(A, B)
    args = (A, B, nan(128, 128), nan(128, 128), 128, 128, 128)
    check(run_both(k_acc_after, (1, 1, 1), args, (2, 3)), [mm_ref(A, B), mm_ref(A, B) + p[1]])


@ct.kernel
def k_two_on_one(A, B, A2, B2, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        a2 = ct.load(A2, (m, k), (tm, tk), padding_mode=Z)
        b2 = ct.load(B2, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a2, b2, ct.mma(a, b, acc))
    ct.store(C, (m, n), acc)


def test_two_products_chained_on_one_accumulator():
    A, B, A2, B2 = _rand(128, 200), _rand(200, 128), _rand(128, 200), _rand(200, 128)
    args = (A, B, A2, B2, nan(128, 128), 128, 128, 128)
    check(run_both(k_two_on_one, (1, 1, 1), args, (4,)), [mm_ref(A, B) + mm_ref(A2, B2)])


@ct.kernel
def k_acc_plus_bias(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        bias = ct.full((tm, tn), 1.0, dtype=ct.float32)  # loop-invariant, pure
        acc = ct.mma(a, b, acc + bias)
    ct.store(C, (m, n), acc)


def test_invariant_bias_added_to_accumulator():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_acc_plus_bias, (1, 1, 1), args, (2,)), [mm_ref(A, B) + 2.0])


@ct.kernel
def k_bias_after(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    bias = ct.full((tm, tn), 1.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc) + bias
    ct.store(C, (m, n), acc)


def test_bias_added_after_product():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_bias_after, (1, 1, 1), args, (2,)), [mm_ref(A, B) + 2.0])


@ct.kernel
def k_op_on_operand(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a / ct.max(a, axis=1, keepdims=True), b + 0, acc)
    ct.store(C, (m, n), acc)


def test_operand_normalised_along_k():
    """a / rowmax(a) depends on which K columns share a tile."""
    A, B = _rand(128, 256), _rand(256, 128)
    a0, a1 = A[:, :128].astype(np.float64), A[:, 128:].astype(np.float64)
    ref = (a0 / a0.max(1, keepdims=True)) @ B[:128] + (a1 / a1.max(1, keepdims=True)) @ B[128:]
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_op_on_operand, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_if_else(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        if m == 0:
            acc = ct.mma(a, b, acc) + 1.0
        else:
            acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_invariant_if_around_product():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_if_else, (1, 1, 1), args, (2,)), [mm_ref(A, B) + 2.0])


@ct.kernel
def k_break(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        if m == 0:
            break
    ct.store(C, (m, n), acc)


def test_invariant_break():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_break, (1, 1, 1), args, (2,)), [_halves(A, B)[0]])


# ---------------------------------------------------------------------------------------------
# operands from the same load, the same array loaded twice, a load off the loop


@ct.kernel
def k_self(A, C, t: C_):
    acc = ct.full((t, t), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], t)):
        a = ct.load(A, (0, k), (t, t), padding_mode=Z)
        acc = ct.mma(a, a, acc)
    ct.store(C, (0, 0), acc)


def test_both_operands_one_load():
    A = _rand(128, 384) * 0.3
    ref = sum(mm_ref(A[:, k:k + 128], A[:, k:k + 128]) for k in (0, 128, 256))
    args = (A, nan(128, 128), 128)
    check(run_both(k_self, (1, 1, 1), args, (1,)), [ref])


@ct.kernel
def k_twice(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    acc2 = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        a2 = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        acc2 = ct.mma(a2, b, acc2)
    ct.store(C, (m, n), acc - acc2)


def test_same_array_loaded_twice():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_twice, (1, 1, 1), args, (2,)), [np.zeros((128, 128))], atol=1e-3)


@ct.kernel
def k_invariant_operand(A, W, C, tm: C_, tn: C_, tk: C_):
    m = ct.bid(0)
    w = ct.load(W, (0, 0), (tk, tn))
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        acc = ct.mma(a, w, acc)
    ct.store(C, (m, 0), acc)


def test_operand_loaded_outside_loop():
    A, W = _rand(128, 512), _rand(128, 256)
    ref = sum(mm_ref(A[:, k:k + 128], W) for k in range(0, 512, 128))
    args = (A, W, nan(128, 256), 128, 256, 128)
    check(run_both(k_invariant_operand, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_diag(A, B, C, t: C_):
    acc = ct.full((t, t), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], t)):
        a = ct.load(A, (k, k), (t, t), padding_mode=Z)
        b = ct.load(B, (k, 0), (t, t), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (0, 0), acc)


def test_iv_on_two_axes_of_one_load():
    A, B = _rand(256, 256), _rand(256, 128)
    ref = mm_ref(A[:128, :128], B[:128]) + mm_ref(A[128:, 128:], B[128:])
    args = (A, B, nan(128, 128), 128)
    check(run_both(k_diag, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_batch_iv(A, B, C, t: C_):
    acc = ct.full((t, t), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], t)):
        a = ct.reshape(ct.load(A, (k, 0, k), (1, t, t), padding_mode=Z), (t, t))
        b = ct.load(B, (k, 0), (t, t), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (0, 0), acc)


def test_iv_on_batch_and_k_axes():
    A, B = _rand(2, 128, 256), _rand(256, 128)
    ref = mm_ref(A[0, :, :128], B[:128]) + mm_ref(A[1, :, 128:], B[128:])
    args = (A, B, nan(128, 128), 128)
    check(run_both(k_batch_iv, (1, 1, 1), args, (2,)), [ref])


# ---------------------------------------------------------------------------------------------
# side effects in the loop: asserts, atomics


@ct.kernel
def k_assert(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        ct.assert_(ct.max(ct.abs(a)) > 0.0, "all-zero tile")
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_assert_on_tile_contents():
    """K = 192: the second 128-wide tile has 64 real columns; a split's fourth half has none."""
    A, B = _rand(128, 192) + 3.0, _rand(192, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_assert, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_atomic(A, B, C, N, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        ct.atomic_add(N, (0,), 1)
    ct.store(C, (m, n), acc)


def test_atomic_in_loop():
    A, B = _rand(128, 256), _rand(256, 128)
    args = (A, B, nan(128, 128), np.zeros(1, np.int32), 128, 128, 128)
    check(run_both(k_atomic, (1, 1, 1), args, (2, 3)), [mm_ref(A, B), np.array([2.0])], atol=1e-3)


# ---------------------------------------------------------------------------------------------
# views: tiled_view, slice, strided traversal


@ct.kernel
def k_tv(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    av = A.tiled_view((tm, tk), padding_mode=Z)
    bv = B.tiled_view((tk, tn), padding_mode=Z)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(av.num_tiles(1)):
        acc = ct.mma(av.load((m, k)), bv.load((k, n)), acc)
    ct.store(C, (m, n), acc)


def test_tiled_view_loads():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_tv, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_tv_step(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    av = A.tiled_view((tm, tk), padding_mode=Z, traversal_steps=(tm, 2 * tk))
    bv = B.tiled_view((tk, tn), padding_mode=Z, traversal_steps=(2 * tk, tn))
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(2):
        acc = ct.mma(av.load((m, k)), bv.load((k, n)), acc)
    ct.store(C, (m, n), acc)


def test_tiled_view_with_gaps():
    A, B = _rand(128, 512), _rand(512, 128)
    ref = mm_ref(A[:, :128], B[:128]) + mm_ref(A[:, 256:384], B[256:384])
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_tv_step, (1, 1, 1), args, (2,)), [ref])


@ct.kernel
def k_slice(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    As = A.slice(1, 10, 210)
    Bs = B.slice(0, 10, 210)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(As.shape[1], tk)):
        a = ct.load(As, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(Bs, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_sliced_in_kernel():
    A, B = _rand(128, 300), _rand(300, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_slice, (1, 1, 1), args, (2,)), [mm_ref(A[:, 10:210], B[10:210])])


# ---------------------------------------------------------------------------------------------
# reshapes, index casts, loop forms


@ct.kernel
def k_mid_unit(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], tk)):
        a = ct.reshape(ct.load(A, (m, 0, k), (tm, 1, tk), padding_mode=Z), (tm, tk))
        b = ct.reshape(ct.load(B, (k, 0, n), (tk, 1, tn), padding_mode=Z), (tk, tn))
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_unit_axis_in_the_middle():
    A, B = _rand(128, 1, 200), _rand(200, 1, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_mid_unit, (1, 1, 1), args, (2,)), [mm_ref(A[:, 0], B[:, 0])])


@ct.kernel
def k_k_mid(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.reshape(ct.load(A, (m, k, 0), (tm, tk, 1), padding_mode=Z), (tm, tk))
        b = ct.reshape(ct.load(B, (0, k, n), (1, tk, tn), padding_mode=Z), (tk, tn))
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_k_axis_before_a_trailing_unit():
    A, B = _rand(128, 200, 1), _rand(1, 200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_k_mid, (1, 1, 1), args, (2,)), [mm_ref(A[:, :, 0], B[0])])


@ct.kernel
def k_reshape_to_3d_mid(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, 1, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.reshape(ct.load(A, (m, k), (tm, tk), padding_mode=Z), (tm, 1, tk))
        b = ct.reshape(ct.load(B, (k, n), (tk, tn), padding_mode=Z), (1, tk, tn))
        acc = ct.mma(a, ct.broadcast_to(b, (tm, tk, tn)), acc)
    ct.store(C, (m, n), ct.reshape(acc, (tm, tn)))


def test_batched_product_with_broadcast_b():
    A, B = _rand(16, 200), _rand(200, 128)
    args = (A, B, nan(16, 128), 16, 128, 128)
    check(run_both(k_reshape_to_3d_mid, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_iv64(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        k64 = ct.int64(k)
        a = ct.load(A, (m, k64), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k64, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_iv_cast_to_int64():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_iv64, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_while(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    k = 0
    while k < ct.cdiv(A.shape[1], tk):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
        k += 1
    ct.store(C, (m, n), acc)


def test_while_loop():
    A, B = _rand(128, 200), _rand(200, 128)
    args = (A, B, nan(128, 128), 128, 128, 128)
    check(run_both(k_while, (1, 1, 1), args, (2,)), [mm_ref(A, B)])


@ct.kernel
def k_const_bound(A, B, C, nk: C_, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(nk):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


@pytest.mark.parametrize("nk", [1, 2, 3])
def test_constant_bound(nk):
    A, B = _rand(128, 256), _rand(256, 128)
    kk = min(nk, 2) * 128
    args = (A, B, nan(128, 128), nk, 128, 128, 128)
    check(run_both(k_const_bound, (1, 1, 1), args, (2,)), [mm_ref(A[:, :kk], B[:kk])])


@ct.kernel
def k_in_if(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    if n == 0:
        for k in range(ct.cdiv(A.shape[1], tk)):
            a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
            b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
            acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_loop_inside_if():
    A, B = _rand(128, 200), _rand(200, 256)
    ref = mm_ref(A, B)
    ref[:, 128:] = 0
    args = (A, B, nan(128, 256), 128, 128, 128)
    check(run_both(k_in_if, (1, 2, 1), args, (2,)), [ref])


# ---------------------------------------------------------------------------------------------
# dtypes: fp16 accumulator with fp32-scale values, fp8, mma_scaled


def test_fp16_accumulator_exact_small_ints():
    """Small integers in fp16: every partial sum is exact, so any order gives the same."""
    A = RNG.integers(-2, 3, (128, 300)).astype(np.float16)
    B = RNG.integers(-2, 3, (300, 256)).astype(np.float16)
    from test_ksplit_adversarial import k_dtype
    args = (A, B, nan(128, 256, dtype=np.float16), 128, 256, 128)
    assert split_fired(k_dtype, args)
    check(run_both(k_dtype, (1, 1, 1), args, (2,)), [mm_ref(A, B)], atol=0)


@ct.kernel
def k_scaled(A, As, B, Bs, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        sa = ct.load(As, (m, k), (tm, tk // 32), padding_mode=Z)
        sb = ct.load(Bs, (k, n), (tk // 32, tn), padding_mode=Z)
        acc = ct.mma_scaled(a, sa, b, sb, acc)
    ct.store(C, (m, n), acc)


def test_mma_scaled_in_wide_loop():
    """fp8 tiles with e8m0 scales per 32 K elements: a split must halve the scale tiles too, or
    leave the loop alone. The NumPy backend against the reference; Triton's source for the GPU."""
    import torch
    ml = pytest.importorskip("ml_dtypes")
    if not hasattr(torch, "float8_e8m0fnu"):
        pytest.skip("no e8m0 in torch")
    from safetile.backends.triton.launcher import kernel_source
    A = RNG.standard_normal((128, 512)).astype(ml.float8_e4m3fn)
    B = RNG.standard_normal((512, 256)).astype(ml.float8_e4m3fn)
    As = np.exp2(RNG.integers(-2, 3, (128, 16))).astype(ml.float8_e8m0fnu)
    Bs = np.exp2(RNG.integers(-2, 3, (16, 256))).astype(ml.float8_e8m0fnu)
    ref = (A.astype(np.float64) * np.repeat(As.astype(np.float64), 32, 1)) @ (
        B.astype(np.float64) * np.repeat(Bs.astype(np.float64), 32, 0))
    out = nan(128, 256)
    ct.launch(None, (1, 1, 1), k_scaled, (A, As, B, Bs, out, 128, 256, 256))
    check({"numpy": [out.astype(np.float64)]}, [ref], rtol=1e-5)

    def tt(x, dt):
        return torch.from_numpy(x.view(np.uint8).copy()).view(dt)
    targs = (tt(A, torch.float8_e4m3fn), tt(As, torch.float8_e8m0fnu), tt(B, torch.float8_e4m3fn),
             tt(Bs, torch.float8_e8m0fnu), torch.zeros(128, 256), 128, 256, 256)
    src = kernel_source(k_scaled, targs, target=100)
    assert "* 2)" not in src


@ct.kernel
def k_fp8(A, B, C, tm: C_, tn: C_, tk: C_):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        a = ct.load(A, (m, k), (tm, tk), padding_mode=Z)
        b = ct.load(B, (k, n), (tk, tn), padding_mode=Z)
        acc = ct.mma(a, b, acc)
    ct.store(C, (m, n), acc)


def test_fp8_wide_tiles_source():
    """fp8 tiles 128×256 and 256×256 (96 KB, one byte an element): the split is taken."""
    import torch
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("no fp8 in torch")
    from safetile.backends.triton.launcher import kernel_source
    A = torch.zeros(128, 300).to(torch.float8_e4m3fn)
    B = torch.zeros(300, 256).to(torch.float8_e4m3fn)
    src = kernel_source(k_fp8, (A, B, torch.zeros(128, 256), 128, 256, 256), target=90)
    assert "* 2)" in src
