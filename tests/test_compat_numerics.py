"""cuTile Python's numeric keywords and formats on both backends: rounding modes, flush to
zero, NaN handling of min/max, the narrow float formats, byte packing and block-scaled mma.

References are independent of safetile's own implementation: exact rational arithmetic
(``fractions``) for directed rounding, NumPy/ml_dtypes for conversions and products.
"""
from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import safetile as ct
from compat_util import BACKENDS, backend, compile_error, launch, poison, rng

Mode = ct.RoundingMode
F32, F64, F16, BF16 = np.float32, np.float64, np.float16, ml_dtypes.bfloat16


def neighbours_ok(got: np.ndarray, exact: list, mode: Mode, dtype) -> None:
    """Each result is the correct directed rounding of the exact rational value: on the right side
    of it, and no representable value lies strictly between the two."""
    for g, e in zip(got.astype(np.float64).ravel(), exact):
        if e is None or not np.isfinite(g):
            continue
        gf = Fraction(g)
        if mode is Mode.RM:
            assert gf <= e, (g, float(e))
        elif mode is Mode.RP:
            assert gf >= e, (g, float(e))
        else:
            assert abs(gf) <= abs(e) and (gf == 0 or (gf > 0) == (e > 0)), (g, float(e))
        if gf != e:  # the next value toward e overshoots it
            toward = np.array(np.inf if e > gf else -np.inf).astype(dtype)
            nxt = float(np.nextafter(np.array(g).astype(dtype), toward).astype(np.float64))
            if np.isfinite(nxt):
                assert (Fraction(nxt) > e) if e > gf else (Fraction(nxt) < e), (g, float(e))


@ct.kernel
def directed(x, y, o_add, o_sub, o_mul, o_div, o_sqrt, MODE: ct.Constant, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(y, (0,), (T,))
    ct.store(o_add, (0,), ct.add(a, b, rounding_mode=MODE))
    ct.store(o_sub, (0,), ct.sub(a, b, rounding_mode=MODE))
    ct.store(o_mul, (0,), ct.mul(a, b, rounding_mode=MODE))
    ct.store(o_div, (0,), ct.truediv(a, b, rounding_mode=MODE))
    ct.store(o_sqrt, (0,), ct.sqrt(ct.abs(a), rounding_mode=MODE))


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("dtype", [F32, F16, BF16, F64], ids=["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("mode", [Mode.RZ, Mode.RM, Mode.RP], ids=["RZ", "RM", "RP"])
def test_directed_rounding(be, dtype, mode):
    g = rng()
    T = 64
    span = 2 if dtype is F16 else 4  # float16 overflows beyond 65504
    x = (g.standard_normal(T) * 10.0 ** g.integers(-span, span, T)).astype(dtype)
    y = (g.standard_normal(T) * 10.0 ** g.integers(-span, span, T)).astype(dtype)
    y[0] = 0  # division by zero stays inf
    outs = [poison(T, dtype) for _ in range(5)]
    with backend(be):
        launch(directed, x, y, *outs, mode, T)
    fx = [Fraction(float(v)) for v in x.astype(np.float64)]
    fy = [Fraction(float(v)) for v in y.astype(np.float64)]
    exacts = [[a + b for a, b in zip(fx, fy)], [a - b for a, b in zip(fx, fy)], [a * b for a, b in zip(fx, fy)],
              [a / b if b else None for a, b in zip(fx, fy)]]
    for got, exact in zip(outs[:4], exacts):
        neighbours_ok(got, exact, mode, dtype)
    assert np.isinf(outs[3][0].astype(np.float64)) or x[0] == 0
    # sqrt: got**2 on the right side of |x|, and the next value past it on the other side
    for gval, a in zip(outs[4].astype(np.float64), np.abs(x.astype(np.float64))):
        s = Fraction(gval) ** 2
        assert (s <= Fraction(a)) if mode is not Mode.RP else (s >= Fraction(a))


@ct.kernel
def special_modes(x, y, q_full, q_approx, s_approx, e_full, e_approx, t_approx, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(y, (0,), (T,))
    ct.store(q_full, (0,), ct.truediv(a, b, rounding_mode=Mode.FULL))
    ct.store(q_approx, (0,), ct.truediv(a, b, rounding_mode=Mode.APPROX, flush_to_zero=True))
    ct.store(s_approx, (0,), ct.sqrt(ct.abs(a), rounding_mode=Mode.APPROX))
    ct.store(e_full, (0,), ct.exp(b, rounding_mode=Mode.FULL))
    ct.store(e_approx, (0,), ct.exp(b, rounding_mode=Mode.APPROX))
    ct.store(t_approx, (0,), ct.tanh(a, rounding_mode=Mode.APPROX))


@pytest.mark.parametrize("be", BACKENDS)
def test_full_and_approx_modes_are_accurate(be):
    g = rng()
    T = 32
    x = g.uniform(-20, 20, T).astype(F32)
    y = g.uniform(0.5, 4, T).astype(F32)
    outs = [poison(T, F32) for _ in range(6)]
    with backend(be):
        launch(special_modes, x, y, *outs, T)
    x64, y64 = x.astype(F64), y.astype(F64)
    refs = [x64 / y64, x64 / y64, np.sqrt(np.abs(x64)), np.exp(y64), np.exp(y64), np.tanh(x64)]
    for got, ref in zip(outs, refs):
        np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert np.array_equal(outs[0], (x64 / y64).astype(F32))  # FULL division is correctly rounded


@ct.kernel
def ftz(x, y, o_add, o_mul, o_exp2, o_max, o_sum, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(y, (0,), (T,))
    ct.store(o_add, (0,), ct.add(a, b, flush_to_zero=True))
    ct.store(o_mul, (0,), ct.mul(a, b, flush_to_zero=True))
    ct.store(o_exp2, (0,), ct.exp2(b * -140.0, flush_to_zero=True))
    ct.store(o_max, (0,), ct.maximum(a, b, flush_to_zero=True))
    ct.store(o_sum, (0,), ct.reshape(ct.sum(a, flush_to_zero=True), (1,)))


def flush(v):
    tiny = np.finfo(F32).tiny
    return np.where(np.abs(v) < tiny, np.copysign(0, v), v).astype(F32)


@pytest.mark.parametrize("be", BACKENDS)
def test_flush_to_zero(be):
    g = rng()
    T = 32
    tiny = np.finfo(F32).tiny
    x = (g.uniform(-4, 4, T) * tiny).astype(F32)  # mostly subnormal
    x[:4] = [1.5, -2.0, 3 * tiny, -tiny / 2]
    y = g.uniform(0.5, 1.5, T).astype(F32)
    outs = [poison(T, F32) for _ in range(4)] + [poison(1, F32)]
    with backend(be):
        launch(ftz, x, y, *outs, T)
    fx = flush(x)
    np.testing.assert_array_equal(outs[0], flush(fx + y))
    np.testing.assert_array_equal(outs[1], flush(fx * y))
    np.testing.assert_array_equal(outs[2], flush(np.exp2((y * F32(-140.0)).astype(F32))))
    np.testing.assert_array_equal(outs[3], np.maximum(fx, y))
    np.testing.assert_allclose(outs[4], [fx.astype(F64).sum()], rtol=1e-6)
    assert (np.signbit(outs[1]) == np.signbit(fx * y)).all()  # flushed zeros keep their sign


@ct.kernel
def directed_sum(x, lo, hi, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    ct.store(lo, (0,), ct.reshape(ct.sum(a, rounding_mode=Mode.RM), (1,)))
    ct.store(hi, (0,), ct.reshape(ct.sum(a, rounding_mode=Mode.RP), (1,)))


@pytest.mark.parametrize("be", BACKENDS)
@pytest.mark.parametrize("dtype", [F32, F16])
def test_directed_sum_brackets_the_exact_sum(be, dtype):
    x = (rng().standard_normal(64) * 100).astype(dtype)
    lo, hi = poison(1, dtype), poison(1, dtype)
    with backend(be):
        launch(directed_sum, x, lo, hi, 64)
    exact = sum(Fraction(float(v)) for v in x.astype(F64))
    assert Fraction(float(lo[0])) <= exact <= Fraction(float(hi[0]))
    # every partial sum is within sum(|x|), so each step's rounding error within eps * sum(|x|)
    assert float(hi[0]) - float(lo[0]) <= 2 * 64 * np.abs(x.astype(F64)).sum() * np.finfo(dtype).eps


@ct.kernel
def convert(x, w, o16z, o16d, o16u, obf, otf, o32d, o32u, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(w, (0,), (T,))
    ct.store(o16z, (0,), a.astype(ct.float16, rounding_mode=Mode.RZ))
    ct.store(o16d, (0,), ct.astype(a.astype(ct.bfloat16), ct.float16, rounding_mode=Mode.RM))
    ct.store(o16u, (0,), ct.astype(a.astype(ct.bfloat16), ct.float16, rounding_mode=Mode.RP))
    ct.store(obf, (0,), ct.astype(a, ct.bfloat16, rounding_mode=Mode.RZ))
    ct.store(otf, (0,), ct.astype(a, ct.tfloat32, rounding_mode=Mode.RZ).astype(ct.float32))
    ct.store(o32d, (0,), ct.astype(b, ct.float32, rounding_mode=Mode.RM))
    ct.store(o32u, (0,), ct.astype(b, ct.float32, rounding_mode=Mode.RP))


@pytest.mark.parametrize("be", BACKENDS)
def test_conversion_rounding_modes(be):
    g = rng()
    x = (g.standard_normal(64) * 10.0 ** g.integers(-4, 4, 64)).astype(F32)
    w = g.standard_normal(64) * 10.0 ** g.integers(-30, 30, 64)  # float64
    outs = [poison(64, d) for d in (F16, F16, F16, BF16, F32, F32, F32)]
    with backend(be):
        launch(convert, x, w, *outs, 64)
    exact = [Fraction(float(v)) for v in x]
    neighbours_ok(outs[0], exact, Mode.RZ, F16)
    via_bf16 = [Fraction(float(v)) for v in x.astype(BF16).astype(F64)]
    neighbours_ok(outs[1], via_bf16, Mode.RM, F16)
    neighbours_ok(outs[2], via_bf16, Mode.RP, F16)
    neighbours_ok(outs[3], exact, Mode.RZ, BF16)
    tf = x.view(np.uint32) & np.uint32(0xFFFFE000)  # toward zero: the low 13 mantissa bits dropped
    np.testing.assert_array_equal(outs[4].view(np.uint32), tf)
    neighbours_ok(outs[5], [Fraction(float(v)) for v in w], Mode.RM, F32)
    neighbours_ok(outs[6], [Fraction(float(v)) for v in w], Mode.RP, F32)


def test_conversion_modes_follow_cutiles_table():
    @ct.kernel
    def f32_to_f16_down(x):
        ct.astype(ct.load(x, (0,), (4,)), ct.float16, rounding_mode=ct.RoundingMode.RM)

    @ct.kernel
    def to_e8m0_nearest(x):
        ct.load(x, (0,), (4,)).astype(ct.float8_e8m0fnu)

    @ct.kernel
    def int_with_mode(x):
        ct.astype(ct.load(x, (0,), (4,)), ct.int32, rounding_mode=ct.RoundingMode.RZ)

    x = np.zeros(4, F32)
    compile_error(f32_to_f16_down, x, cls=ct.TileTypeError, match="not supported for conversion from float32")
    compile_error(to_e8m0_nearest, x, cls=ct.TileTypeError, match="float8_e8m0fnu")
    compile_error(int_with_mode, x, cls=ct.TileTypeError, match="only valid for float to float")


@ct.kernel
def scale_formats(x, codes_z, codes_p, back, e53, fp4, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    z = ct.astype(a, ct.float8_e8m0fnu, rounding_mode=Mode.RZ)
    ct.store(codes_z, (0,), ct.bitcast(z, ct.uint8))
    ct.store(codes_p, (0,), ct.bitcast(ct.astype(a, ct.float8_e8m0fnu, rounding_mode=Mode.RP), ct.uint8))
    ct.store(back, (0,), z.astype(ct.float32))
    ct.store(e53, (0,), a.astype(ct.float8_e5m3fnu).astype(ct.float32))
    ct.store(fp4, (0,), a.astype(ct.float4_e2m1fn).astype(ct.float32))


@pytest.mark.parametrize("be", BACKENDS)
def test_scale_and_fp4_formats(be):
    g = rng()
    x = np.abs(g.standard_normal(32) * 10.0 ** g.integers(-3, 4, 32)).astype(F32)
    x[:4] = [1.0, 0.75, 6.5, 1e30]
    outs = [poison(32, np.uint8), poison(32, np.uint8), poison(32, F32), poison(32, F32), poison(32, F32)]
    with backend(be):
        launch(scale_formats, x, *outs, 32)
    e = np.floor(np.log2(x.astype(F64)))
    ref_z = np.clip(e + 127, 0, 254).astype(np.uint8)
    ref_p = np.clip(np.ceil(np.log2(x.astype(F64))) + 127, 0, 254).astype(np.uint8)
    np.testing.assert_array_equal(outs[0], ref_z)
    np.testing.assert_array_equal(outs[1], ref_p)
    np.testing.assert_array_equal(outs[2], np.exp2(ref_z.astype(F64) - 127).astype(F32))
    # float8_e5m3fnu: 3 mantissa bits, exponent bias 15, largest 1.75 * 2**16 (saturating)
    ref53 = np.array([_nearest(v, _E5M3) for v in x.astype(F64)], F32)
    np.testing.assert_array_equal(outs[3], ref53)
    np.testing.assert_array_equal(outs[4], x.astype(ml_dtypes.float4_e2m1fn).astype(F32))


_E5M3 = sorted({(m / 8) * 2.0 ** -14 for m in range(8)} |
               {(1 + m / 8) * 2.0 ** (e - 15) for e in range(1, 32) for m in range(8) if (e, m) != (31, 7)})


def _nearest(v, table):
    """Round to nearest, ties to the value with an even code (saturating at the largest)."""
    if v >= table[-1]:
        return table[-1]
    i = int(np.searchsorted(table, v))
    if table[i] == v:
        return v
    lo, hi = table[i - 1], table[i]
    if v - lo != hi - v:
        return lo if v - lo < hi - v else hi
    return lo if (i - 1) % 2 == 0 else hi


@ct.kernel
def nan_policies(x, mx, mxp, mn, amx, amxp, amn, ew, ewp, T: ct.Constant[int]):
    t = ct.load(x, (0, 0), (T, T))
    ct.store(mx, (0,), ct.max(t, axis=1))
    ct.store(mxp, (0,), ct.max(t, axis=1, propagate_nan=True))
    ct.store(mn, (0,), ct.min(t, axis=1))
    ct.store(amx, (0,), ct.argmax(t, axis=1))
    ct.store(amxp, (0,), ct.argmax(t, axis=1, propagate_nan=True))
    ct.store(amn, (0,), ct.argmin(t, axis=1))
    ct.store(ew, (0, 0), ct.maximum(t, ct.transpose(t)))
    ct.store(ewp, (0, 0), ct.minimum(t, ct.transpose(t), propagate_nan=True))


@pytest.mark.parametrize("be", BACKENDS)
def test_nan_is_ignored_unless_propagated(be):
    x = rng().standard_normal((8, 8)).astype(F32)
    x[1, 3] = x[2, :] = x[5, 0] = np.nan
    outs = [poison(8, F32), poison(8, F32), poison(8, F32), poison(8, np.int32), poison(8, np.int32),
            poison(8, np.int32), poison((8, 8), F32), poison((8, 8), F32)]
    with backend(be):
        launch(nan_policies, x, *outs, 8)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        np.testing.assert_array_equal(outs[0], np.nanmax(x, 1))
    np.testing.assert_array_equal(outs[1], x.max(1))
    with pytest.warns(RuntimeWarning):
        np.testing.assert_array_equal(outs[2], np.nanmin(x, 1))
    no_nan = np.where(np.isnan(x), -np.inf, x)
    np.testing.assert_array_equal(outs[3], no_nan.argmax(1))
    np.testing.assert_array_equal(outs[4], x.argmax(1))  # the first NaN
    np.testing.assert_array_equal(outs[5], np.where(np.isnan(x), np.inf, x).argmin(1))
    np.testing.assert_array_equal(outs[6], np.fmax(x, x.T))
    np.testing.assert_array_equal(outs[7], np.minimum(x, x.T))


@ct.kernel
def arg_all_axes(x, amax, amin, amax_k, T: ct.Constant[int]):
    t = ct.load(x, (0, 0, 0), (2, T, T))
    ct.store(amax, (0,), ct.reshape(ct.argmax(t), (1,)))
    ct.store(amin, (0,), ct.reshape(ct.argmin(t), (1,)))
    ct.store(amax_k, (0, 0, 0), ct.argmax(t, keepdims=True))


@pytest.mark.parametrize("be", BACKENDS)
def test_argmax_argmin_over_all_axes_index_the_flattened_tile(be):
    x = rng().integers(-50, 50, (2, 4, 4)).astype(F32)
    outs = [poison(1, np.int32), poison(1, np.int32), poison((1, 1, 1), np.int32)]
    with backend(be):
        launch(arg_all_axes, x, *outs, 4)
    assert outs[0][0] == x.argmax() and outs[1][0] == x.argmin() and outs[2].item() == x.argmax()


# ------------------------------------------------------------------------------ bytes, fp8, mma_scaled

@ct.kernel
def packing(a, b, h, bits, oa, ob, oh, obits, T: ct.Constant[int]):
    ta = ct.load(a, (0,), (T,))
    tb = ct.load(b, (0, 0), (2, T))
    th = ct.load(h, (0,), (T,))
    ct.store(oa, (0,), ct.pack_to_bytes(ta))
    ct.store(ob, (0,), ct.unpack_from_bytes(ct.pack_to_bytes(tb), ct.int32))
    ct.store(oh, (0,), ct.unpack_from_bytes(ct.pack_to_bytes(th), ct.float16))
    ct.store(obits, (0,), ct.pack_to_bytes(ct.unpack_from_bytes(ct.load(bits, (0,), (T,)), ct.float4_e2m1fn)))


@pytest.mark.parametrize("be", BACKENDS)
def test_pack_and_unpack_bytes(be):
    g = rng()
    T = 8
    a = g.integers(-2**31, 2**31, T).astype(np.int32)
    b = g.integers(-2**31, 2**31, (2, T)).astype(np.int32)
    h = g.standard_normal(T).astype(F16)
    bits = g.integers(0, 256, T).astype(np.uint8)
    outs = [poison(4 * T, np.uint8), poison(2 * T, np.int32), poison(T, F16), poison(T, np.uint8)]
    with backend(be):
        launch(packing, a, b, h, bits, *outs, T)
    np.testing.assert_array_equal(outs[0], a.view(np.uint8))  # little-endian bytes in order
    np.testing.assert_array_equal(outs[1], b.reshape(-1))
    np.testing.assert_array_equal(outs[2], h)
    np.testing.assert_array_equal(outs[3], bits)  # nibbles round-trip


@ct.kernel
def unpack_fp4(bits, out, T: ct.Constant[int]):
    ct.store(out, (0,), ct.unpack_from_bytes(ct.load(bits, (0,), (T,)), ct.float4_e2m1fn).astype(ct.float32))


@pytest.mark.parametrize("be", BACKENDS)
def test_fp4_nibble_order(be):
    bits = rng().integers(0, 256, 8).astype(np.uint8)
    out = poison(16, F32)
    with backend(be):
        launch(unpack_fp4, bits, out, 8)
    codes = np.stack([bits & 15, bits >> 4], -1).reshape(-1)  # the first element in the low nibble
    np.testing.assert_array_equal(out, codes.view(ml_dtypes.float4_e2m1fn).astype(F32))


def test_pack_errors():
    @ct.kernel
    def odd_bits(x):
        ct.pack_to_bytes(ct.full((1,), 1, ct.float4_e2m1fn))

    @ct.kernel
    def not_bytes(x):
        ct.unpack_from_bytes(ct.full((4,), 1, ct.int32), ct.int16)

    compile_error(odd_bits, np.zeros(1), cls=ct.TileTypeError, match="divisible by 8")
    @ct.kernel
    def bools(x):
        ct.pack_to_bytes(ct.full((8,), True, ct.bool_))

    @ct.kernel
    def to_bools(x):
        ct.unpack_from_bytes(ct.full((8,), 1, ct.uint8), ct.bool_)

    compile_error(not_bytes, np.zeros(1), cls=ct.TileTypeError, match="unpack_from_bytes requires uint8 tile")
    compile_error(bools, np.zeros(1), cls=ct.TileTypeError, match="pack_to_bytes from a bool_ tile is not supported")
    compile_error(to_bools, np.zeros(1), cls=ct.TileTypeError, match="to a bool_ tile is not supported")


@ct.kernel
def fp8_roundtrip(x, y, z, T: ct.Constant[int]):
    t = ct.load(x, (0,), (T,))
    ct.store(y, (0,), t.astype(ct.float32) * 2.0)
    ct.store(z, (0,), (t.astype(ct.float32) * 0.5).astype(z.dtype))


# Triton's interpreter has no float8 loads or conversions; compiled Triton runs these tests in
# tests/test_compat_gpu.py
FP8_BACKENDS = ["cpu"]


@pytest.mark.parametrize("be", FP8_BACKENDS + ["triton-e8m0"])
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"])
def test_fp8_torch_tensors(be, name):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, name)
    src = torch.rand(16, generator=torch.Generator().manual_seed(int(rng().integers(2**31)))) * 4 + 0.25
    x = src.to(tdt)
    y = torch.full((16,), float("nan"))
    z = torch.zeros(16).to(tdt)
    if be == "triton-e8m0" and name != "float8_e8m0fnu":
        return
    if name == "float8_e8m0fnu":  # conversions into the scale format need RZ or RP
        with backend(be.split("-")[0]):
            compile_error(fp8_roundtrip, x, y, z, 16, cls=ct.TileTypeError, match="rounding_mode")
        return
    with backend(be):
        launch(fp8_roundtrip, x, y, z, 16)
    torch.testing.assert_close(y, x.float() * 2)
    torch.testing.assert_close(z.float(), (x.float() * 0.5).to(tdt).float())


@ct.kernel
def scaled(x, xs, y, ys, out, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int],
           KS: ct.Constant[int]):
    a = ct.load(x, (0, 0), (M, K))
    b = ct.load(y, (0, 0), (K, N))
    sa = ct.load(xs, (0, 0), (M, KS))
    sb = ct.load(ys, (0, 0), (KS, N))
    ct.store(out, (0, 0), ct.mma_scaled(a, sa, b, sb, ct.full((M, N), 1.0, ct.float32)))


@pytest.mark.parametrize("be", FP8_BACKENDS)
def test_mma_scaled_float8_with_power_of_two_scales(be):
    g = rng()
    M, N, K = 16, 16, 64
    x = g.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn)
    y = g.standard_normal((K, N)).astype(ml_dtypes.float8_e4m3fn)
    xs = np.exp2(g.integers(-4, 5, (M, K // 32))).astype(ml_dtypes.float8_e8m0fnu)
    ys = np.exp2(g.integers(-4, 5, (K // 32, N))).astype(ml_dtypes.float8_e8m0fnu)
    out = poison((M, N), F32)
    with backend(be):
        launch(scaled, x, xs, y, ys, out, M, N, K, K // 32)
    ref = (x.astype(F64) * np.repeat(xs.astype(F64), 32, 1)) @ (y.astype(F64) * np.repeat(ys.astype(F64), 32, 0)) + 1
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-5)


@ct.kernel
def scaled_fp4(xb, xs, yb, ys, out, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int]):
    # float4 operands arrive as packed bytes; scales are float8_e4m3fn, one per 16 elements
    a = ct.unpack_from_bytes(ct.load(xb, (0,), (M * K // 2,)), ct.float4_e2m1fn).reshape((M, K))
    b = ct.unpack_from_bytes(ct.load(yb, (0,), (K * N // 2,)), ct.float4_e2m1fn).reshape((K, N))
    sa = ct.load(xs, (0, 0), (M, K // 16))
    sb = ct.load(ys, (0, 0), (K // 16, N))
    ct.store(out, (0, 0), ct.mma_scaled(a, sa, b, sb, ct.zeros((M, N), ct.float32)))


@pytest.mark.parametrize("be", FP8_BACKENDS)
def test_mma_scaled_float4_with_float8_scales(be):
    g = rng()
    M, N, K = 16, 16, 32
    xc, yc = g.integers(0, 16, M * K).astype(np.uint8), g.integers(0, 16, K * N).astype(np.uint8)
    pack = lambda c: (c[0::2] | (c[1::2] << 4)).astype(np.uint8)  # noqa: E731 - low nibble first
    xs = g.uniform(0.25, 4, (M, K // 16)).astype(ml_dtypes.float8_e4m3fn)
    ys = g.uniform(0.25, 4, (K // 16, N)).astype(ml_dtypes.float8_e4m3fn)
    out = poison((M, N), F32)
    with backend(be):
        launch(scaled_fp4, pack(xc), xs, pack(yc), ys, out, M, N, K)
    x = xc.view(ml_dtypes.float4_e2m1fn).astype(F64).reshape(M, K)
    y = yc.view(ml_dtypes.float4_e2m1fn).astype(F64).reshape(K, N)
    ref = (x * np.repeat(xs.astype(F64), 16, 1)) @ (y * np.repeat(ys.astype(F64), 16, 0))
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-5)


def test_mma_scaled_rules():
    x = np.zeros((16, 64), ml_dtypes.float8_e4m3fn)
    xs = np.zeros((16, 4), ml_dtypes.float8_e8m0fnu)  # block 16: float8 operands need 32
    ys = np.zeros((4, 16), ml_dtypes.float8_e8m0fnu)
    compile_error(scaled, x, xs, x.T.copy(), ys, np.zeros((16, 16), F32), 16, 16, 64, 4, cls=ct.TileTypeError,
                  match="scaling block size")
    compile_error(scaled, x, xs.astype(F32), x.T.copy(), ys.astype(F32), np.zeros((16, 16), F32), 16, 16, 64,
                  4, cls=ct.TileTypeError, match="Unsupported scale dtype")
