"""How BASIC prints numbers, shared by the host (constants) and the kernels.

A number prints like C's ``% .7G`` followed by one space: a sign position (a space for
non-negative numbers, ``-`` otherwise), at most 7 significant digits, no trailing zeros,
no decimal point for whole numbers, and exponent form (``1.234568E+07``, ``1E-05``) when
the exponent is below -4 or above 6. Integers (``%`` variables) print like ``% d``.
Both backends format with exactly these printf specs, so output matches everywhere.
"""
from __future__ import annotations

import numpy as np

FLOAT_SPEC = "% .7G"
INT_SPEC = "% d"
ZONE = 14  # width of a PRINT zone (comma separator)


def format_float(v) -> str:
    """The text of a float32 number as PRINT shows it (without the trailing space)."""
    x = float(np.float32(v)) + 0.0  # +0.0 turns -0 into 0
    return FLOAT_SPEC % x


def format_int(v) -> str:
    return INT_SPEC % int(v)


def float_len_reference(values: np.ndarray) -> np.ndarray:
    """Width of ``% .7G`` for float32 values, computed arithmetically (mirrors the kernel code)."""
    x = np.asarray(values, dtype=np.float32).astype(np.float64)
    a = np.abs(x)
    finite = np.isfinite(a)
    safe = np.where(finite & (a > 0), a, 1.0)
    e = np.floor(np.log(safe) / np.log(10.0))
    p = np.power(10.0, e)
    e = np.where(safe >= p * 10, e + 1, np.where(safe < p, e - 1, e))
    raw = np.where(e >= 6, safe / np.power(10.0, np.maximum(e - 6, 0)), safe * np.power(10.0, np.maximum(6 - e, 0)))
    fl = np.floor(raw)
    diff = raw - fl
    n = np.where(diff > 0.5, fl + 1, np.where(diff < 0.5, fl, fl + np.mod(fl, 2.0)))  # ties to even, like printf
    bump = n >= 1e7
    e = np.where(bump, e + 1, e)
    n = np.where(bump, 1e6, n)
    tz = sum((np.mod(n, 10.0 ** k) == 0).astype(np.int64) for k in range(1, 7))
    fixed = (e >= -4) & (e < 7)
    frac_f = np.maximum(0, 6 - e - tz)
    int_d = np.where(e >= 0, e + 1, 1)
    len_f = 1 + int_d + np.where(frac_f > 0, frac_f + 1, 0)
    frac_e = 6 - tz
    len_e = 2 + np.where(frac_e > 0, frac_e + 1, 0) + 4
    out = np.where(fixed, len_f, len_e)
    out = np.where(a == 0, 2, out)
    out = np.where(finite, out, 4)
    return out.astype(np.int64)
