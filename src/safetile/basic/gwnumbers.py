"""GW-BASIC's number text, reproduced exactly on the host.

GW-BASIC keeps numbers in Microsoft Binary Format (MBF): a single has the same 24-bit
mantissa as an IEEE float32, a double 56 bits. safetile computes in IEEE float32/float64,
but converts between numbers and decimal text the way GW-BASIC (and PC-BASIC, the
reference interpreter) does, so printed numbers, ``STR$``, ``VAL`` and program literals
agree digit for digit. That conversion is not correctly rounded: GW-BASIC scales the binary
mantissa by repeated division or multiplication by ten, keeping one guard byte, and rounds
from that (``PRINT 1/3`` shows ``.3333334``, ``PRINT SQR(2)`` shows ``1.414213``).

Numbers are worked on in *unpacked* form ``(exponent, mantissa, negative)``: the mantissa
is the MBF mantissa with its leading one, shifted left by one guard byte (32 bits for a
single, 64 for a double) and the value is ``mantissa * 2 ** (exponent - bias - 8)``, with
``bias`` 152 (single) or 184 (double); exponent 0 is zero.
"""
from __future__ import annotations

import math
from typing import Any
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Precision:
    """Constants of one MBF precision."""
    digits: int  # significant digits printed
    bias: int
    top: int  # the mantissa's leading one, in unpacked form
    exp_char: str

    @property
    def limit(self) -> int:  # unpacked mantissas stay below this
        return self.top * 2

    @property
    def carry_mask(self) -> int:
        return self.limit - 256


SINGLE = Precision(7, 152, 1 << 31, "E")
DOUBLE = Precision(16, 184, 1 << 63, "D")
SINGLE_MAX = float(np.float32(1.7014117e38))  # the largest MBF single, (2**24 - 1) * 2**103
DOUBLE_MAX = (2.0 ** 53 - 1) * 2.0 ** 74  # the largest MBF double that is an IEEE float64 (MBF: 56-bit mantissa)
INT_MIN, INT_MAX = -32768, 32767

Unpacked = tuple[int, int, bool]


class MbfOverflow(ArithmeticError):
    """A result beyond the largest MBF number (GW-BASIC: Overflow)."""


# ----------------------------------------------------------------------------- IEEE <-> unpacked

def unpack(x: float, p: Precision) -> Unpacked:
    """The unpacked MBF form of a float32 (``SINGLE``) or float64 (``DOUBLE``) value."""
    if p is SINGLE:
        bits = int(np.float32(x).view(np.uint32))
        neg, e, frac = bool(bits >> 31), (bits >> 23) & 0xFF, bits & 0x7FFFFF
        if e == 0:  # an IEEE denormal: MBF singles reach down to 2**-129
            if frac == 0:
                return (0, 0, False)
            m, ex = math.frexp(math.ldexp(frac, -149))
            return (ex + 128, int(m * (1 << 24)) << 8, neg) if ex + 128 > 0 else (0, 0, False)
        return (e + 2, ((1 << 23) | frac) << 8, neg)
    bits = int(np.float64(x).view(np.uint64))
    neg, e, frac = bool(bits >> 63), (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
    exp = e - 1023 + 129
    if e == 0 or exp <= 0:
        return (0, 0, False)
    return (exp, ((1 << 52) | frac) << 11, neg)


def pack(den: Unpacked, p: Precision) -> np.floating[Any]:
    """Round an unpacked value to the precision (halves to even on the guard byte) and return
    it as a float32 / float64; raises ``MbfOverflow`` beyond the MBF range."""
    exp, man, neg = den
    if man == 0 or exp <= 0:
        return np.float32(0) if p is SINGLE else np.float64(0)
    while man < p.top - 1:
        exp -= 1
        man <<= 1
    low = man & 0xFF
    up = low > 0x80 or (low == 0x80 and man & 0x100 != 0)
    man = (man & p.carry_mask) + 0x100 * up
    if man >= p.limit:
        exp += 1
        man >>= 1
    if exp > 255:
        raise MbfOverflow()
    if exp <= 0:
        return np.float32(0) if p is SINGLE else np.float64(0)
    value = math.ldexp(man >> 8, exp - p.bias)
    value = -value if neg else value
    return np.float32(value) if p is SINGLE else np.float64(value)


# ----------------------------------------------------------------------------- unpacked arithmetic

def _add(p: Precision, left: Unpacked, right: Unpacked) -> Unpacked:
    lexp, lman, lneg = left
    rexp, rman, rneg = right
    if rexp == 0:
        return left
    if lexp == 0:
        return right
    if lexp > rexp or (lexp == rexp and lman > rman):  # make the right one the larger
        lexp, lman, lneg, rexp, rman, rneg = rexp, rman, rneg, lexp, lman, lneg
    shift = rexp - lexp
    lost_nothing = lman & ((1 << shift) - 1) == 0
    subtract = lneg != rneg
    lman >>= shift
    if subtract and (lman < 0x80 or lman == 0x80 and lost_nothing):
        return rexp, rman, rneg
    if not subtract:
        man, neg, exp = lman + rman, lneg, rexp
        if man >= p.limit:
            exp += 1
            man >>= 1
        if not lost_nothing:
            man |= 1
        return exp, man, neg
    man, neg = rman - lman, rneg
    if man & 0x1C0 == 0x80 and man & 0x1DF != 0x80:  # GW-BASIC's rounding of differences
        man &= p.carry_mask + 0x7F
    return rexp, man, neg


def _divide(p: Precision, left: Unpacked, right: Unpacked) -> Unpacked:
    """Long division of the mantissas (the quotient is truncated, not rounded)."""
    lexp, lman, lneg = left
    rexp, rman, rneg = right
    exp = lexp - (rexp - p.bias - 8) + 1
    rest, quotient = lman, 0
    while rman > 0:
        quotient <<= 1
        exp -= 1
        if rest > rman:
            rest -= rman
            quotient += 1
        rman >>= 1
    return exp, quotient, lneg != rneg


_TEN = {SINGLE: (132, 0xA0 << 24, False), DOUBLE: (132, 0xA0 << 56, False)}


def _div10(p: Precision, den: Unpacked) -> Unpacked:
    exp, man, neg = _divide(p, den, _TEN[p])
    while man < p.top:
        exp -= 1
        man <<= 1
    return exp, man, neg


def _mul10(p: Precision, den: Unpacked) -> Unpacked:
    exp, man, neg = den
    return _add(p, (exp + 1, man, neg), (exp + 3, man, neg))  # 10x = 2x + 8x


def _carry(p: Precision, den: Unpacked) -> Unpacked:
    exp, man, neg = den
    if man & 0xFF > 0x7F:
        man += 0x100
    if man >= p.limit:
        exp += 1
        man >>= 1
    return exp, man & ~0xFF, neg


def _greater(a: Unpacked, b: Unpacked) -> bool:
    return a[0] > b[0] if a[0] != b[0] else a[1] > b[1]


def _from_int(p: Precision, n: int) -> Unpacked:
    if n == 0:
        return (0, 0, False)
    man, exp = abs(n), p.bias
    while man <= p.top // 256 - 1:  # bring into the packed mantissa's range
        exp -= 1
        man <<= 1
    while man > p.limit // 256 - 1:
        exp += 1
        man >>= 1
    return exp, man << 8, n < 0


def _just_under(p: Precision, n: int) -> Unpacked:
    """The largest number of the precision below the integer ``n`` (not a power of two)."""
    exp, man, neg = _from_int(p, n)
    return exp, man - 0x100, neg


_LIMITS = {SINGLE: (_just_under(SINGLE, 10 ** 6), _just_under(SINGLE, 10 ** 7)),
           DOUBLE: (_just_under(DOUBLE, 10 ** 15), _just_under(DOUBLE, 10 ** 16))}


def to_decimal(x, p: Precision) -> tuple[int, int]:
    """(mantissa, exponent) with ``p.digits`` digits such that x ~ mantissa * 10 ** exponent,
    as GW-BASIC derives them."""
    bottom, top = _LIMITS[p]
    den = unpack(x, p)
    exp10 = 0
    while _greater(den, top):
        den = _div10(p, den)
        exp10 += 1
    den = _carry(p, den)
    while _greater(bottom, den):
        den = _mul10(p, den)
        exp10 -= 1
    den = _carry(p, den)
    exp, man, neg = den
    shift = exp - p.bias
    man = man << shift if shift > 0 else man >> -shift
    if man & 0x80:
        man += 0x80
    n = man >> 8
    return (-n if neg else n), exp10


# ----------------------------------------------------------------------------- operators

def mbf_add(x, y, p: Precision = SINGLE, subtract: bool = False):
    """x + y (or x - y) as GW-BASIC computes it (raises MbfOverflow)."""
    ey, my, ny = unpack(y, p)
    return pack(_add(p, unpack(x, p), (ey, my, ny != subtract)), p)


def mbf_mul(x, y, p: Precision = SINGLE):
    """x * y as GW-BASIC computes it: the exact product cut to 4 guard bits, then rounded."""
    lexp, lman, lneg = unpack(x, p)
    rexp, rman, rneg = unpack(y, p)
    if lexp == 0 or rexp == 0:
        return pack((0, 0, False), p)
    exp = lexp + rexp - p.bias - 8
    man = lman * rman
    if exp < -31:
        return pack((0, 0, False), p)
    lower, upper = p.top >> 4, p.limit >> 4
    while man <= lower:
        exp -= 1
        man <<= 1
    while man > upper:
        exp += 1
        man >>= 1
    if man & 0xF == 0x9:  # GW-BASIC's rounding of products
        man &= p.carry_mask + 0xFE
    return pack((exp, man, lneg != rneg), p)


def mbf_div(x, y, p: Precision = SINGLE):
    """x / y as GW-BASIC computes it (y non-zero; raises MbfOverflow)."""
    left = unpack(x, p)
    if left[0] == 0:
        return pack((0, 0, False), p)
    return pack(_divide(p, left, unpack(y, p)), p)


# ----------------------------------------------------------------------------- text

def number_text(x, p: Precision = SINGLE) -> str:
    """A float as PRINT and STR$ show it: a leading space or ``-``, then GW-BASIC's digits
    (``.5``, ``1E+07``, ``1.414213``), without the trailing space PRINT adds."""
    if not np.isfinite(x):  # only the half-precision arrays of the TILE extension get here
        return " NAN" if np.isnan(x) else (" INF" if x > 0 else "-INF")
    if unpack(x, p)[0] == 0:
        return " 0"
    mantissa, exp10 = to_decimal(x, p)
    sign = "-" if mantissa < 0 else " "
    digits = str(abs(mantissa)).rjust(p.digits, "0").rstrip("0")
    exp10 += p.digits - 1
    if exp10 > p.digits - 1 or len(digits) - exp10 > p.digits + 1:
        body = digits[:1] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}{p.exp_char}{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    point = exp10 + 1
    if point >= len(digits):
        body = digits + "0" * (point - len(digits))
    elif point > 0:
        body = digits[:point] + "." + digits[point:]
    else:
        body = "." + "0" * -point + digits
    return sign + body


def int_text(n: int) -> str:
    return f" {n}" if n >= 0 else str(n)


# ----------------------------------------------------------------------------- parsing

def parse_decimal(text: str) -> tuple[int, int, bool, bool, int]:
    """GW-BASIC's reading of a number: (mantissa, exponent, is double, forced single,
    characters used). Blanks are skipped; reading stops at the first character that does not
    belong to a number."""
    neg = False
    mantissa = exp10 = exponent = digits = zeros = 0
    seen_sign = seen_point = seen_exp = seen_exp_sign = exp_neg = False
    is_double = is_single = False
    used = 0
    for i, c in enumerate(text):
        if c in " \t\n":
            used = i + 1
            continue
        if not seen_sign:
            seen_sign = True
            if c in "+-":
                neg = c == "-"
                used = i + 1
                continue
        if not seen_exp:
            if c.isdigit():
                mantissa = mantissa * 10 + ord(c) - 48
                if seen_point:
                    exp10 -= 1
                if mantissa:
                    digits += 1
                    zeros = zeros + 1 if seen_point and c == "0" else 0
            elif c == ".":
                seen_point = True
            elif c in "eEdD":
                seen_exp = True
                is_double = c in "dD"
            elif c == "!":
                is_single = True
                used = i + 1
                break
            elif c == "#":
                is_double = True
                used = i + 1
                break
            else:
                break
            used = i + 1
            continue
        if not seen_exp_sign:
            seen_exp_sign = True
            if c in "+-":
                exp_neg = c == "-"
                used = i + 1
                continue
        if not c.isdigit():
            break
        exponent = exponent * 10 + ord(c) - 48
        used = i + 1
    exp10 += -exponent if exp_neg else exponent
    if digits - zeros > 7 and not is_single:
        is_double = True
    return (-mantissa if neg else mantissa), exp10, is_double, is_single, used


def from_decimal(mantissa: int, exp10: int, p: Precision):
    """The float nearest GW-BASIC's reading of mantissa * 10 ** exp10 (raises MbfOverflow)."""
    if mantissa == 0:
        return np.float32(0) if p is SINGLE else np.float64(0)
    den = _from_int(p, mantissa)
    while exp10 < 0:
        den = _div10(p, den)
        exp10 += 1
    while exp10 > 0:
        den = _mul10(p, den)
        exp10 -= 1
        if den[0] > 300:
            raise MbfOverflow()
    return pack(den, p)


def val(text: str):
    """VAL(text): the number at the start of the string (0 if none), single or double."""
    t = text.lstrip(" \t\n")
    if t[:2].upper() in ("&H", "&O") or t[:1] == "&":
        return _radix(t)
    mantissa, exp10, is_double, _, _ = parse_decimal(text)
    p = DOUBLE if is_double else SINGLE
    try:
        return from_decimal(mantissa, exp10, p)
    except MbfOverflow:
        return np.float32(SINGLE_MAX if mantissa > 0 else -SINGLE_MAX) if p is SINGLE else \
            np.float64(DOUBLE_MAX if mantissa > 0 else -DOUBLE_MAX)


def _radix(t: str):
    base, body = (16, t[2:]) if t[:2].upper() == "&H" else (8, t[2:] if t[:2].upper() == "&O" else t[1:])
    digits = ""
    for c in body:
        if c.upper() in "0123456789ABCDEF"[:base]:
            digits += c
        else:
            break
    n = int(digits, base) if digits else 0
    if n > 0xFFFF:
        raise MbfOverflow()
    return np.int16(n - 0x10000 if n > 0x7FFF else n)


def literal(text: str):
    """The value of a number written in a program: an int16 (GW-BASIC integer), a float32
    (single) or a float64 (double), typed as GW-BASIC types it."""
    if text[:1] == "&":
        return _radix(text)
    if text.endswith("%"):
        if not text[:-1].isdigit() or int(text[:-1]) > INT_MAX:
            raise MbfOverflow()
        return np.int16(int(text[:-1]))
    if text.isdigit() and int(text) <= INT_MAX:
        return np.int16(int(text))
    mantissa, exp10, is_double, _, _ = parse_decimal(text)
    return from_decimal(mantissa, exp10, DOUBLE if is_double else SINGLE)


# ----------------------------------------------------------------------------- conversions

def round_int(x) -> int:
    """A float rounded to an integer as GW-BASIC rounds (halves away from zero)."""
    f = float(x)
    return int(math.floor(abs(f) + 0.5)) * (1 if f >= 0 else -1)


def truncate_single(x: float):
    """A function result (computed in double precision) as PC-BASIC stores it in a single:
    the binary exponent is estimated as ``trunc(log2|x| - 23)`` and the scaled magnitude
    truncated, so below 2**23 the last mantissa bit is usually lost (``SQR(2)`` is
    1.4142134, one unit below the truncated value)."""
    if x == 0 or not math.isfinite(x):
        return np.float32(x)
    a = abs(x)
    e = int(math.log(a) / LN2 - 23)
    man = int(a * 2.0 ** -e)
    while man <= 0x7FFFFF:
        man <<= 1
        e -= 1
    while man > 0xFFFFFF:
        man >>= 1
        e += 1
    return np.float32(math.copysign(math.ldexp(man, e), x))


LN2 = math.log(2.0)
