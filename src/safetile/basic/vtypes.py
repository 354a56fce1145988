"""The types of BASIC values.

Numbers are ``TileType``s (shape ``()`` for scalars): GW-BASIC's integers (``%``) are int16,
singles float32, doubles float64; safetile's extensions add int32 (BID, INPUT scalars,
integer kernel arrays) and tiles of any element type. Strings have the one type ``STRING``.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..ir.types import TileType

INT, LONG, SNG, DBL, BOOL = dt.int16, dt.int32, dt.float32, dt.float64, dt.bool_
SIGIL_DTYPES = {"%": INT, "!": SNG, "#": DBL}
STRING_CAPACITY = 256  # bytes of a string tile: up to 255 characters, GW-BASIC's limit
MAX_STRING = STRING_CAPACITY - 1


class StringType:
    """The type of string values (a 256-byte tile and a length)."""
    shape: tuple = ()
    ndim = 0

    def __repr__(self) -> str:
        return "STRING"


STRING = StringType()
BasicType = TileType | StringType


def scalar(d: dt.DType) -> TileType:
    return TileType(d, ())


def is_string(t) -> bool:
    return t is STRING


def numeric_kind(d: dt.DType) -> dt.DType:
    """The GW-BASIC arithmetic class of a dtype: int16, int32, float32 or float64."""
    if d.is_bool:
        return INT
    if d.is_int:
        return INT if d.bits <= 16 else LONG
    return DBL if d is DBL else SNG


def arith_dtype(a: dt.DType, b: dt.DType, op: str) -> dt.DType:
    """The result dtype of ``a op b`` for + - * / ^ (GW-BASIC: integers become singles, except
    safetile's 32-bit integers, which stay exact under + - *; ``^`` always gives a single)."""
    ka, kb = numeric_kind(a), numeric_kind(b)
    if a.is_float and b.is_float and not (a in (SNG, DBL) and b in (SNG, DBL)):
        return dt.promote(a, b)  # tiles of half/bfloat16 keep their promotion rules
    if op == "^":
        return SNG
    if DBL in (ka, kb):
        return DBL
    if op in ("+", "-", "*") and {ka, kb} <= {INT, LONG} and LONG in (ka, kb):
        return LONG
    if a.is_float and not b.is_float:
        return a if a is not DBL else DBL
    if b.is_float and not a.is_float:
        return b
    return SNG


def int_dtype(a: dt.DType, b: dt.DType | None = None) -> dt.DType:
    """The result dtype of \\ MOD AND OR XOR EQV IMP NOT: int16, or int32 with a 32-bit operand."""
    kinds = {numeric_kind(a)} | ({numeric_kind(b)} if b is not None else set())
    return LONG if LONG in kinds else INT
