"""Numbers to text and back inside the kernel: ``STR$``, ``VAL``, ``HEX$`` and ``OCT$`` on
run-time values, with exactly the digits ``gwnumbers`` gives on the host (the same
unpacked-MBF arithmetic, as int64 tile ops: scaling by ten with a guard byte, then GW-BASIC's
rounding). Singles only: a double is converted to single first.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes as dt
from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops import factories as fac
from ...ops import reduction as red
from ...ops import shape as shp
from ...ops.values import Tile, as_tile
from ..gwnumbers import _LIMITS, SINGLE
from ..vtypes import LONG, SNG
from .values import const

I64 = dt.int64
U8 = dt.uint8
_BOTTOM, _TOP = _LIMITS[SINGLE]
_TEN_MAN = 0xA0 << 24
_LIMIT = 1 << 32


def _i64(v) -> Any:
    return as_tile(np.int64(v), I64) if not isinstance(v, Tile) else v


def helper_loop(low, kind: str, state: dict[str, Any], cond: Callable | None, body: Callable,
                bounds: list | None = None) -> dict[str, Any]:
    """A loop over helper variables ``state`` (name -> initial value) through the lowerer's
    structured loops; ``cond(view)`` and ``body(view[, iv])`` read and update a dict view.
    Returns the final values."""
    low.helper_count = getattr(low, "helper_count", 0) + 1
    keys = {n: f"$h{low.helper_count}_{n}" for n in state}
    for n, v in state.items():
        low.types[keys[n]] = TileType(v.dtype if isinstance(v, Tile) else dt.as_dtype(np.asarray(v).dtype),
                                      v.shape if isinstance(v, Tile) else ())
        low.env[keys[n]] = v

    def view() -> dict[str, Any]:
        return {n: low.env[k] for n, k in keys.items()}

    def write(v: dict[str, Any]) -> None:
        for n, k in keys.items():
            low.env[k] = v[n]

    def body_fn(*iv):
        v = view()
        body(v, *iv)
        write(v)

    cond_fn = (lambda: cond(view())) if cond is not None else None
    low.emit_loop(kind, set(keys.values()), set(), cond_fn, body_fn, bounds=bounds,
                  iv_type=TileType(LONG, ()) if kind == "for" else None)
    out = view()
    for k in keys.values():
        del low.env[k]
    return out


def _greater(a_exp, a_man, b_exp, b_man):
    return ew.bitwise_or(ew.greater(a_exp, b_exp), ew.bitwise_and(ew.equal(a_exp, b_exp), ew.greater(a_man, b_man)))


def _div10(low, exp, man) -> tuple[Tile, Tile]:
    """Unpacked division by ten: 32 steps of long division (truncated), then normalised."""
    def step(v, k):
        r = ew.bitwise_rshift(_i64(_TEN_MAN), ew.astype(k, I64))
        bigger = ew.greater(v["rest"], r)
        v["q"] = ew.add(ew.mul(v["q"], np.int64(2)), ew.astype(bigger, I64))
        v["rest"] = ew.where(bigger, ew.sub(v["rest"], r), v["rest"])

    out = helper_loop(low, "for", {"q": _i64(0), "rest": man}, None, step,
                      bounds=[as_tile(np.int32(0), LONG), as_tile(np.int32(32), LONG), as_tile(np.int32(1), LONG)])
    q, exp = out["q"], ew.sub(exp, np.int64(3))
    for _ in range(2):  # the quotient is at least 0.8 * 2**31: at most one shift
        low_ = ew.less(q, np.int64(1 << 31))
        q = ew.where(low_, ew.mul(q, np.int64(2)), q)
        exp = ew.where(low_, ew.sub(exp, np.int64(1)), exp)
    return exp, q


def _mul10(exp, man) -> tuple[Tile, Tile]:
    """Unpacked multiplication by ten: 2x + 8x, with GW-BASIC's sticky bit."""
    lost = ew.not_equal(ew.bitwise_and(man, np.int64(3)), np.int64(0))
    s = ew.add(ew.bitwise_rshift(man, np.int64(2)), man)
    e = ew.add(exp, np.int64(3))
    over = ew.greater_equal(s, np.int64(_LIMIT))
    e = ew.where(over, ew.add(e, np.int64(1)), e)
    s = ew.where(over, ew.bitwise_rshift(s, np.int64(1)), s)
    return e, ew.where(lost, ew.bitwise_or(s, np.int64(1)), s)


def _carry(exp, man) -> tuple[Tile, Tile]:
    up = ew.greater(ew.bitwise_and(man, np.int64(0xFF)), np.int64(0x7F))
    man = ew.where(up, ew.add(man, np.int64(0x100)), man)
    over = ew.greater_equal(man, np.int64(_LIMIT))
    exp = ew.where(over, ew.add(exp, np.int64(1)), exp)
    man = ew.where(over, ew.bitwise_rshift(man, np.int64(1)), man)
    return exp, ew.bitwise_and(man, np.int64(~0xFF))


def _digits_tile(n: Tile, count) -> Tile:
    """The decimal digits of ``n`` (int64), most significant first, over 8 lanes (int32)."""
    k = fac.arange(8, dtype=LONG)
    power = ew.astype(ew.pow(10.0, ew.astype(ew.sub(ew.sub(count, 1), k), dt.float64)), I64)
    power = ew.maximum(power, np.int64(1))
    return ew.astype(ew.mod(ew.floordiv(n, power), np.int64(10)), LONG)


def _chars(low, length, char_of: Callable[[Tile], Tile]) -> tuple[Tile, Tile]:
    """A string of ``length`` whose character at lane p is ``char_of(lanes)``."""
    lanes = low.lanes()
    c = char_of(lanes)
    return ew.where(ew.less(lanes, length), ew.astype(c, U8), const(0, U8)), length


def int_text_tile(low, v: Tile) -> tuple[Tile, Tile]:
    """STR$ of an integer: a sign position, then the digits."""
    n = ew.astype(v, I64)
    a = ew.abs(n)
    count: Any = as_tile(np.int32(1), LONG)
    for k in range(1, 10):
        count = ew.add(count, ew.astype(ew.greater_equal(a, np.int64(10 ** k)), LONG))
    sign = ew.where(ew.less(n, np.int64(0)), 45, 32)

    def char_of(lanes):
        at = shp.take(ew.add(_digits_tile_wide(a, count), 48), ew.sub(lanes, 1))
        return ew.where(ew.equal(lanes, 0), sign, at)
    return _chars(low, ew.add(count, 1), char_of)


def _digits_tile_wide(n: Tile, count) -> Tile:
    """Like ``_digits_tile`` over 16 lanes (integers have up to 10 digits)."""
    k = fac.arange(16, dtype=LONG)
    power = ew.astype(ew.pow(10.0, ew.astype(ew.maximum(ew.sub(ew.sub(count, 1), k), 0), dt.float64)), I64)
    d = ew.astype(ew.mod(ew.floordiv(n, power), np.int64(10)), LONG)
    return ew.where(ew.less(k, count), d, 0)


def float_text(low, x: Tile) -> tuple[Tile, Tile]:
    """STR$ of a single, digit for digit as gwnumbers.number_text."""
    bits = ew.astype(ew.bitcast(x, dt.int32), I64)
    negative = ew.less(bits, np.int64(0))
    e = ew.bitwise_and(ew.bitwise_rshift(bits, np.int64(23)), np.int64(0xFF))
    zero = ew.equal(e, np.int64(0))
    exp = ew.where(zero, np.int64(_TOP[0]), ew.add(e, np.int64(2)))
    man = ew.where(zero, np.int64(_TOP[1]), ew.bitwise_lshift(
        ew.bitwise_or(ew.bitwise_and(bits, np.int64(0x7FFFFF)), np.int64(0x800000)), np.int64(8)))

    def down(v):
        v["exp"], v["man"] = _div10(low, v["exp"], v["man"])
        v["e10"] = ew.add(v["e10"], 1)
    out = helper_loop(low, "while", {"exp": exp, "man": man, "e10": as_tile(np.int32(0), LONG)},
                      lambda v: _greater(v["exp"], v["man"], np.int64(_TOP[0]), np.int64(_TOP[1])), down)
    exp, man = _carry(out["exp"], out["man"])

    def up(v):
        v["exp"], v["man"] = _mul10(v["exp"], v["man"])
        v["e10"] = ew.sub(v["e10"], 1)
    out = helper_loop(low, "while", {"exp": exp, "man": man, "e10": out["e10"]},
                      lambda v: _greater(np.int64(_BOTTOM[0]), np.int64(_BOTTOM[1]), v["exp"], v["man"]), up)
    exp, man = _carry(out["exp"], out["man"])
    shift = ew.sub(exp, np.int64(SINGLE.bias))
    man = ew.where(ew.greater(shift, np.int64(0)), ew.bitwise_lshift(man, ew.maximum(shift, np.int64(0))),
                   ew.bitwise_rshift(man, ew.maximum(ew.negative(shift), np.int64(0))))
    man = ew.where(ew.not_equal(ew.bitwise_and(man, np.int64(0x80)), np.int64(0)), ew.add(man, np.int64(0x80)), man)
    n = ew.bitwise_rshift(man, np.int64(8))
    return _layout(low, n, out["e10"], negative, zero)


def _layout(low, n: Tile, e10: Tile, negative: Tile, zero: Tile) -> tuple[Tile, Tile]:
    """The text of mantissa ``n`` (7 digits) times 10**e10, as number_text lays it out."""
    d = _digits_tile(n, as_tile(np.int32(7), LONG))
    k = fac.arange(8, dtype=LONG)
    last = red.max(ew.where(ew.bitwise_and(ew.not_equal(d, 0), ew.less(k, 7)), k, -1))
    count = ew.add(last, 1)  # digits without trailing zeros
    digits = ew.add(d, 48)
    e = ew.add(e10, 6)
    scientific = ew.bitwise_or(ew.greater(e, 6), ew.greater(ew.sub(count, e), 8))
    point = ew.add(e, 1)
    mant_len = ew.where(ew.equal(count, 1), 1, ew.add(count, 1))
    body_len = ew.where(scientific, ew.add(mant_len, 4),
                        ew.where(ew.greater_equal(point, count), point,
                                 ew.where(ew.greater(point, 0), ew.add(count, 1), ew.sub(ew.add(count, 1), point))))
    length = ew.where(zero, 2, ew.add(body_len, 1))
    sign = ew.where(negative, 45, 32)
    ae = ew.abs(e)

    def char_of(lanes):
        q = ew.sub(lanes, 1)
        def digit_at(i: Any) -> Any:
            return shp.take(digits, ew.astype(i, LONG))

        fixed_a = ew.where(ew.less(q, count), digit_at(q), 48)
        fixed_b = ew.where(ew.less(q, point), digit_at(q), ew.where(ew.equal(q, point), 46, digit_at(ew.sub(q, 1))))
        fixed_c = ew.where(ew.equal(q, 0), 46, ew.where(ew.less_equal(q, ew.negative(point)), 48,
                                                         digit_at(ew.add(ew.sub(q, 1), point))))
        fixed = ew.where(ew.greater_equal(point, count), fixed_a, ew.where(ew.greater(point, 0), fixed_b, fixed_c))
        mantissa = ew.where(ew.equal(q, 0), digit_at(q), ew.where(ew.equal(q, 1), 46, digit_at(ew.sub(q, 1))))
        sci = ew.where(ew.less(q, mant_len), mantissa,
                       ew.where(ew.equal(q, mant_len), 69,
                                ew.where(ew.equal(q, ew.add(mant_len, 1)), ew.where(ew.less(e, 0), 45, 43),
                                         ew.where(ew.equal(q, ew.add(mant_len, 2)), ew.add(ew.floordiv(ae, 10), 48),
                                                  ew.add(ew.mod(ae, 10), 48)))))
        body = ew.where(scientific, sci, fixed)
        text = ew.where(ew.equal(lanes, 0), sign, body)
        return ew.where(zero, ew.where(ew.equal(lanes, 0), 32, 48), text)
    return _chars(low, length, char_of)


def radix_text(low, v, base: int) -> tuple[Tile, Tile]:
    """HEX$ / OCT$: the 16-bit pattern of an integer in -32768..65535 (else *Overflow*)."""
    x = low.numeric(v)
    n = low.round_int(x, LONG, check=False)
    low.runtime_error(ew.bitwise_and(ew.greater_equal(n, -32768), ew.less_equal(n, 65535)), "Overflow")
    n = ew.bitwise_and(n, 0xFFFF)
    bits = 4 if base == 16 else 3
    width = 4 if base == 16 else 6
    count: Any = as_tile(np.int32(1), LONG)
    for k in range(1, width):
        count = ew.add(count, ew.astype(ew.greater_equal(n, base ** k), LONG))

    def char_of(lanes):
        shift = ew.mul(ew.maximum(ew.sub(ew.sub(count, 1), lanes), 0), bits)
        d = ew.bitwise_and(ew.bitwise_rshift(n, shift), base - 1)
        return ew.where(ew.less(d, 10), ew.add(d, 48), ew.add(d, 55))
    return _chars(low, count, char_of)


def parse_number(low, chars: Tile, length: Tile):
    """VAL of a run-time string: GW-BASIC's reading of a number (blanks skipped anywhere, a
    sign, digits with a point, an E or D exponent), converted as gwnumbers.from_decimal."""
    lanes = low.lanes()
    zero32, zero64 = as_tile(np.int32(0), LONG), as_tile(np.int64(0), I64)
    false = as_tile(False, dt.bool_)
    state = {"k": zero32, "done": false, "signed": false, "neg": false, "point": false, "expo": false,
             "expsigned": false, "expneg": false, "man": zero64, "e10": zero32, "exponent": zero32}

    def more(v):
        return ew.bitwise_and(ew.less(v["k"], length), ew.bitwise_not(v["done"]))

    def step(v):
        c = red.sum(ew.where(ew.equal(lanes, v["k"]), ew.astype(chars, LONG), 0))
        blank = ew.bitwise_or(ew.equal(c, 32), ew.bitwise_or(ew.equal(c, 9), ew.equal(c, 10)))
        live = ew.bitwise_not(blank)
        is_sign = ew.bitwise_or(ew.equal(c, 43), ew.equal(c, 45))
        digit = ew.bitwise_and(ew.greater_equal(c, 48), ew.less_equal(c, 57))
        value = ew.astype(ew.sub(c, 48), I64)
        first = ew.bitwise_and(live, ew.bitwise_not(v["signed"]))
        sign_here = ew.bitwise_and(first, is_sign)
        v["neg"] = ew.where(sign_here, ew.equal(c, 45), v["neg"])
        v["signed"] = ew.bitwise_or(v["signed"], live)
        rest = ew.bitwise_and(live, ew.bitwise_not(sign_here))  # this character is not a leading sign
        in_man = ew.bitwise_and(rest, ew.bitwise_not(v["expo"]))
        man_digit = ew.bitwise_and(in_man, digit)
        room = ew.less(v["man"], np.int64(10 ** 17))
        v["man"] = ew.where(ew.bitwise_and(man_digit, room), ew.add(ew.mul(v["man"], np.int64(10)), value), v["man"])
        shift = ew.where(ew.bitwise_and(man_digit, v["point"]), -1, 0)
        shift = ew.add(shift, ew.where(ew.bitwise_and(man_digit, ew.bitwise_not(room)), 1, 0))
        v["e10"] = ew.add(v["e10"], shift)
        dot = ew.bitwise_and(in_man, ew.equal(c, 46))
        v["point"] = ew.bitwise_or(v["point"], dot)
        letter = ew.bitwise_or(ew.bitwise_or(ew.equal(c, 69), ew.equal(c, 101)),
                               ew.bitwise_or(ew.equal(c, 68), ew.equal(c, 100)))
        starts_exp = ew.bitwise_and(in_man, letter)
        stop_man = ew.bitwise_and(in_man, ew.bitwise_not(ew.bitwise_or(ew.bitwise_or(digit, dot), letter)))
        in_exp = ew.bitwise_and(rest, v["expo"])
        exp_first = ew.bitwise_and(in_exp, ew.bitwise_not(v["expsigned"]))
        exp_sign = ew.bitwise_and(exp_first, is_sign)
        v["expneg"] = ew.where(exp_sign, ew.equal(c, 45), v["expneg"])
        v["expsigned"] = ew.bitwise_or(v["expsigned"], in_exp)
        exp_digit = ew.bitwise_and(ew.bitwise_and(in_exp, ew.bitwise_not(exp_sign)), digit)
        v["exponent"] = ew.where(ew.bitwise_and(exp_digit, ew.less(v["exponent"], 1000)),
                                 ew.add(ew.mul(v["exponent"], 10), ew.astype(value, LONG)), v["exponent"])
        stop_exp = ew.bitwise_and(ew.bitwise_and(in_exp, ew.bitwise_not(exp_sign)), ew.bitwise_not(digit))
        v["expo"] = ew.bitwise_or(v["expo"], starts_exp)
        v["done"] = ew.bitwise_or(stop_man, stop_exp)
        v["k"] = ew.add(v["k"], 1)

    out = helper_loop(low, "while", state, more, step)
    e10 = ew.add(out["e10"], ew.where(out["expneg"], ew.negative(out["exponent"]), out["exponent"]))
    return _from_decimal(low, out["man"], e10, out["neg"])


def _from_decimal(low, mantissa: Tile, e10: Tile, negative: Tile) -> Tile:
    """A single from mantissa * 10**e10 (mantissa >= 0), rounded as gwnumbers.from_decimal."""
    nonzero = ew.greater(mantissa, np.int64(0))
    m = ew.where(nonzero, mantissa, np.int64(1))
    out = helper_loop(low, "while", {"exp": as_tile(np.int64(SINGLE.bias), I64), "man": m},
                      lambda v: ew.less_equal(v["man"], np.int64(0x7FFFFF)),
                      lambda v: v.update(exp=ew.sub(v["exp"], np.int64(1)), man=ew.mul(v["man"], np.int64(2))))
    out = helper_loop(low, "while", out, lambda v: ew.greater(v["man"], np.int64(0xFFFFFF)),
                      lambda v: v.update(exp=ew.add(v["exp"], np.int64(1)),
                                         man=ew.bitwise_rshift(v["man"], np.int64(1))))
    state = {"exp": out["exp"], "man": ew.bitwise_lshift(out["man"], np.int64(8)), "e10": e10}

    def down(v):
        v["exp"], v["man"] = _div10(low, v["exp"], v["man"])
        v["e10"] = ew.add(v["e10"], 1)
    state = helper_loop(low, "while", state, lambda v: ew.less(v["e10"], 0), down)

    def up(v):
        v["exp"], v["man"] = _mul10(v["exp"], v["man"])
        v["e10"] = ew.sub(v["e10"], 1)
    state = helper_loop(low, "while", state,
                        lambda v: ew.bitwise_and(ew.greater(v["e10"], 0), ew.less(v["exp"], np.int64(300))), up)
    exp, man = state["exp"], state["man"]
    low_byte = ew.bitwise_and(man, np.int64(0xFF))
    round_up = ew.bitwise_or(ew.greater(low_byte, np.int64(0x80)), ew.bitwise_and(
        ew.equal(low_byte, np.int64(0x80)), ew.not_equal(ew.bitwise_and(man, np.int64(0x100)), np.int64(0))))
    man = ew.add(ew.bitwise_and(man, np.int64(_LIMIT - 256)), ew.where(round_up, np.int64(0x100), np.int64(0)))
    over = ew.greater_equal(man, np.int64(_LIMIT))
    exp = ew.where(over, ew.add(exp, np.int64(1)), exp)
    man = ew.where(over, ew.bitwise_rshift(man, np.int64(1)), man)
    too_big = ew.greater(exp, np.int64(255))
    ieee_exp = ew.minimum(ew.maximum(ew.sub(exp, np.int64(2)), np.int64(0)), np.int64(253))
    bits = ew.bitwise_or(ew.bitwise_lshift(ieee_exp, np.int64(23)),
                         ew.bitwise_and(ew.bitwise_rshift(man, np.int64(8)), np.int64(0x7FFFFF)))
    bits = ew.where(too_big, np.int64(0x7EFFFFFF), bits)  # MBF's largest single
    bits = ew.where(ew.bitwise_and(nonzero, ew.greater(exp, np.int64(2))), bits, np.int64(0))
    value = ew.bitcast(ew.astype(bits, dt.int32), SNG)
    return ew.where(negative, ew.negative(value), value)

