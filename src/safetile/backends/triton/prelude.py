"""Device helpers shared by every generated kernel (``from ...prelude import *``).

Each helper implements one piece of safetile semantics that Triton does not provide
directly: Python floor division and modulo, saturating float→int conversion, integer
powers, NaN-aware reductions. Generated sources call these by name; the same source runs
compiled (CUDA) and under ``TRITON_INTERPRET=1`` (see ``interp.py`` for the interpreter's
libdevice stand-in).
"""
from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from ...runtime import env

_INTERPRETED = env.triton_interpret()
# Triton's libdevice, or under the interpreter its NumPy stand-in interp.libdevice_shim (whose
# directed-rounding functions are attached with setattr, so no static type covers both)
_ld: Any
if _INTERPRETED:
    from . import interp as _interp
    _ld = _interp.libdevice_shim  # used by generated sources
else:
    # programmatic dependent launch (sm_90+): see Facts.pdl in codegen.py
    from triton.language.extra.cuda import gdc_launch_dependents as _st_gdc_launch  # noqa: F401
    from triton.language.extra.cuda import gdc_wait as _st_gdc_wait  # noqa: F401
    from triton.language.extra.cuda import libdevice as _libdevice
    _ld = _libdevice

_NAN = tl.constexpr(float("nan"))
_INF = tl.constexpr(float("inf"))
_NINF = tl.constexpr(float("-inf"))


# ---------------------------------------------------------------------------- integers

@triton.jit
def _st_ifloordiv(a, b):
    """a // b rounding toward -inf; 0 where b == 0 (signed integers)."""
    nz = b != 0
    bb = tl.where(nz, b, 1)
    q = a // bb
    r = a - q * bb
    q = tl.where((r != 0) & ((r ^ bb) < 0), q - 1, q)
    return tl.where(nz, q, 0)


@triton.jit
def _st_imod(a, b):
    """a % b with the sign of b; 0 where b == 0 (signed integers)."""
    nz = b != 0
    bb = tl.where(nz, b, 1)
    r = a % bb
    r = tl.where((r != 0) & ((r ^ bb) < 0), r + bb, r)
    return tl.where(nz, r, 0)


@triton.jit
def _st_ufloordiv(a, b):
    nz = b != 0
    return tl.where(nz, a // tl.where(nz, b, 1), 0)


@triton.jit
def _st_umod(a, b):
    nz = b != 0
    return tl.where(nz, a % tl.where(nz, b, 1), 0)


@triton.jit
def _st_ipow(x, y, BITS: tl.constexpr):
    """x ** y with wrapping; y < 0 gives 1/x truncated (1, -1 or 0) like the CPU backend."""
    r = x * 0 + 1
    base = x
    e = tl.maximum(y, 0)
    for _i in tl.static_range(BITS):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    small = tl.where(x == 1, 1, tl.where(x == -1, tl.where((y & 1) == 0, 1, -1), 0)).to(x.dtype)
    return tl.where(y < 0, small, r)


@triton.jit
def _st_upow(x, y, BITS: tl.constexpr):
    r = x * 0 + 1
    base = x
    e = y
    for _i in tl.static_range(BITS):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    return r


# ---------------------------------------------------------------------------- floats

@triton.jit
def _st_signbit(x):
    if x.dtype.is_fp64():
        s = x.to(tl.int64, bitcast=True) < 0
    else:
        s = x.to(tl.int32, bitcast=True) < 0
    return s


@triton.jit
def _st_div(a, b):
    """IEEE (correctly rounded) division for float32 and float64."""
    if a.dtype.is_fp64():
        q = a / b
    else:
        q = tl.div_rn(a, b)
    return q


@triton.jit
def _st_fdivmod(a, b):
    """NumPy's npy_divmod for floats: (floor quotient, modulo with the sign of b)."""
    mod = a % b  # fmod
    div = _st_div(a - mod, b)
    adjust = (mod != 0) & ((b < 0) != (mod < 0))
    mod = tl.where(adjust, mod + b, mod)
    div = tl.where(adjust, div - 1.0, div)
    zero_b = tl.where(_st_signbit(b), -0.0, 0.0)
    mod = tl.where(mod == 0, zero_b, mod)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
    q0 = _st_div(a, b)
    zq = tl.where(_st_signbit(q0), -0.0, 0.0)
    fl = tl.where(div == 0, zq, fl)
    # b == 0: numpy returns a / b (inf or nan) and fmod's nan
    fl = tl.where(b == 0, q0, fl)
    return fl, mod


@triton.jit
def _st_ffloordiv(a, b):
    q, m = _st_fdivmod(a, b)
    return q


@triton.jit
def _st_fmod(a, b):
    q, m = _st_fdivmod(a, b)
    return m


@triton.jit
def _st_round_tf32(x):
    """Round float32 to TF32's 10-bit mantissa (nearest even), keeping inf/nan."""
    bits = x.to(tl.uint32, bitcast=True)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & 0xFFFFE000).to(tl.float32, bitcast=True)
    finite = (x == x) & (tl.abs(x) != float("inf"))
    return tl.where(finite, rounded, x)


@triton.jit
def _st_f2i(x, DST: tl.constexpr, LO: tl.constexpr, HI: tl.constexpr, MIN: tl.constexpr, MAX: tl.constexpr):
    """Float → integer: truncate toward zero, saturate at the type limits, NaN → 0."""
    inside = (x < HI) & (x > LO)
    r = tl.where(inside, x, 0.0).to(DST)
    r = tl.where(x >= HI, MAX, r)
    r = tl.where(x <= LO, MIN, r)
    return r


if _INTERPRETED:
    @triton.jit
    def _st_dot_operand(x):
        """The interpreter multiplies bfloat16 bit patterns as integers: widen (exactly) first."""
        return x.to(tl.float32)

    @triton.jit
    def _st_to_bf16(x):
        """float32 → bfloat16, round to nearest even (the interpreter's own cast truncates)."""
        bits = x.to(tl.uint32, bitcast=True)
        r = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        r = tl.where(x != x, 0x7FC0, r)
        return r.to(tl.uint16).to(tl.bfloat16, bitcast=True)

    @triton.jit
    def _st_exp2(x):
        return tl.exp2(x)

    @triton.jit
    def _st_exp2_ftz(x):
        """float32 2 ** x with subnormal inputs and results flushed (flush_to_zero=True)."""
        return _st_ftz(tl.exp2(_st_ftz(x)))
else:
    @triton.jit
    def _st_dot_operand(x):
        return x

    @triton.jit
    def _st_to_bf16(x):
        """float32 → bfloat16, round to nearest even."""
        return x.to(tl.bfloat16)

    @triton.jit
    def _st_exp2(x):
        """2 ** x. For float32 the instruction Triton's exp2 also ends in (libdevice's __nv_exp2f
        under Triton's default flush-to-zero reflection), written inline: a kernel that needs no
        other libdevice function then links none, which saves every compile ~0.05 s of bitcode
        linking and optimisation (bench/NOTES.md, session 5)."""
        if x.dtype == tl.float32:
            return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32,
                                             is_pure=True, pack=1)
        else:
            return tl.exp2(x)

    @triton.jit
    def _st_exp2_ftz(x):
        """float32 2 ** x, subnormals flushed (flush_to_zero=True): the .ftz instruction flushes its
        input and its result itself, so no compare-and-select on either side (an attention kernel's
        softmax does one per score)."""
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)


# ---------------------------------------------------------------------------- rounding modes and formats
# (the reference semantics are numerics.py; flags: MODE 0 = toward zero, 1 = down, 2 = up, 3 = nearest
# with ties away from zero)

@triton.jit
def _st_ftz(x):
    """float32 subnormals → zero of the same sign (flush_to_zero=True)."""
    return tl.where(tl.abs(x) < 1.1754943508222875e-38, x * 0.0, x)


@triton.jit
def _st_step(r, UINT: tl.constexpr, SIGN: tl.constexpr, UP: tl.constexpr):
    """The next representable value after ``r`` upward (UP) or downward, through its bits."""
    bits = r.to(UINT, bitcast=True)
    neg = (bits & SIGN) != 0
    mag = bits & (SIGN - 1)
    if UP:
        away = ~neg
        from_zero = 1
    else:
        away = neg
        from_zero = SIGN | 1
    new = tl.where(mag == 0, from_zero, tl.where(away, bits + 1, bits - 1)).to(UINT)
    return new.to(r.dtype, bitcast=True)


@triton.jit
def _st_round_dir(x, r, UINT: tl.constexpr, SIGN: tl.constexpr, MODE: tl.constexpr):
    """Directed rounding of the wider value ``x`` given ``r``, one of its two neighbours in the
    narrower format (e.g. its round-to-nearest)."""
    back = r.to(x.dtype)
    down = _st_step(r, UINT, SIGN, False)
    up = _st_step(r, UINT, SIGN, True)
    if MODE == 0:
        out = tl.where((x > 0) & (back > x), down, tl.where((x < 0) & (back < x), up, r))
    elif MODE == 1:
        out = tl.where(back > x, down, r)
    elif MODE == 2:
        out = tl.where(back < x, up, r)
    else:
        other = tl.where(back > x, down, up)
        d_r = tl.abs(back - x)
        d_o = tl.abs(other.to(x.dtype) - x)
        away = tl.abs(other.to(x.dtype)) > tl.abs(back)
        out = tl.where((back != x) & ((d_o < d_r) | ((d_o == d_r) & away)), other, r)
    return out


@triton.jit
def _st_tf32_dir(x, MODE: tl.constexpr):
    """float32 → tfloat32 toward zero (MODE 0) or to nearest with ties away (MODE 3)."""
    bits = x.to(tl.uint32, bitcast=True)
    if MODE == 3:
        bits = bits + 0x1000
    r = (bits & 0xFFFFE000).to(tl.float32, bitcast=True)
    return tl.where((x == x) & (tl.abs(x) != float("inf")), r, x)


@triton.jit
def _st_e8m0_from_f32(x, UP: tl.constexpr):
    """float32 → float8_e8m0fnu bits, toward zero or up; negative and NaN → 0xFF, saturating."""
    bits = x.to(tl.uint32, bitcast=True)
    e = (bits >> 23) & 0xFF
    m = bits & 0x7FFFFF
    if UP:
        code = tl.where(e == 0, tl.where(m > 0x400000, 1, 0), e + tl.where(m != 0, 1, 0))
    else:
        code = e
    code = tl.minimum(code, 254)
    return tl.where((x != x) | (x < 0), 255, code).to(tl.uint8)


@triton.jit
def _st_e8m0_to_f32(c):
    c32 = c.to(tl.uint32)
    bits = tl.where(c32 == 0, 0x400000, c32 << 23)
    return tl.where(c32 == 255, float("nan"), bits.to(tl.float32, bitcast=True))


@triton.jit
def _st_e5m3_to_f32(c):
    c32 = c.to(tl.uint32)
    e = c32 >> 3
    m = c32 & 7
    normal = (((e + 112) << 23) | (m << 20)).to(tl.float32, bitcast=True)
    sub = m.to(tl.float32) * 7.62939453125e-06
    return tl.where(c32 == 255, float("nan"), tl.where(e == 0, sub, normal))


@triton.jit
def _st_e5m3_from_f32(x):
    """float32 → float8_e5m3fnu bits, nearest even, saturating; negative → 0, NaN → 0xFF."""
    a = tl.minimum(tl.maximum(x, 0.0), 114688.0)
    bits = a.to(tl.uint32, bitcast=True)
    rounded = bits + 0x7FFFF + ((bits >> 20) & 1)
    normal = ((((rounded >> 23) - 112) << 3) | ((rounded >> 20) & 7))
    sub = _ld.rint(a * 131072.0).to(tl.uint32)
    code = tl.where(a < 6.103515625e-05, sub, normal)
    return tl.where(x != x, 255, code).to(tl.uint8)


@triton.jit
def _st_fp4_to_f32(c):
    c32 = c.to(tl.uint32)
    e = (c32 >> 1) & 3
    m = (c32 & 1).to(tl.float32)
    mag = tl.where(e == 0, m * 0.5, (1.0 + m * 0.5) * tl.where(e == 1, 1.0, tl.where(e == 2, 2.0, 4.0)))
    return tl.where((c32 & 8) != 0, -mag, mag)


@triton.jit
def _st_fp4_from_f32(x):
    """float32 → float4_e2m1fn (one code per uint8), nearest even, saturating; NaN → 0."""
    a = tl.abs(x)
    code = ((a > 0.25).to(tl.uint8) + (a >= 0.75).to(tl.uint8) + (a > 1.25).to(tl.uint8)
            + (a >= 1.75).to(tl.uint8) + (a > 2.5).to(tl.uint8) + (a >= 3.5).to(tl.uint8)
            + (a > 5.0).to(tl.uint8))
    neg = ((x.to(tl.uint32, bitcast=True) >> 31) != 0) & (x == x)
    return tl.where(neg, code | 8, code).to(tl.uint8)


# ---------------------------------------------------------------------------- combine functions

@triton.jit
def _st_add(a, b):
    return a + b


@triton.jit
def _st_mul(a, b):
    return a * b


@triton.jit
def _st_add_ftz(a, b):
    return _st_ftz(a + b)


@triton.jit
def _st_mul_ftz(a, b):
    return _st_ftz(a * b)


@triton.jit
def _st_add_rz(a, b):
    return _ld.add_rz(a, b)


@triton.jit
def _st_add_rd(a, b):
    return _ld.add_rd(a, b)


@triton.jit
def _st_add_ru(a, b):
    return _ld.add_ru(a, b)


@triton.jit
def _st_mul_rz(a, b):
    return _ld.mul_rz(a, b)


@triton.jit
def _st_mul_rd(a, b):
    return _ld.mul_rd(a, b)


@triton.jit
def _st_mul_ru(a, b):
    return _ld.mul_ru(a, b)


@triton.jit
def _st_or(a, b):
    return a | b


@triton.jit
def _st_and(a, b):
    return a & b


if _INTERPRETED:  # the interpreter's maxnum/minnum propagate NaN: spell the rules out
    @triton.jit
    def _st_max_nan(a, b):
        """Maximum where NaN wins."""
        return tl.where((a != a) | (a > b), a, b)

    @triton.jit
    def _st_min_nan(a, b):
        return tl.where((a != a) | (a < b), a, b)

    @triton.jit
    def _st_max_num(a, b):
        """Maximum ignoring NaN (NaN only when both are NaN)."""
        return tl.where((b != b) | (a > b), a, b)

    @triton.jit
    def _st_min_num(a, b):
        return tl.where((b != b) | (a < b), a, b)
else:  # one instruction each on sm_80+ (max.NaN.f32 / max.f32)
    @triton.jit
    def _st_max_nan(a, b):
        """Maximum where NaN wins."""
        return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)

    @triton.jit
    def _st_min_nan(a, b):
        return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)

    @triton.jit
    def _st_max_num(a, b):
        """Maximum ignoring NaN (NaN only when both are NaN)."""
        return tl.maximum(a, b)

    @triton.jit
    def _st_min_num(a, b):
        return tl.minimum(a, b)


@triton.jit
def _st_argmax_num(av, ai, bv, bi):
    """(value, index) pairs: the larger value wins, NaN counts as smallest (ignored), ties take the
    lower index."""
    an = av != av
    bn = bv != bv
    better = (av > bv) | (~an & bn)
    tie = (av == bv) | (an & bn)
    pick = better | (tie & (ai < bi))
    return tl.where(pick, av, bv), tl.where(pick, ai, bi)


@triton.jit
def _st_argmin_num(av, ai, bv, bi):
    an = av != av
    bn = bv != bv
    better = (av < bv) | (~an & bn)
    tie = (av == bv) | (an & bn)
    pick = better | (tie & (ai < bi))
    return tl.where(pick, av, bv), tl.where(pick, ai, bi)


@triton.jit
def _st_argmax_comb(av, ai, bv, bi):
    """(value, index) pairs: the larger value wins, NaN counts as largest, ties take the lower index."""
    an = av != av
    bn = bv != bv
    better = (av > bv) | (an & ~bn)
    tie = (av == bv) | (an & bn)
    pick = better | (tie & (ai < bi))
    return tl.where(pick, av, bv), tl.where(pick, ai, bi)


@triton.jit
def _st_argmin_comb(av, ai, bv, bi):
    an = av != av
    bn = bv != bv
    better = (av < bv) | (an & ~bn)
    tie = (av == bv) | (an & bn)
    pick = better | (tie & (ai < bi))
    return tl.where(pick, av, bv), tl.where(pick, ai, bi)


__all__ = ["tl", "triton", "_ld", "_NAN", "_INF", "_NINF"] + sorted(
    n for n in list(globals()) if n.startswith("_st_"))
