"""BASIC values while lowering: constants and tiles, conversions between GW-BASIC's types,
and the flattening of variables into the values control flow carries.

A number is a NumPy scalar (``np.int16`` integer, ``np.int32`` 32-bit integer, ``np.float32``
single, ``np.float64`` double, ``bool`` for a comparison) or a ``Tile`` of one of those
dtypes (tiles of the TILE extension may have others). A string is a ``StrVal``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import dtypes as dt
from ...ir.types import TileType
from ...ops import elementwise as ew
from ...ops import factories as fac
from ...ops import shape as shp
from ...ops.values import Tile, as_tile
from ..gwnumbers import SINGLE_MAX
from ..vtypes import BOOL, DBL, INT, LONG, SNG, STRING, STRING_CAPACITY
from ...frontend.common import MixinBase

CHARS = TileType(dt.uint8, (STRING_CAPACITY,))
LENGTH = TileType(LONG, ())
INT_MIN, INT_MAX = -32768, 32767


def is_tile(v) -> bool:
    return isinstance(v, Tile)


def dtype_of(v) -> dt.DType:
    if is_tile(v):
        return v.dtype
    if isinstance(v, (bool, np.bool_)):
        return BOOL
    return dt.as_dtype(np.asarray(v).dtype)


def const(value, d: dt.DType):
    """A NumPy scalar of dtype ``d`` (integers wrap, as safetile integers do)."""
    if d is BOOL:
        return bool(value)
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(d.np_dtype)[()]


def tconst(value, d: dt.DType) -> Tile:
    """A constant as a 0-d tile of dtype ``d`` (two NumPy scalars meeting in ``where`` would
    take the default types instead)."""
    return as_tile(const(value, d), d)


def round_half_away(f: float) -> int:
    return int(math.floor(abs(f) + 0.5)) * (1 if f >= 0 else -1)


class ValuesMixin(MixinBase):
    # ------------------------------------------------------------------ constants and zeros

    def zero(self, t):
        from .strings import StrVal
        if t is STRING:
            return StrVal.constant(b"")
        return const(0, t.dtype)

    def numeric(self, v):
        """A comparison used as a number: -1 (true) or 0 (false), an integer."""
        if is_tile(v):
            return ew.where(v, tconst(-1, INT), tconst(0, INT)) if v.dtype.is_bool else v
        if isinstance(v, (bool, np.bool_)):
            return const(-1 if v else 0, INT)
        return v

    def truth(self, v):
        """A number as a condition (non-zero is true)."""
        if is_tile(v):
            if v.shape != ():
                raise self.error("a condition must be a number, not a tile")
            return v if v.dtype.is_bool else ew.not_equal(v, const(0, v.dtype))
        return bool(self.numeric(v) != 0)

    def convert(self, v, d: dt.DType):
        """A number as dtype ``d`` without GW-BASIC's range checks (floats to integers truncate)."""
        v = self.numeric(v)
        if is_tile(v):
            return v if v.dtype is d else ew.astype(v, d)
        return const(v, d)

    def to_float(self, v, d: dt.DType = SNG):
        v = self.numeric(v)
        if dtype_of(v).is_float and d is SNG and dtype_of(v) is not DBL:
            return self.convert(v, SNG) if dtype_of(v) is not SNG else v
        return self.convert(v, d)

    # ------------------------------------------------------------------ integers

    def round_int(self, v, d: dt.DType = INT, check: bool = True):
        """GW-BASIC's conversion to an integer: halves away from zero; to a 16-bit integer out of
        -32768..32767 is *Overflow* (a hard error) unless ``check`` is off."""
        v = self.numeric(v)
        src = dtype_of(v)
        if not is_tile(v):
            if src.is_int:
                n = int(v)
            else:
                f = float(v)
                n = round_half_away(f) if math.isfinite(f) else INT_MAX + 1
            if d is INT and check and not INT_MIN <= n <= INT_MAX:
                self.runtime_error(False, "Overflow")
                n = 0
            return const(n, d)
        if src.is_int:
            if d is INT and src is not INT and check:
                self.runtime_error(ew.bitwise_and(ew.greater_equal(v, INT_MIN), ew.less_equal(v, INT_MAX)),
                                   "Overflow")
            return self.convert(v, d)
        a = ew.abs(v)
        f = ew.floor(a)
        r = ew.where(ew.greater_equal(ew.sub(a, f), 0.5), ew.add(f, 1.0), f)
        r = ew.where(ew.less(v, 0), ew.negative(r), r)
        if d is INT and check:
            ok = ew.bitwise_and(ew.greater_equal(r, float(INT_MIN)), ew.less_equal(r, float(INT_MAX)))
            self.runtime_error(ok, "Overflow")
            r = ew.where(ok, r, 0.0)
        elif d.is_int:
            info = np.iinfo(d.np_dtype)
            r = ew.minimum(ew.maximum(r, float(info.min)), float(info.max))
        return ew.astype(r, d)

    def to_index(self, v):
        """A subscript or tile index: rounded like GW-BASIC, as an int32 scalar."""
        v = self.numeric(v)
        if is_tile(v):
            if v.dtype.is_int:
                return v if v.dtype is LONG else ew.astype(v, LONG)
            shadow = self.int_shadow.get(v.value.id)
            if shadow is not None:
                return shadow
            src = v.value.owner
            if src is not None and src.name == "astype" and src.operands[0].type.dtype.is_int:
                inner = Tile(src.operands[0])
                return inner if inner.dtype is LONG else ew.astype(inner, LONG)
            if src is not None and src.name in ("floor", "ceil"):
                return ew.astype(v, LONG)  # already whole
            return self.round_int(v, LONG, check=False)
        f = float(v)
        if not math.isfinite(f):
            return np.int32(-1)
        return np.int32(max(-(2 ** 31), min(2 ** 31 - 1, round_half_away(f))))

    # ------------------------------------------------------------------ storage

    def to_type(self, v, t):
        """A value converted for a variable or array element of type ``t``."""
        if t is STRING:
            return v
        if t.dtype.is_bool:  # internal flags and masks
            return v if is_tile(v) and v.dtype.is_bool else self.truth(v)
        v = self.numeric(v)
        if t.dtype.is_int:
            v = self.round_int(v, t.dtype, check=t.dtype is INT)
        elif t.dtype is SNG and dtype_of(v) is DBL and not t.shape:
            v = self.double_to_single(v)
        elif dtype_of(v) is not t.dtype:
            v = self.convert(v, t.dtype)
        if is_tile(v) and v.shape != t.shape:
            v = shp.broadcast_to(v, t.shape)
        return v

    def double_to_single(self, v):
        """A double stored in a single: beyond the single range it is *Overflow* (a soft
        error) and the largest single, as in GW-BASIC."""
        if not is_tile(v):
            if abs(float(v)) > SINGLE_MAX:
                self.soft_error(True, "Overflow")
                return const(math.copysign(SINGLE_MAX, float(v)), SNG)
            return const(v, SNG)
        bad = ew.greater(ew.abs(v), SINGLE_MAX)
        self.soft_error(bad, "Overflow")
        big = ew.where(ew.less(v, 0.0), np.float32(-SINGLE_MAX), np.float32(SINGLE_MAX))
        return ew.where(bad, big, ew.astype(v, SNG))

    def materialize(self, v, t) -> Tile:
        v = self.to_type(v, t)
        if is_tile(v):
            return v
        if t.shape:
            return fac.full(t.shape, v, t.dtype)
        return as_tile(v, t.dtype)

    def mark_set(self, name: str) -> None:
        """Note that a variable SWAP takes second now has a value (else SWAP fails)."""
        if name in self.an.swap_checked:
            self.env[f"$set:{name}"] = True

    def assign(self, name: str, v) -> None:
        t = self.types[name]
        v = self.to_type(v, t)
        self.env[name] = v
        self.mark_set(name)
        if is_tile(v) and t is not STRING and v.shape == () and v.dtype.is_float and name in self.index_vars:
            # a float variable used in subscripts: convert it once, where it is defined, rather
            # than at every use inside loops (unused conversions are removed after lowering)
            self.int_shadow[v.value.id] = self.to_index(v)

    # ------------------------------------------------------------------ control flow carries

    def carried_types(self, t) -> list[TileType]:
        """The IR types a variable of type ``t`` is carried as (a string: bytes and length)."""
        return [CHARS, LENGTH] if t is STRING else [t]

    def split(self, v, t) -> list[Tile]:
        if t is STRING:
            chars, length = self.string_tiles(v)
            return [chars, length]
        return [self.materialize(v, t)]

    def join(self, t, tiles: list[Tile]) -> Any:
        from .strings import StrVal
        if t is STRING:
            return StrVal(tiles[0], tiles[1])
        return tiles[0]


def same(a, b) -> bool:
    """Whether two values are certainly equal (the same tile, or equal constants of one type)."""
    from .strings import StrVal
    if a is b:
        return True
    if isinstance(a, StrVal) and isinstance(b, StrVal):
        return a.data is not None and a.data == b.data or (
            a.chars is b.chars and a.chars is not None and a.length is b.length)
    if is_tile(a) or is_tile(b) or isinstance(a, StrVal) or isinstance(b, StrVal):
        return False
    return type(a) is type(b) and bool(a == b)
