"""Floating-point details both backends must agree on: IEEE rounding modes other than
round-to-nearest-even, flushing of subnormals, and the formats NumPy has no type for.

Directed rounding (``RoundingMode.RZ``/``RM``/``RP``, and ``RA`` for conversions) is computed
exactly: the operation is evaluated in float64 together with the sign of its rounding error
(TwoSum for add/sub, Dekker's exact product for mul/div/sqrt), and that pair is rounded to
the target format by picking the right neighbour. The CPU backend uses these functions
directly; the Triton backend's interpreter stand-ins for libdevice's ``add_rz``-style
functions use them too, so the reference semantics exist once.

``float8_e5m3fnu`` (no sign bit, 5 exponent bits, 3 mantissa bits, bias 15, 0xFF = NaN, no
infinity) is kept as raw bits; ``encode``/``decode`` convert it.
"""
from __future__ import annotations

import functools

import numpy as np

from . import dtypes as dt

# Rounding modes by the names used in IR attributes (ops.numerics.RoundingMode values).
RN, RZ, RM, RP, RA = "nearest_even", "zero", "negative_inf", "positive_inf", "nearest_away"
DIRECTED = (RZ, RM, RP, RA)

_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitter for float64


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p, err with p + err == a * b exactly (p the rounded product); Dekker's algorithm."""
    p = a * b

    def split(x):
        c = _SPLIT * x
        hi = c - (c - x)
        return hi, x - hi
    ah, al = split(a)
    bh, bl = split(b)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(p), err, 0.0)


def exact_op(op: str, a: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(hi, sign of the error) of ``op`` on float64 operands: the exact result is hi + e with
    |e| at most half an ulp of hi, and the second array is sign(e) (-1, 0 or 1)."""
    a = np.asarray(a, np.float64)
    with np.errstate(all="ignore"):
        if op == "add" or op == "sub":
            assert b is not None, f"{op} takes two operands"
            bb = b if op == "add" else -b
            hi = a + bb
            v = hi - a
            err = (a - (hi - v)) + (bb - v)
        elif op == "mul":
            assert b is not None, "mul takes two operands"
            hi, err = _two_product(a, b)
        elif op == "truediv":
            assert b is not None, "truediv takes two operands"
            hi = a / b
            p, perr = _two_product(hi, b)
            err = ((a - p) - perr) * np.sign(b)  # sign of a - hi*b, as a sign of a/b - hi
        elif op == "sqrt":
            hi = np.sqrt(a)
            p, perr = _two_product(hi, hi)
            err = (a - p) - perr
        else:
            raise ValueError(f"no exact form for {op}")
        sign = np.where(np.isfinite(hi), np.sign(np.nan_to_num(err)), 0.0)
    return hi, sign


@functools.cache
def _table(d: dt.DType) -> tuple[np.ndarray, np.ndarray]:
    """Sorted finite non-negative-zero-free values of a format of at most 16 bits, as float64,
    and whether each value's encoding is even (for ties to even)."""
    bits = np.arange(2 ** max(d.bits, 8) if d.bits < 8 else 2 ** d.bits, dtype=np.uint32)
    if d.raw_bits:
        vals = decode(bits.astype(np.uint8), d)
    else:
        store = np.uint8 if d.itemsize == 1 else np.uint16
        raw = bits.astype(store)
        if d.bits < 8:
            raw = raw[: 2 ** d.bits]
        with np.errstate(invalid="ignore"):
            vals = raw.view(d.np_dtype).astype(np.float64)
        bits = bits[: len(vals)]
    keep = np.isfinite(vals) & ~((vals == 0) & np.signbit(vals))
    vals, bits = vals[keep], bits[keep]
    order = np.argsort(vals, kind="stable")
    return vals[order], (bits[order] & 1) == 0


def _has_inf(d: dt.DType) -> bool:
    return d.name in ("float16", "bfloat16", "float32", "float64", "tfloat32", "float8_e5m2")


def round_to(hi: np.ndarray, sign: np.ndarray, d: dt.DType, mode: str) -> np.ndarray:
    """Round the exact value ``hi + e`` (``sign`` = sign(e)) to format ``d`` with ``mode``."""
    hi = np.asarray(hi, np.float64)
    sign = np.broadcast_to(np.asarray(sign, np.float64), hi.shape)
    if d.name == "float64":
        if mode in (RN, RA):
            return hi.copy()
        lo_n, hi_n = np.where(sign < 0, np.nextafter(hi, -np.inf), hi), np.where(sign > 0, np.nextafter(hi, np.inf), hi)
        return _pick(hi, sign, lo_n, hi_n, mode, (lo_n.view(np.uint64) & 1) == 0)
    if d.bits == 32:
        base = hi.astype(np.float32)
        b64 = base.astype(np.float64)
        with np.errstate(all="ignore"):
            cmp = np.where(b64 != hi, np.sign(hi - b64), sign)
        cmp = np.where(np.isnan(cmp), 0.0, cmp)
        lo32 = np.where(cmp < 0, np.nextafter(base, np.float32(-np.inf)), base)
        hi32 = np.where(cmp > 0, np.nextafter(base, np.float32(np.inf)), base)
        out = _pick(hi, sign, lo32.astype(np.float64), hi32.astype(np.float64), mode,
                    (lo32.view(np.uint32) & 1) == 0)
        out = out.astype(np.float32)
        return _to_tf32(out, mode) if d.name == "tfloat32" else out
    vals, even = _table(d)
    idx = np.searchsorted(vals, hi, side="left")
    n = len(vals)
    at = np.minimum(idx, n - 1)
    exact = (idx < n) & (vals[at] == hi)
    below = np.where(exact & (sign >= 0), at, idx - 1)  # index of the largest value <= exact result
    above = np.where(exact & (sign <= 0), at, idx)
    # past either end: infinity (placed one step beyond the largest value, where IEEE rounding
    # overflows), or saturation for formats without one
    inf = _has_inf(d)
    lo_end = 2 * vals[0] - vals[1] if inf else vals[0]
    hi_end = 2 * vals[-1] - vals[-2] if inf else vals[-1]
    lo_n = np.where(below >= 0, vals[np.clip(below, 0, n - 1)], lo_end)
    hi_n = np.where(above < n, vals[np.clip(above, 0, n - 1)], hi_end)
    even_lo = np.where(below >= 0, even[np.clip(below, 0, n - 1)], False)
    out = _pick(hi, sign, lo_n, hi_n, mode, even_lo)
    if inf:
        out = np.where(out == lo_end, -np.inf, np.where(out == hi_end, np.inf, out))
        out = np.where(np.isinf(hi), hi, out)
    out = np.where(np.isnan(hi), np.nan, out)
    if d.name == "float8_e8m0fnu":  # no zero and no sign: negative values are not numbers
        out = np.where(hi < 0, np.nan, out)
    elif d.name == "float8_e5m3fnu":  # no sign: negative values clamp to zero
        out = np.where(hi < 0, 0.0, out)
    elif d.name == "float4_e2m1fn":  # no NaN
        out = np.where(np.isnan(hi), 0.0, out)
    return encode(out, d) if d.raw_bits else out.astype(d.np_dtype)


def _to_tf32(x: np.ndarray, mode: str) -> np.ndarray:
    """float32 values (already rounded with ``mode``) rounded to tfloat32's 10-bit mantissa:
    RZ truncates the low 13 bits, RA adds half of the dropped range first, the rest round to
    nearest even."""
    if mode not in (RZ, RA):
        return dt.round_tf32(x)
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    if mode == RA:
        bits = bits + np.uint32(0x1000)
    out = (bits & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), out, x)


def _pick(hi, sign, lo_n, hi_n, mode, even_lo):
    """Choose between the neighbours lo_n <= exact <= hi_n of the exact value hi + e
    (``sign`` = sign(e)); ``even_lo`` says whether lo_n's encoding is even (ties to even)."""
    with np.errstate(all="ignore"):
        positive = (hi > 0) | ((hi == 0) & (sign > 0))
        if mode == RM:
            out = lo_n
        elif mode == RP:
            out = hi_n
        elif mode == RZ:
            out = np.where(positive, lo_n, hi_n)
        else:  # nearest: ties away from zero (RA) or to even (RN)
            dlo, dhi = hi - lo_n, hi_n - hi
            tie_pick = np.where(positive, hi_n, lo_n) if mode == RA else np.where(even_lo, lo_n, hi_n)
            at_mid = np.where(sign > 0, hi_n, np.where(sign < 0, lo_n, tie_pick))
            out = np.where(dlo < dhi, lo_n, np.where(dlo > dhi, hi_n, at_mid))
        out = np.where(lo_n == hi_n, lo_n, out)
        # a zero result keeps the sign of the exact value
        out = np.where(out == 0, np.where(positive | ((hi == 0) & (sign == 0) & ~np.signbit(hi)), 0.0, -0.0), out)
    return out


def flush_subnormals(x: np.ndarray) -> np.ndarray:
    """Sign-preserving zero for float32 subnormals (``flush_to_zero=True``)."""
    tiny = np.float32(np.finfo(np.float32).tiny)
    return np.where(np.abs(x) < tiny, np.copysign(np.zeros_like(x), x), x)


# ------------------------------------------------------------------------------ float8_e5m3fnu

def decode(bits: np.ndarray, d: dt.DType) -> np.ndarray:
    """float64 values of raw-bit format ``d`` (float8_e5m3fnu)."""
    b = np.asarray(bits).astype(np.int64)
    e, m = b >> 3, b & 7
    val = np.where(e == 0, m / 8.0 * 2.0 ** -14, (1 + m / 8.0) * np.exp2((e - 15).astype(np.float64)))
    return np.where(b == 0xFF, np.nan, val)


def encode(x: np.ndarray, d: dt.DType) -> np.ndarray:
    """Raw bits of float64 values already representable in ``d`` (NaN → 0xFF; values above the
    largest finite value saturate to it; negative values, which the format cannot hold, become 0)."""
    vals, _ = _table(d)
    x = np.asarray(x, np.float64)
    nan = np.isnan(x)
    x = np.clip(np.where(nan, 0.0, x), 0.0, vals[-1])
    codes = np.arange(255, dtype=np.uint8)
    decoded = decode(codes, d)
    order = np.argsort(decoded)
    pos = np.searchsorted(decoded[order], x)
    out = codes[order][np.clip(pos, 0, 254)]
    return np.where(nan, np.uint8(0xFF), out).astype(np.uint8)


def to_raw(x: np.ndarray, d: dt.DType) -> np.ndarray:
    """Round to nearest (ties to even, saturating) into raw-bit format ``d``."""
    x64 = np.asarray(x, np.float64)
    return round_to(x64, np.zeros_like(x64), d, RN)
