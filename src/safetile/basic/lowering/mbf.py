"""GW-BASIC's single-precision ``+ - *`` inside the kernel, bit for bit.

GW-BASIC rounds sums and products on a 32-bit mantissa with a guard byte (products cut to
4 guard bits first, differences with a rounding quirk of their own), so about one result
in twenty differs from IEEE float32 in its last bit, and one in fifty prints differently.
Where IEEE's result is exact, GW-BASIC's is the same, so each operation first takes the
IEEE result and checks it exactly in float64; only inexact results take the emulation
(gwnumbers.mbf_add / mbf_mul written as int64 tile ops). A result beyond the MBF range
comes out infinite (the caller reports *Overflow*).
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ops import elementwise as ew
from ...ops.values import Tile

I64, F64, F32 = dt.int64, dt.float64, dt.float32
_LIMIT = 1 << 32


def _i(v: int):
    return np.int64(v)


def _unpack(x: Tile) -> tuple[Tile, Tile, Tile]:
    """(MBF exponent, 32-bit mantissa with guard byte, negative) of a non-zero float32."""
    bits = ew.astype(ew.bitcast(x, dt.int32), I64)
    exp = ew.add(ew.bitwise_and(ew.bitwise_rshift(bits, _i(23)), _i(0xFF)), _i(2))
    man = ew.bitwise_lshift(ew.bitwise_or(ew.bitwise_and(bits, _i(0x7FFFFF)), _i(0x800000)), _i(8))
    return exp, man, ew.less(bits, _i(0))


def _pack(exp: Tile, man: Tile, neg: Tile) -> Tile:
    """A float32 from an unpacked MBF value whose mantissa is in [2**31 - 1, 2**32) or 0:
    rounded half to even on the guard byte; beyond the range infinite, below it zero."""
    low = ew.bitwise_and(man, _i(0xFF))
    up = ew.bitwise_or(ew.greater(low, _i(0x80)), ew.bitwise_and(
        ew.equal(low, _i(0x80)), ew.not_equal(ew.bitwise_and(man, _i(0x100)), _i(0))))
    man = ew.add(ew.bitwise_and(man, _i(_LIMIT - 256)), ew.where(up, _i(0x100), _i(0)))
    over = ew.greater_equal(man, _i(_LIMIT))
    exp = ew.where(over, ew.add(exp, _i(1)), exp)
    man = ew.where(over, ew.bitwise_rshift(man, _i(1)), man)
    e = ew.sub(exp, _i(2))  # IEEE's biased exponent
    bits = ew.bitwise_or(ew.bitwise_lshift(ew.minimum(ew.maximum(e, _i(0)), _i(255)), _i(23)),
                         ew.bitwise_and(ew.bitwise_rshift(man, _i(8)), _i(0x7FFFFF)))
    bits = ew.where(ew.greater(e, _i(253)), _i(0x7F800000), bits)  # beyond MBF's largest exponent
    bits = ew.where(ew.bitwise_or(ew.less(e, _i(1)), ew.equal(man, _i(0))), _i(0), bits)
    bits = ew.where(neg, ew.bitwise_or(bits, _i(1 << 31)), bits)
    return ew.bitcast(ew.astype(ew.where(ew.greater_equal(bits, _i(1 << 31)), ew.sub(bits, _i(1 << 32)), bits),
                                dt.int32), F32)


def _normalise(exp: Tile, man: Tile) -> tuple[Tile, Tile]:
    """Shift a mantissa left until it reaches 2**31 - 1 (the exponent follows)."""
    top = ew.astype(ew.bitwise_and(ew.bitwise_rshift(ew.bitcast(ew.astype(ew.maximum(man, _i(1)), F64), I64),
                                                     _i(52)), _i(0x7FF)), I64)
    lg = ew.sub(top, _i(1023))  # floor(log2(man))
    k = ew.where(ew.equal(man, _i((1 << 31) - 1)), _i(0), ew.maximum(ew.sub(_i(31), lg), _i(0)))
    return ew.sub(exp, k), ew.bitwise_lshift(man, k)


def gw_mul(p: Tile) -> Tile:
    """The single GW-BASIC gives for the exact (float64) product ``p`` of two singles."""
    bits = ew.bitcast(p, I64)
    neg = ew.less(bits, _i(0))
    e = ew.sub(ew.bitwise_and(ew.bitwise_rshift(bits, _i(52)), _i(0x7FF)), _i(1023))
    m = ew.bitwise_rshift(ew.bitwise_or(ew.bitwise_and(bits, _i((1 << 52) - 1)), _i(1 << 52)), _i(25))
    nib = ew.bitwise_and(m, _i(15))
    q = ew.bitwise_rshift(m, _i(4))
    tie = ew.bitwise_or(ew.equal(nib, _i(8)), ew.equal(nib, _i(9)))
    odd = ew.equal(ew.bitwise_and(q, _i(1)), _i(1))
    up = ew.bitwise_or(ew.greater_equal(nib, _i(10)), ew.bitwise_and(tie, odd))
    q = ew.add(q, ew.where(up, _i(1), _i(0)))
    carry = ew.greater_equal(q, _i(1 << 24))
    q = ew.where(carry, ew.bitwise_rshift(q, _i(1)), q)
    e = ew.where(carry, ew.add(e, _i(1)), e)
    return _pack(ew.add(e, _i(129)), ew.bitwise_lshift(q, _i(8)), neg)


def gw_add(a: Tile, b: Tile) -> Tile:
    """a + b for non-zero singles, as GW-BASIC adds (a - b is a + (-b))."""
    ea, ma, na = _unpack(a)
    eb, mb, nb = _unpack(b)
    swap = ew.bitwise_or(ew.greater(ea, eb), ew.bitwise_and(ew.equal(ea, eb), ew.greater(ma, mb)))
    el, ml = ew.where(swap, eb, ea), ew.where(swap, mb, ma)
    er, mr, nr = ew.where(swap, ea, eb), ew.where(swap, ma, mb), ew.where(swap, na, nb)
    nl = ew.where(swap, nb, na)
    shift = ew.minimum(ew.sub(er, el), _i(40))
    lost_nothing = ew.equal(ew.bitwise_and(ml, ew.sub(ew.bitwise_lshift(_i(1), shift), _i(1))), _i(0))
    subtract = ew.not_equal(nl, nr)
    ml = ew.bitwise_rshift(ml, shift)
    keep_right = ew.bitwise_and(subtract, ew.bitwise_or(ew.less(ml, _i(0x80)), ew.bitwise_and(
        ew.equal(ml, _i(0x80)), lost_nothing)))
    total = ew.add(ml, mr)
    over = ew.greater_equal(total, _i(_LIMIT))
    sum_exp = ew.where(over, ew.add(er, _i(1)), er)
    total = ew.where(over, ew.bitwise_rshift(total, _i(1)), total)
    total = ew.where(lost_nothing, total, ew.bitwise_or(total, _i(1)))
    diff = ew.sub(mr, ml)
    quirk = ew.bitwise_and(ew.equal(ew.bitwise_and(diff, _i(0x1C0)), _i(0x80)),
                           ew.not_equal(ew.bitwise_and(diff, _i(0x1DF)), _i(0x80)))
    diff = ew.where(quirk, ew.bitwise_and(diff, _i(_LIMIT - 256 + 0x7F)), diff)
    diff_exp, diff = _normalise(er, diff)
    exp = ew.where(subtract, diff_exp, sum_exp)
    man = ew.where(subtract, diff, total)
    exp = ew.where(keep_right, er, exp)
    man = ew.where(keep_right, mr, man)
    return _pack(exp, man, nr)


def single_op(low, op: str, x: Tile, y: Tile) -> Tile:
    """x op y (op in + - *) for float32 scalars with GW-BASIC's rounding."""
    a64, b64 = ew.astype(x, F64), ew.astype(y, F64)
    if op == "*":
        exact64 = ew.mul(a64, b64)
    else:
        exact64 = ew.add(a64, b64) if op == "+" else ew.sub(a64, b64)
    ieee = ew.astype(exact64, F32)
    inexact = ew.not_equal(ew.astype(ieee, F64), exact64)
    low.types.setdefault("$mbf", low.scalar_type(F32))
    low.env["$mbf"] = ieee

    def emulate():
        low.env["$mbf"] = gw_mul(exact64) if op == "*" else gw_add(x, y if op == "+" else ew.negative(y))
    low.emit_if(inexact, emulate, lambda: None)
    return low.env.pop("$mbf")
